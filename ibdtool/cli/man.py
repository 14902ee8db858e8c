"""``ibdtool man``: the manual page, ibdtool(1), shipped beside this module.

The page is built by ``scripts/gen_man.py`` from the README's opening, the pages of ``docs/``
and every command's ``--help`` (one source for all three); ``tests/test_man_page.py`` keeps the
committed ``ibdtool.1`` equal to a fresh build. On a terminal it is shown through ``man -l``;
otherwise its roff source is printed, so ``ibdtool man > ibdtool.1`` keeps a copy.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from importlib import resources

import click

from ibdtool.errors import InputError

#: the page, as package data of ibdtool.cli (pyproject's package-data)
PAGE = "ibdtool.1"


def page_text() -> str:
    """The roff source of ibdtool(1)."""
    try:
        return (resources.files("ibdtool.cli") / PAGE).read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise InputError(f"the manual page {PAGE} is not installed") from exc


@click.command()
def man() -> None:
    """Show the manual page, ibdtool(1): the reference of docs/ and every command's help.

    On a terminal it opens in man; otherwise the roff source is printed (ibdtool man >
    ibdtool.1 keeps a copy, ibdtool man | man -l - shows it).
    """
    text = page_text()
    viewer = shutil.which("man")
    if sys.stdout.isatty() and viewer is not None:
        subprocess.run([viewer, "-l", "-"], input=text, text=True, check=False)
        return
    click.echo(text, nl=False)
