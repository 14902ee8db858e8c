"""The ibdtool Textual app and its factory, shared by ``ibdtool tui`` and the tests.

:func:`create_app` turns a path into an app: a directory opens the browser on it; a file opens
the browser on its folder with the file's tablespace view on top (``escape`` goes back to the
folder); connection options open the server view on a live server's tables. Keys that work on
every screen live here: ``?`` help, ``@`` command log, ``q`` quit, ``escape`` back, and
``ctrl+p`` the command palette, which also lists the current screen's own commands (each
screen's ``commands()``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import ClassVar

from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen

from ibdtool.errors import InputError
from ibdtool.fs import open_regular
from ibdtool.parsers.keyring import Keyring
from ibdtool.parsers.tabledef import TableDef
from ibdtool.server import ConnectionOptions
from ibdtool.tablespace import Schemas
from ibdtool.tui.commandlog import CommandLog, LogEntry
from ibdtool.tui.messages import LogAdded
from ibdtool.tui.screens.browser import BrowserScreen
from ibdtool.tui.screens.commandlog import CommandLogScreen
from ibdtool.tui.screens.help import HelpScreen
from ibdtool.tui.screens.tablespace import TablespaceScreen

#: the longest the UI thread waits for the GIL while a scan thread holds it, so keys stay
#: under 100 ms (Python's default is 5 ms, and one key takes several turns of the event
#: loop). A switch is forced only when a thread waits, so a scan pays nothing otherwise —
#: where a ``time.sleep(0)`` every few pages made it give up its core to every other process
#: of a loaded machine (~1 ms each: 11 s of an 89,000-page scan at load average 5).
GIL_SWITCH_INTERVAL = 0.0005


class IbdtoolApp(App[None]):
    """Browser → tablespace → page, with simulation, help and the command log on top."""

    CSS_PATH = "app.tcss"
    TITLE = "ibdtool"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide"), (160, "-very-wide")]  # noqa: RUF012
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit", show=False),
        Binding("question_mark", "help", "Help"),
        Binding("at", "command_log", "Log"),
        Binding("escape", "go_back", "Back", show=False),
    ]

    def __init__(
        self,
        root: Path,
        open_file: Path | None = None,
        server: tuple[ConnectionOptions, str | None] | None = None,
        keyring: Keyring | None = None,
        schemas: Schemas | None = None,
    ) -> None:
        """``server``: connection options and ``--datadir``; the app then opens on the
        server's tables instead of a directory. ``keyring`` opens encrypted tablespaces;
        ``schemas`` (``--schema``) name the indexes of files without an SDI or a .cfg."""
        super().__init__()
        self.keyring = keyring
        self.schemas = schemas
        self.root = root
        self.open_file = open_file
        self.server = server
        self.command_log = CommandLog()
        #: the first unhandled exception; ``ibdtool tui`` reports it in one line
        self.crash: BaseException | None = None
        #: Textual's full traceback screen on a crash instead (``ibdtool --traceback tui``)
        self.show_traceback = False
        self._switch_interval = sys.getswitchinterval()

    def on_mount(self) -> None:
        sys.setswitchinterval(GIL_SWITCH_INTERVAL)

        def tell(entry: LogEntry) -> None:
            self.post_message(LogAdded(entry))

        self.command_log.listener = tell
        if self.server is not None:
            from ibdtool.tui.screens.server import ServerScreen

            self.push_screen(ServerScreen(*self.server))
            return
        lazy = self.open_file is not None
        self.push_screen(BrowserScreen(self.root, select=self.open_file, lazy=lazy))
        if self.open_file is not None:
            self.push_screen(TablespaceScreen(self.open_file))

    def on_unmount(self) -> None:
        sys.setswitchinterval(self._switch_interval)

    def schema_for(self, path: Path) -> TableDef | None:
        """The ``--schema`` definition of the table in ``path`` (the one file the app was
        opened on takes the only statement given, whatever its name)."""
        if self.schemas is None:
            return None
        return self.schemas.for_file(path, single=path == self.open_file)

    # --- a crash: exit status 1 and one line, not a screenful ------------------------------

    def _handle_exception(self, error: Exception) -> None:
        if self.crash is None:
            self.crash = error
        super()._handle_exception(error)

    def _fatal_error(self) -> None:
        if self.show_traceback:
            super()._fatal_error()
        else:
            self._close_messages_no_wait()

    def crash_message(self) -> str:
        """One line naming the crash (for the exit message)."""
        error = self.crash
        if error is None:
            return f"the terminal UI failed (status {self.return_code})"
        text = str(error).splitlines()[0] if str(error) else ""
        return f"the terminal UI crashed: {type(error).__name__}" + (f": {text}" if text else "")

    def on_log_added(self, message: LogAdded) -> None:
        if isinstance(self.screen, CommandLogScreen):
            self.screen.add_entry(message.entry)

    # --- keys that work everywhere ---------------------------------------------------------

    def action_go_back(self) -> None:
        screen = self.screen
        if isinstance(screen, BrowserScreen):
            if screen.filter_text:
                screen.action_clear_filter()
            return
        if len(self.screen_stack) > 2:
            self.pop_screen()

    def action_command_log(self) -> None:
        if isinstance(self.screen, CommandLogScreen):
            self.pop_screen()
        else:
            self.push_screen(CommandLogScreen())

    def action_help(self) -> None:
        screen = self.screen
        if isinstance(screen, HelpScreen):
            return
        self.push_screen(HelpScreen(screen.sub_title or "", screen.HELP or "", help_rows(screen)))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Help", "Every key of this view", self.action_help)
        yield SystemCommand("Command log", "What the app ran, with timing", self.action_command_log)
        commands = getattr(screen, "commands", None)
        if commands is not None:
            yield from commands()


def help_rows(screen: Screen) -> list[tuple[str, str, str]]:
    """(keys, description, where) for every active binding, keys of one action merged: the
    view's own first, then the focused widget's, then those that work everywhere."""
    app = screen.app
    merged: dict[tuple[int, str], list[str]] = {}
    meta: dict[tuple[int, str], tuple[str, str, int]] = {}
    own = {b.action for b in type(screen).BINDINGS if isinstance(b, Binding)}
    for ab in screen.active_bindings.values():
        binding = ab.binding
        if binding.system and binding.action not in ("command_palette", "quit"):
            continue
        node = ab.node
        if node is app:
            where, rank = "everywhere", 3
        elif node is screen:
            # the view's own keys first; those every Textual screen has (tab…) after
            where, rank = "this view", 0 if binding.action in own else 2
        else:
            where, rank = getattr(node, "HELP_NAME", type(node).__name__.lower()), 1
        key = (id(node), binding.action)
        merged.setdefault(key, []).append(app.get_key_display(binding))
        meta[key] = (binding.description or binding.action, where, rank)
    rows = sorted(merged, key=lambda k: meta[k][2])
    return [(" ".join(dict.fromkeys(merged[k])), meta[k][0], meta[k][1]) for k in rows]


def create_app(
    path: str | os.PathLike[str] = ".",
    server: tuple[ConnectionOptions, str | None] | None = None,
    keyring: Keyring | None = None,
    schemas: Schemas | None = None,
) -> IbdtoolApp:
    """The app for a data directory, a folder of tablespaces, or one tablespace file; or,
    with ``server`` (connection options and ``--datadir``), for a live server's tables."""
    if server is not None:
        return IbdtoolApp(Path(path), server=server, keyring=keyring, schemas=schemas)
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such file or directory")
    if p.is_dir():
        return IbdtoolApp(p, keyring=keyring, schemas=schemas)
    fd, _ = open_regular(p)  # a FIFO, socket or device: one line, before the screen is taken
    os.close(fd)
    return IbdtoolApp(p.parent, open_file=p, keyring=keyring, schemas=schemas)
