"""Pick what to convert a table to: the page codecs this server has, ROW_FORMAT=COMPRESSED
key block sizes, or no compression. Answers with a target text for
:func:`ibdtool.server.parse_target` (``page:lz4``, ``row:8``, ``none``), or None."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from ibdtool.server import Server, TableInfo
from ibdtool.tui.shown import safe

KEY_BLOCK_SIZES = (8, 4, 16, 2, 1)


def targets_for(server: Server) -> list[tuple[str, str, bool]]:
    """(target, description, available) in the order offered."""
    out: list[tuple[str, str, bool]] = []
    for codec in server.flavor.page_codecs:
        have = server.has_codec(codec)
        why = "page compression" if have else "page compression: codec not loaded"
        out.append((f"page:{codec}", why, have))
    for kbs in KEY_BLOCK_SIZES:
        out.append((f"row:{kbs}", f"ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE={kbs}", True))
    out.append(("none", "no compression", True))
    return out


class TargetScreen(ModalScreen[str | None]):
    """An option list of targets; ``enter`` picks, ``escape`` cancels."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, server: Server, table: TableInfo) -> None:
        super().__init__()
        self.server = server
        self.table = table

    def compose(self) -> ComposeResult:
        current = self.table.current_format(self.server.flavor.name)
        with Vertical(id="targets"):
            yield Label(
                safe(Text.assemble(("Convert ", ""), (self.table.name, "bold"), f" ({current}) to"))
            )
            options = []
            for target, description, available in targets_for(self.server):
                label = safe(f"{target:<10}", style="bold" if available else "dim")
                label.append(f" {description}", style="dim")
                if target == current:
                    label.append("  (current)", style="cyan")
                options.append(Option(label, id=target, disabled=not available))
            yield OptionList(*options, id="target-list")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
