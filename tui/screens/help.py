"""The help screen (``?``): every binding of the view it was opened from, and what it shows."""

from __future__ import annotations

from typing import ClassVar

from rich.console import Group
from rich.markdown import Markdown
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


class HelpScreen(ModalScreen[None]):
    """A scrollable list of keys: the view's own, then those that work everywhere."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "close", "Close"),
    ]

    def __init__(self, title: str, about: str, keys: list[tuple[str, str, str]]) -> None:
        """``keys``: (key, description, where) rows, in the order to show them."""
        super().__init__()
        self.title_text = title
        self.about = about
        self.keys = keys

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(Markdown(self.about or f"## {self.title_text}"), id="help-about")
            yield Static(self._table(), id="help-keys")

    def _table(self) -> Group:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold cyan", no_wrap=True, justify="right")
        table.add_column()
        table.add_column(style="dim")
        for key, description, where in self.keys:
            table.add_row(key, description, where)
        return Group(Text("Keys", style="bold underline"), table)

    def action_close(self) -> None:
        self.dismiss(None)
