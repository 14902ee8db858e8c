"""What the screens use of the app: the command log, the keyring, the ``--schema`` tables.

A :class:`~typing.Protocol` that :class:`ibdtool.tui.app.IbdtoolApp` satisfies, so that a screen can
name what it needs of the app without importing the app, which imports the screens.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ibdtool.parsers.keyring import Keyring
    from ibdtool.parsers.tabledef import TableDef
    from ibdtool.tui.commandlog import CommandLog


class AppState(Protocol):
    """The app as a screen sees it (``screen.app``, typed)."""

    #: every file operation and SQL statement the app ran (``@``)
    command_log: CommandLog
    #: opens encrypted tablespaces (``--keyring``)
    keyring: Keyring | None

    def schema_for(self, path: Path) -> TableDef | None:
        """The ``--schema`` definition of the table in ``path``, if one was given."""
        ...
