"""Plain-text output for commands whose start-up time matters (no Rich import).

``ibdtool pages`` streams its rows from here too (text, JSON lines, CSV).

``ibdtool checksum`` verifies a 1 GB file in a fraction of a second; importing Rich alone costs
~25 ms, so its one line per file is written with click, coloured only on a terminal and never
when ``NO_COLOR`` is set.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import click

from ibdtool.present import shown

if TYPE_CHECKING:
    from ibdtool.tablespace import CheckResult


def _color() -> bool:
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def checksum_json(r: CheckResult) -> dict[str, object]:
    """``checksum --json`` for one file: counts, the invalid pages, pages by algorithm."""
    return {
        "path": r.path,
        "pages": r.pages,
        "verified": r.pages - r.unverifiable,
        "valid": r.valid,
        "empty": r.empty,
        "invalid": len(r.invalid_pages),
        "unverifiable": r.unverifiable,
        "invalid_pages": list(r.invalid_pages),
        "by_algorithm": dict(sorted(r.by_algorithm.items())),
        "trailing_bytes": r.trailing_bytes,
    }


def print_checksum(r: CheckResult) -> None:
    color = _color()
    by = ", ".join(f"{k} {v}" for k, v in sorted(r.by_algorithm.items(), key=lambda kv: -kv[1]))
    status = "OK" if not r.invalid_pages else "FAILED"
    if color:
        status = click.style(status, fg="green" if not r.invalid_pages else "red", bold=True)
    line = (
        f"{shown(r.path)}: {status} {r.pages} pages: {r.valid} valid, {r.empty} empty, "
        f"{len(r.invalid_pages)} invalid"
        + (f", {r.unverifiable} unverifiable" if r.unverifiable else "")
        + (f" ({by})" if by else "")
    )
    click.echo(line, color=color)
    if r.invalid_pages:
        listed = ", ".join(map(str, r.invalid_pages[:50]))
        more = f" … and {len(r.invalid_pages) - 50} more" if len(r.invalid_pages) > 50 else ""
        click.echo(click.style(f"  invalid pages: {listed}{more}", fg="red") if color else
                   f"  invalid pages: {listed}{more}", color=color)  # fmt: skip


def write_rows(rows: Iterable[dict[str, Any]], fmt: str, wide: bool = False) -> None:
    """Stream rows to stdout as aligned text, JSON lines or CSV (``ibdtool pages``: a line a
    page, so JSON lines go out a thousand at a time through one reused encoder).

    Text keeps the columns that fit the terminal (by :data:`PAGE_PRIORITY`; ``wide`` keeps
    all) and ends with a line naming the ones it hid."""
    from ibdtool.cli.fit import table_width

    w = sys.stdout.write
    writer: Any = None
    if fmt == "json":
        import json  # not at import: ``checksum`` writes text (issue 24, start-up)

        encode = json.JSONEncoder().encode
        batch: list[str] = []
        try:
            for row in rows:
                batch.append(encode(row))
                if len(batch) >= 1000:
                    w("\n".join(batch) + "\n")
                    batch.clear()
        finally:  # the rows before an error are out, as unbatched
            if batch:
                w("\n".join(batch) + "\n")
        return
    columns = page_columns(None if wide else table_width())
    for row in rows:
        if fmt == "csv":
            if writer is None:
                import csv  # pages --csv only: checksum's verdict does not need it

                writer = csv.DictWriter(sys.stdout, fieldnames=list(row))
                writer.writeheader()
            writer.writerow({k: shown(v) if isinstance(v, str) else v for k, v in row.items()})
        else:
            if writer is None:
                writer = True
                w(_text_line(row, columns, header=True))
            w(_text_line(row, columns))
    hidden = [name for name, _w in _TEXT_COLUMNS if (name, _w) not in columns]
    if fmt == "text" and hidden:
        import textwrap

        footer = f"hidden: {', '.join(hidden)} — use --wide"
        lines = textwrap.wrap(footer, table_width() or len(footer), break_on_hyphens=False)
        w("\n".join(lines) + "\n")


_TEXT_COLUMNS = (
    ("page", 7),
    ("type", 16),
    ("compression", 11),
    ("compressed_size", 15),
    ("stored_size", 11),
    ("allocated", 9),
    ("checksum", 15),
    ("lsn", 12),
    ("index_id", 9),
    ("index", 20),
    ("level", 5),
    ("n_recs", 6),
    ("fill", 5),
    ("problem", 0),
)
#: which page columns a narrow terminal drops first (the last ones here)
PAGE_PRIORITY = (
    "page", "type", "problem", "compression", "allocated", "checksum", "stored_size",
    "compressed_size", "n_recs", "index_id", "level", "fill", "lsn",
)  # fmt: skip


def page_columns(width: int | None) -> list[tuple[str, int]]:
    """The page columns that fit ``width`` cells (all when None), in their usual order."""
    keep = list(_TEXT_COLUMNS)
    drop = [c for name in reversed(PAGE_PRIORITY) for c in keep if c[0] == name]
    while width is not None and sum(max(w, len(n)) + 1 for n, w in keep) - 1 > width:
        if len(drop) <= 2:
            break
        keep.remove(drop.pop(0))
    return keep


def _text_line(row: dict[str, Any], columns: list[tuple[str, int]], header: bool = False) -> str:
    cells = []
    for name, width in columns:
        value = name.upper() if header else row.get(name)
        text = "" if value is None else shown(value)
        if name == "checksum" and not header and row.get("valid") is False:
            text = "INVALID"
        left = name in ("type", "index")
        cells.append(text.rjust(width) if width and not left else text.ljust(width))
    return " ".join(cells).rstrip() + "\n"
