"""The page map: one cell per page (or per group of pages), coloured by the chosen colouring.

Like innodb_ruby's ``space-extents-illustrate``, but drawn with Textual's line API so a 10 GB
file's map scrolls without building a widget per cell. A row holds a power of two of cells, so
at one page a cell and 64 cells a row each row is one extent of 16K pages. ``+``/``-`` zoom by
powers of two; a zoomed-out cell shows the most common category of its pages, drawn ``▓`` when
the pages differ. The cursor moves over cells; ``enter`` opens the page under it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ibdtool.tui.pagemodel import MIXED_GLYPH, UNSCANNED, Category, Mode, PageMapModel

#: the style of padding: every segment needs one (Textual's NO_COLOR filter reads
#: ``style.color`` of each), and an empty one draws like none
PLAIN = Style()

MIN_COLUMNS = 8
FIT_SHARE = 0.6  # "fit" zooms out until the map fits in this share of the screen's height


def _columns(avail: int) -> int:
    """The largest power of two of cells that fits ``avail`` (at least :data:`MIN_COLUMNS`)."""
    cols = MIN_COLUMNS
    while cols * 2 <= avail:
        cols *= 2
    return cols


class PageMap(ScrollView, can_focus=True, inherit_bindings=False):
    """Cells for the pages of a :class:`PageMapModel` (see module doc)."""

    HELP_NAME = "page map"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left,h", "move(-1, 0)", "Left", show=False),
        Binding("right,l", "move(1, 0)", "Right", show=False),
        Binding("up,k", "move(0, -1)", "Up", show=False),
        Binding("down,j", "move(0, 1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home,g", "edge(0)", "First page", show=False),
        Binding("end,G", "edge(1)", "Last page", show=False),
        Binding("enter", "select", "Open"),
        Binding("plus,equals_sign", "zoom(-1)", "Zoom", key_display="+/-"),
        Binding("minus", "zoom(1)", "Zoom out", show=False),
        Binding("0", "fit", "Fit", show=False),
    ]

    @dataclass
    class CursorMoved(Message):
        """The cursor is on pages ``[page, page + pages)``."""

        page: int
        pages: int

    @dataclass
    class PageSelected(Message):
        page: int

    mode: reactive[Mode] = reactive(Mode.TYPE, always_update=True)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.model: PageMapModel | None = None
        self.pages_per_cell = 1
        self.fit = True
        self.cursor = 0  # a page number, a multiple of pages_per_cell
        self.exact: int | None = None  # the page a ``:N`` jump asked for (inside the cell)
        self.columns = MIN_COLUMNS
        self.cell_width = 1
        self._match: bytes | None = None
        self._cache: dict[int, list[tuple[int, bool]]] = {}
        self._cache_key: tuple[object, ...] = ()
        self._styles: dict[tuple[str, str], Style] = {}

    # --- state -----------------------------------------------------------------------------

    def set_model(self, model: PageMapModel) -> None:
        self.model = model
        self.cursor = 0
        self._relayout()
        self._announce()

    def set_match(self, match: bytes | None) -> None:
        """Pages to show (1) and to dim (0); None shows every page."""
        self._match = match
        self.refresh()

    def pages_changed(self) -> None:
        """More pages were read: redraw (only visible lines are drawn)."""
        self.refresh()

    @property
    def label_width(self) -> int:
        n = self.model.n_pages if self.model else 0
        return max(4, len(str(max(0, n - 1)))) + 1

    def _cells(self) -> int:
        if not self.model:
            return 0
        return -(-self.model.n_pages // self.pages_per_cell)

    def _relayout(self) -> None:
        width = self.scrollable_content_region.width or self.size.width
        # the map is as tall as its rows, up to a share of the screen: fit to that share
        height = max(4, int(self.app.size.height * FIT_SHARE))
        avail = max(MIN_COLUMNS, width - self.label_width)
        n_pages = self.model.n_pages if self.model else 0
        # a small file gets two-character cells, so that a few dozen pages are not a sliver
        self.cell_width = 2 if self.fit and n_pages <= _columns(avail // 2) * height else 1
        cols = _columns(avail // self.cell_width)
        self.columns = cols
        if self.fit and self.model:
            k = 1
            while -(-n_pages // k) > cols * height:
                k *= 2
            self.pages_per_cell = k
        self.cursor -= self.cursor % self.pages_per_cell
        rows = -(-self._cells() // cols)
        self.virtual_size = Size(self.label_width + cols * self.cell_width, rows)
        self._scroll_to_cursor()
        self.refresh()

    def on_resize(self, event: events.Resize) -> None:
        self._relayout()

    # --- drawing ---------------------------------------------------------------------------

    def _style(self, color: str, kind: str) -> Style:
        key = (color, kind)
        style = self._styles.get(key)
        if style is None:
            if kind == "cursor":
                style = Style(color="#ffffff", bgcolor=color, bold=True)
            elif kind == "dim":
                style = Style(color=color, dim=True)
            else:
                style = Style(color=color)
            self._styles[key] = style
        return style

    def render_line(self, y: int) -> Strip:
        model = self.model
        scroll_x, scroll_y = self.scroll_offset
        row = y + scroll_y
        width = self.size.width
        if model is None or row * self.columns >= self._cells():
            return Strip.blank(width, PLAIN)
        k = self.pages_per_cell
        cats = model.categories(self.mode)
        first_cell = row * self.columns
        last_cell = min(self._cells(), first_cell + self.columns)
        cursor_cell = self.cursor // k
        label_style = self._style(
            "#808080" if cursor_cell // self.columns != row else "#e0e0e0", ""
        )
        segments = [Segment(f"{first_cell * k:>{self.label_width - 1}} ", label_style)]
        run_text: list[str] = []
        run_style: Style | None = None
        for cell, (code, uniform) in zip(
            range(first_cell, last_cell), self._row_cells(row, first_cell, last_cell), strict=True
        ):
            start = cell * k
            cat: Category = cats[code] if code < len(cats) else UNSCANNED
            glyph = cat.glyph if uniform else MIXED_GLYPH
            kind = ""
            if cell == cursor_cell:
                kind, glyph = "cursor", "◆"
            elif self._match is not None and 1 not in self._match[start : start + k]:
                kind, glyph = "dim", "·"
            style = self._style(cat.color, kind)
            if style is not run_style and run_text:
                segments.append(Segment("".join(run_text), run_style))
                run_text = []
            run_style = style
            run_text.append(glyph)
            if self.cell_width == 2:
                run_text.append(" ")
        if run_text:
            segments.append(Segment("".join(run_text), run_style))
        strip = Strip(segments)
        return strip.crop(scroll_x, scroll_x + width).extend_cell_length(width, PLAIN)

    def _row_cells(self, row: int, first: int, last: int) -> list[tuple[int, bool]]:
        """The cells of one row; rows whose pages are all read are computed once per mode and
        zoom (while the scan runs only the rows at its frontier are recomputed)."""
        model = self.model
        assert model is not None
        key = (id(model), self.mode, self.pages_per_cell, self.columns)
        if key != self._cache_key:
            self._cache.clear()
            self._cache_key = key
        cells = self._cache.get(row)
        if cells is None:
            k = self.pages_per_cell
            cells = [model.cell(self.mode, c * k, k) for c in range(first, last)]
            if min(last * k, model.n_pages) <= model.scanned:
                self._cache[row] = cells
        return cells

    # --- cursor ----------------------------------------------------------------------------

    def _exact_page(self) -> int | None:
        """The page a jump asked for, while the cursor's cell still holds it."""
        e = self.exact
        if e is None or not self.cursor <= e < self.cursor + self.pages_per_cell:
            return None
        return e

    def _announce(self) -> None:
        if self.model:
            exact = self._exact_page()
            if exact is not None:
                self.post_message(self.CursorMoved(exact, 1))
                return
            k = self.pages_per_cell
            self.post_message(
                self.CursorMoved(self.cursor, min(k, self.model.n_pages - self.cursor))
            )

    def move_to(self, page: int) -> None:
        """Put the cursor on the cell holding ``page``."""
        if not self.model:
            return
        page = max(0, min(self.model.n_pages - 1, page))
        self.exact = None
        self.cursor = page - page % self.pages_per_cell
        self._scroll_to_cursor()
        self.refresh()
        self._announce()

    def jump_to(self, page: int) -> None:
        """``:N``: the cursor on the cell holding page N, and N itself the page it opens and
        describes (a cell of a big file at 80 columns holds several pages)."""
        self.move_to(page)
        if self.model:
            self.exact = max(0, min(self.model.n_pages - 1, page))
            self._announce()

    def _scroll_to_cursor(self) -> None:
        row = self.cursor // self.pages_per_cell // self.columns
        height = self.scrollable_content_region.height or self.size.height
        if height <= 0:
            return
        top = round(self.scroll_y)
        if row < top:
            self.scroll_to(y=row, animate=False)
        elif row >= top + height:
            self.scroll_to(y=row - height + 1, animate=False)

    def action_move(self, dx: int, dy: int) -> None:
        k = self.pages_per_cell
        self.move_to(self.cursor + (dx + dy * self.columns) * k)

    def action_page(self, direction: int) -> None:
        height = max(1, self.scrollable_content_region.height - 1)
        self.move_to(self.cursor + direction * height * self.columns * self.pages_per_cell)

    def action_edge(self, end: int) -> None:
        self.move_to((self.model.n_pages - 1) if (end and self.model) else 0)

    def action_select(self) -> None:
        if self.model:
            exact = self._exact_page()
            self.post_message(self.PageSelected(self.cursor if exact is None else exact))

    def action_zoom(self, direction: int) -> None:
        """Halve (-1) or double (+1) the pages a cell shows, keeping the cursor's page."""
        if not self.model:
            return
        k = self.pages_per_cell * 2 if direction > 0 else self.pages_per_cell // 2
        if k < 1 or (direction > 0 and self.pages_per_cell >= self.model.n_pages):
            return
        self.fit = False
        page = self.cursor
        self.pages_per_cell = k
        self.cursor = page - page % k
        self._relayout()
        self._announce()

    def action_fit(self) -> None:
        self.fit = True
        self._relayout()
        self._announce()

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or not self.model:
            return
        col = (offset.x + round(self.scroll_x) - self.label_width) // self.cell_width
        row = offset.y + round(self.scroll_y)
        if 0 <= col < self.columns:
            cell = row * self.columns + col
            if cell < self._cells():
                self.focus()
                self.move_to(cell * self.pages_per_cell)
