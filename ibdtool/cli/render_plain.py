"""Plain-text output for commands whose start-up time matters (no Rich import).

``ibdtool checksum`` verifies a 1 GB file in a fraction of a second; importing Rich alone costs
~25 ms, so its one line per file is written with click, coloured only on a terminal and never
when ``NO_COLOR`` is set.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from ibdtool.checkscan import CheckResult


def _color() -> bool:
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def print_checksum(r: CheckResult) -> None:
    color = _color()
    by = ", ".join(f"{k} {v}" for k, v in sorted(r.by_algorithm.items(), key=lambda kv: -kv[1]))
    status = "OK" if not r.invalid_pages else "FAILED"
    if color:
        status = click.style(status, fg="green" if not r.invalid_pages else "red", bold=True)
    line = (
        f"{r.path}: {status} {r.pages} pages: {r.valid} valid, {r.empty} empty, "
        f"{len(r.invalid_pages)} invalid"
        + (f", {r.unverifiable} unverifiable" if r.unverifiable else "")
        + (f" ({by})" if by else "")
    )
    click.echo(line, color=color)
    if r.invalid_pages:
        shown = ", ".join(map(str, r.invalid_pages[:50]))
        more = f" … and {len(r.invalid_pages) - 50} more" if len(r.invalid_pages) > 50 else ""
        click.echo(click.style(f"  invalid pages: {shown}{more}", fg="red") if color else
                   f"  invalid pages: {shown}{more}", color=color)  # fmt: skip
