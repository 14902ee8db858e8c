"""A tablespace's page map as a static picture: one category per page, cells, a legend, an SVG.

``inspect --map`` draws it in the terminal and ``--map-svg FILE`` writes it as SVG. A page's
category depends on the colouring (``--map-by``): its real type, its compression algorithm,
what the filesystem allocates for its slot, or the index it belongs to. Each category has a
colour and a glyph of its own, so the map also reads without colour (``NO_COLOR``, a printout).
When the file has more pages than the picture has cells, one cell stands for several pages
and shows the category most of them have; the legend still counts pages, not cells.
Rich-free: the CLI turns :class:`Cell` rows into styled text.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from xml.sax.saxutils import escape as xml_escape

from ibdtool.present import palette
from ibdtool.present.text import shown

if TYPE_CHECKING:
    from ibdtool.parsers.keyring import Keyring
    from ibdtool.parsers.page import PageInfo
    from ibdtool.parsers.tabledef import TableDef
    from ibdtool.tablespace import InspectResult

MODES = ("type", "compression", "allocation", "index")


def escape(text: str) -> str:
    """SVG text or a double-quoted attribute: markup and quotes escaped, control characters
    (which XML forbids) shown as :func:`ibdtool.text.shown` writes them."""
    return xml_escape(shown(text), {'"': "&quot;"})


#: glyphs given to categories in legend order; letters when the blocks run out
GLYPHS = "█▓▒░▚▞▙▟▛▜" + "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True)
class Category:
    label: str
    color: str
    glyph: str
    pages: int


@dataclass
class PageMap:
    """The category of every page (``labels[page_no]``) under one colouring."""

    mode: str
    labels: list[str] = field(default_factory=list)

    def legend(self) -> list[Category]:
        """Categories, most pages first, each with its colour, glyph and page count."""
        counts = Counter(self.labels)
        ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        return [
            Category(label, _color(self.mode, label, i), GLYPHS[i % len(GLYPHS)], n)
            for i, (label, n) in enumerate(ordered)
        ]

    def cells(self, width: int, max_rows: int) -> tuple[int, list[list[Category]]]:
        """Rows of at most ``width`` cells, at most ``max_rows`` of them: the pages per cell
        and each cell's category (the one most of its pages have)."""
        n = len(self.labels)
        per_cell = max(1, -(-n // max(1, width * max_rows)))
        by_label = {c.label: c for c in self.legend()}
        cells = []
        for start in range(0, n, per_cell):
            chunk = self.labels[start : start + per_cell]
            top = Counter(chunk).most_common(1)[0][0]
            cells.append(by_label[top])
        return per_cell, [cells[i : i + width] for i in range(0, len(cells), width)]


_ALLOCATION_COLORS = {
    "hole": palette.HOLE_COLOR,
    "partly allocated": palette.PARTIAL_COLOR,
    "allocated": palette.FULL_COLOR,
}


def _color(mode: str, label: str, i: int) -> str:
    if mode == "type":
        return palette.type_color(label)
    if mode == "compression":
        return palette.compression_color(label)
    if mode == "allocation":
        return _ALLOCATION_COLORS.get(label, palette.OTHER_COLOR)
    if label == "not an index page":
        return palette.UNREAD_COLOR
    return palette.INDEX_PALETTE[i % len(palette.INDEX_PALETTE)]


def label_of(info: PageInfo, mode: str) -> str:
    """A page's category under ``mode`` (allocation is filled from the filesystem instead)."""
    if mode == "type":
        return info.type_name
    if mode == "compression":
        return info.compression.value
    if mode == "index":
        return "not an index page" if info.index is None else f"index {info.index.index_id}"
    return ""


def map_path(
    path: str,
    mode: str,
    with_sdi: bool = True,
    keyring: Keyring | None = None,
    schema: TableDef | None = None,
) -> tuple[InspectResult, PageMap]:
    """Inspect ``path`` and collect its page map under ``mode`` in the same pass (``keyring``
    opens an encrypted tablespace: its pages then show their real types; ``schema``: the
    table's ``--schema`` definition, for index names)."""
    from ibdtool.tablespace import Tablespace, inspect_tablespace

    pm = PageMap(mode)

    def on_page(info: PageInfo) -> None:
        pm.labels.append(label_of(info, mode))

    with Tablespace(path, keyring) as ts:
        if mode == "allocation":  # drawn from the whole map below: read once, before the pass
            ts.allocation  # noqa: B018
        result = inspect_tablespace(ts, with_sdi=with_sdi, on_page=on_page, jobs=1, schema=schema)
        if mode == "index" and result.index_names.names:  # "index 24 (ua)"
            names = {f"index {i}": f"index {i} ({n})" for i, n in result.index_names.names.items()}
            pm.labels = [names.get(label, label) for label in pm.labels]
        if mode == "allocation":
            size = ts.physical_size
            per_page = ts.allocation.per_page_allocated(size, len(pm.labels), 0)
            pm.labels = [
                "hole" if a == 0 else "allocated" if a >= size else "partly allocated"
                for a in per_page
            ]
    return result, pm


def sampled_types(path: str, cells: int = 512) -> dict[str, Any]:
    """A compact page-type map for reports: every page of a file up to ``cells`` pages, else
    ``cells`` pages evenly spread (each cell the type of one page). ``{"pages", "per_cell",
    "types": [names], "cells": [index into types, …]}``."""
    from ibdtool.tablespace import Tablespace

    with Tablespace(path) as ts:
        n = ts.n_pages
        if n <= cells:
            names = [info.type_name for info in ts.pages(0, n)]
        else:
            names = []
            for i in range(cells):
                p = i * n // cells
                names.extend(info.type_name for info in ts.pages(p, p + 1))
    types = list(dict.fromkeys(names))
    index = {t: i for i, t in enumerate(types)}
    return {
        "pages": n,
        "per_cell": max(1.0, n / max(1, len(names))),
        "types": types,
        "cells": [index[t] for t in names],
    }


def svg(pm: PageMap, title: str, width: int = 128, cell: int = 8) -> str:
    """The map as a standalone SVG: ``width`` cells a row, a legend under it."""
    per_cell, rows = pm.cells(width, max(1, -(-len(pm.labels) // width)))
    legend = pm.legend()
    w = width * cell
    h_map = len(rows) * cell
    top = 24
    height = top + h_map + 12 + 18 * len(legend)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w + 16}" height="{height}" '
        f'viewBox="0 0 {w + 16} {height}" font-family="sans-serif" font-size="12">',
        f'<text x="8" y="16">{escape(title)} — page map by {escape(pm.mode)}'
        f"{'' if per_cell == 1 else f' (1 cell = {per_cell} pages)'}</text>",
    ]
    for y, row in enumerate(rows):
        for x, c in enumerate(row):
            parts.append(
                f'<rect x="{8 + x * cell}" y="{top + y * cell}" width="{cell - 1}" '
                f'height="{cell - 1}" fill="{c.color}" data-label="{escape(c.label)}"/>'
            )
    y0 = top + h_map + 12
    for i, c in enumerate(legend):
        y = y0 + 18 * i
        parts.append(
            f'<rect x="8" y="{y}" width="12" height="12" fill="{c.color}"/>'
            f'<text x="26" y="{y + 10}">{escape(c.label)}: {c.pages} '
            f"page{'' if c.pages == 1 else 's'}</text>"
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
