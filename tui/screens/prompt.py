"""A one-line prompt at the bottom (vim's and k9s's ``:`` and ``/``): returns the text, or None."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class PromptScreen(ModalScreen[str | None]):
    """``enter`` answers with the text, ``escape`` with None."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, sigil: str, placeholder: str = "", value: str = "") -> None:
        super().__init__()
        self.sigil = sigil
        self.placeholder = placeholder
        self.value = value

    def compose(self) -> ComposeResult:
        with Horizontal(id="prompt"):
            yield Label(self.sigil, id="prompt-sigil")
            yield Input(self.value, placeholder=self.placeholder, id="prompt-input")

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
