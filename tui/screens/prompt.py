"""A one-line prompt at the bottom (vim's and k9s's ``:`` and ``/``): returns the text, or None."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import ModalScreen, Screen
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


def parse_page_number(text: str) -> int | None:
    """``1234``, ``1,234``, ``1_234``, ``0x4d2``; None if it is no number."""
    cleaned = text.strip().replace(",", "").replace("_", "")
    for base in (10, 0):
        try:
            return int(cleaned, base)
        except ValueError:
            continue
    return None


def ask_page(screen: Screen[Any], n_pages: int, go: Callable[[int], None]) -> None:
    """``:`` (k9s, vim): ask for a page number; ``go`` gets a valid one, else a warning shows."""

    def answer(value: str | None) -> None:
        if value is None:
            return
        page = parse_page_number(value)
        if page is None:
            screen.notify(f"not a page number: {value!r}", severity="warning", markup=False)
        elif not 0 <= page < n_pages:
            screen.notify(f"page {page} is out of range 0..{n_pages - 1}", severity="warning")
        else:
            go(page)

    screen.app.push_screen(PromptScreen(":", "page number"), answer)
