"""Hex dumps of a page's stored image and of its decoded page, side by side, coloured by region.

The regions come from :mod:`ibdtool.parsers.pages` (FIL header, compression metadata, payload,
padding, index header, records, directory…). Both dumps scroll together because they are one
line-API widget; when the two images are the same bytes (an uncompressed page) one dump is
shown, twice as wide. Bytes per line adapt to the width (a power of two, 4 to 32).
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ibdtool.parsers.pages import REGION_NAMES, Region

#: the style of padding: every segment needs one (Textual's NO_COLOR filter reads
#: ``style.color`` of each), and an empty one draws like none
PLAIN = Style()

REGION_COLORS = {
    "fil_header": "#56b6c2",
    "compression": "#c678dd",
    "payload": "#e5c07b",
    "padding": "#5c6370",
    "trailer": "#56b6c2",
    "index_header": "#98c379",
    "fseg": "#8fbcbb",
    "records": "#d0d0d0",
    "free": "#5c6370",
    "directory": "#61afef",
    "fsp_header": "#98c379",
    "xdes": "#d7a35f",
    "inode": "#d787af",
    "lob_header": "#98c379",
    "data": "#d0d0d0",
}
DEFAULT_COLOR = "#d0d0d0"
OFFSET_STYLE = Style(color="#808080")
SEPARATOR = " │ "


def region_legend(names: set[str]) -> Text:
    """``■ fil_header ■ payload …`` for the regions present."""
    text = Text()
    for name in REGION_NAMES:
        if name in names:
            if text:
                text.append("  ")
            text.append("■ ", style=REGION_COLORS[name]).append(name.replace("_", " "))
    return text


def _colors(size: int, regions: tuple[Region, ...]) -> list[str]:
    out = [DEFAULT_COLOR] * size
    for r in regions:
        color = REGION_COLORS.get(r.name, DEFAULT_COLOR)
        out[r.start : r.end] = [color] * (min(r.end, size) - r.start)
    return out


class HexDump(ScrollView, can_focus=True):
    """Stored and decoded images of one page (see module doc)."""

    HELP_NAME = "hex dump"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.images: list[tuple[bytes, list[str]]] = []
        self.titles: list[str] = []
        self.per_line = 16
        self._styles: dict[tuple[str, bool], Style] = {}

    def show(
        self,
        stored: bytes,
        stored_regions: tuple[Region, ...],
        logical: bytes,
        logical_regions: tuple[Region, ...],
    ) -> None:
        if stored == logical:
            self.images = [(stored, _colors(len(stored), logical_regions or stored_regions))]
            self.titles = [f"stored = decoded ({len(stored)} bytes)"]
        else:
            self.images = [
                (stored, _colors(len(stored), stored_regions)),
                (logical, _colors(len(logical), logical_regions)),
            ]
            self.titles = [f"stored ({len(stored)} bytes)", f"decoded ({len(logical)} bytes)"]
        self._relayout()
        self.scroll_to(y=0, animate=False)

    def _side_width(self, per_line: int) -> int:
        return 5 + 3 * per_line + per_line

    def _relayout(self) -> None:
        width = self.scrollable_content_region.width or self.size.width or 80
        sides = max(1, len(self.images))
        per_line = 4
        while per_line < 32:
            nxt = per_line * 2
            if sides * self._side_width(nxt) + (sides - 1) * len(SEPARATOR) > width:
                break
            per_line = nxt
        self.per_line = per_line
        longest = max((len(img) for img, _ in self.images), default=0)
        rows = 1 + -(-longest // per_line)
        total_width = sides * self._side_width(per_line) + (sides - 1) * len(SEPARATOR)
        self.virtual_size = Size(total_width, rows)
        self.refresh()

    def on_resize(self, event: events.Resize) -> None:
        self._relayout()

    def _style(self, color: str, zero: bool) -> Style:
        key = (color, zero)
        style = self._styles.get(key)
        if style is None:
            style = self._styles[key] = Style(color=color, dim=zero)
        return style

    def _side(self, image: bytes, colors: list[str], offset: int) -> list[Segment]:
        n = self.per_line
        chunk = image[offset : offset + n]
        if not chunk:
            return [Segment(" " * self._side_width(n), PLAIN)]
        segs = [Segment(f"{offset:04x} ", OFFSET_STYLE)]
        for i in range(n):
            if i < len(chunk):
                b = chunk[i]
                segs.append(Segment(f"{b:02x} ", self._style(colors[offset + i], b == 0)))
            else:
                segs.append(Segment("   ", PLAIN))
        for i in range(n):
            if i < len(chunk):
                b = chunk[i]
                ch = chr(b) if 32 <= b < 127 else "."
                segs.append(Segment(ch, self._style(colors[offset + i], b == 0)))
            else:
                segs.append(Segment(" ", PLAIN))
        return segs

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        if not self.images:
            return Strip.blank(width, PLAIN)
        side = self._side_width(self.per_line)
        segments: list[Segment] = []
        if y == 0:  # the titles stay put while the bytes scroll under them
            for i, title in enumerate(self.titles):
                if i:
                    segments.append(Segment(SEPARATOR, OFFSET_STYLE))
                segments.append(Segment(title[:side].ljust(side), Style(bold=True)))
        else:
            offset = (y - 1 + scroll_y) * self.per_line
            for i, (image, colors) in enumerate(self.images):
                if i:
                    segments.append(Segment(SEPARATOR, OFFSET_STYLE))
                segments.extend(self._side(image, colors, offset))
        strip = Strip(segments).simplify()
        return strip.crop(scroll_x, scroll_x + width).extend_cell_length(width, PLAIN)
