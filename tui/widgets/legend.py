"""The page map's legend: each category of the current colouring, its colour and page count."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from ibdtool.present import shown
from ibdtool.tui.pagemodel import MODE_TITLES, Category, Mode


class Legend(Static):
    """``█ INDEX 24 (83%) · █ SDI 1 …`` for the colouring shown."""

    def show(self, mode: Mode, counts: list[tuple[Category, int]], total: int) -> None:
        text = Text()
        text.append(f"{MODE_TITLES[mode]}: ", style="bold")
        for i, (cat, n) in enumerate(counts):
            if i:
                text.append("  ")
            text.append(cat.glyph, style=cat.color)
            text.append(shown(f" {cat.label} "))
            pct = f" {100 * n / total:.0f}%" if total else ""
            text.append(f"{n:,}{pct}", style="dim")
        self.update(text)
