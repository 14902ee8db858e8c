"""``ibdtool tui [PATH]`` and ``ibdtool tui --server …``: the terminal UI (Textual).

The app is imported only when this command runs. ``--server`` takes the connection options of
``ibdtool server`` (a password is asked for here, before the screen is taken over).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from ibdtool.cli.keyring_option import keyring_options
from ibdtool.cli.schema_option import schema_options
from ibdtool.cli.server import (
    CLIENT_CONTEXT,
    ClientCommand,
    connection_options,
    resolve_connection,
)
from ibdtool.errors import IbdtoolError
from ibdtool.parsers.keyring import Keyring

if TYPE_CHECKING:
    from ibdtool.tablespace import Schemas


@click.command(cls=ClientCommand, context_settings=CLIENT_CONTEXT)
@click.argument("path", default=".", type=click.Path(readable=False))
@click.option(
    "--server",
    "use_server",
    is_flag=True,
    help="Open a live server's tables (with the connection options below) instead of PATH.",
)
@connection_options
@keyring_options
@schema_options
def tui(
    path: str, use_server: bool, keyring: Keyring | None, schemas: Schemas | None, **kw: Any
) -> None:
    """Browse a data directory, a tablespace's page map, a page's bytes; simulate; convert.

    PATH is a data directory, any folder of tablespaces, or one tablespace file (default: the
    current directory). With --server, the tables of a live MariaDB/MySQL server, and
    conversions with a plan, preflight and live progress.
    """
    from ibdtool.tui.app import create_app

    server = resolve_connection(kw) if use_server else None
    app = create_app(path, server=server, keyring=keyring, schemas=schemas)
    app.show_traceback = bool(click.get_current_context().find_root().params.get("traceback"))
    app.run()
    if app.return_code:
        raise IbdtoolError(app.crash_message())
