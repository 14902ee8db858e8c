"""``ibdtool tui [PATH]``: the terminal UI (Textual), imported only when this command runs."""

from __future__ import annotations

import click


@click.command()
@click.argument("path", default=".", type=click.Path(readable=False))
def tui(path: str) -> None:
    """Browse a data directory, a tablespace's page map, a page's bytes, and simulate.

    PATH is a data directory, any folder of tablespaces, or one tablespace file (default: the
    current directory).
    """
    from tui.app import create_app

    create_app(path).run()
