"""Which columns of a table fit a terminal: chosen by priority, never by cutting numbers.

A table that is wider than the terminal loses whole columns, least important first, and says
which (``hidden: Flags, Compression — use --wide``); it never shortens a number to ``452.0 K…``.
Before a column is dropped the titles take their short forms and text columns that may wrap
(flags, compression lists) are narrowed to their longest word. Plain data in, plain data out (no
Rich), so the layout can be tested on its own; :func:`table_width` says how wide "the terminal"
is for the printers.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

#: what a Rich ``box.SIMPLE_HEAD`` table with ``pad_edge=False`` spends outside its cells: one
#: edge character each side, and padding + divider + padding between two columns
EDGES = 2
BETWEEN = 3


@dataclass(frozen=True)
class Col:
    """One column: ``priority`` 0 is never dropped, higher numbers go first."""

    key: str
    title: str
    priority: int
    numeric: bool = False
    short: str | None = None  # the title when space is short
    wrap: str | None = None  # text that may wrap between items split by this (", "; " ": words)


@dataclass(frozen=True)
class Fit:
    """The columns to show (their indexes into the given columns, in order) and their titles."""

    shown: list[int]
    titles: list[str]
    hidden: list[str]
    widths: list[int] | None = None  # cells per shown column; None: natural widths

    def footer(self) -> str | None:
        """``hidden: Flags, Compression — use --wide``, or None when everything is shown."""
        if not self.hidden:
            return None
        return f"hidden: {', '.join(self.hidden)} — use --wide"


def cell_len(text: str) -> int:
    """Terminal cells a string takes (wide East Asian characters count two; no ASCII
    character is one: a table of 100,000 rows measures millions of cells)."""
    if text.isascii():
        return len(text)
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


#: a word that is a number (``22.0``, ``~93%``, ``1,024``): wrapped text keeps it on the line of
#: the word after it (its unit: ``22.0 GiB``)
_NUMBER = re.compile(r"[~≈<>]?[-+]?\d[\d.,]*%?")


def _items(text: str, sep: str) -> list[str]:
    parts = text.split(sep)
    items = [p + sep.rstrip() if i < len(parts) - 1 else p for i, p in enumerate(parts)]
    if sep != " ":
        return items
    glued: list[str] = []  # words: a number and the word after it are one item
    for item in items:
        if glued and _NUMBER.fullmatch(glued[-1]):
            glued[-1] = f"{glued[-1]} {item}"
        else:
            glued.append(item)
    return glued


def _longest_item(text: str, sep: str) -> int:
    return max((cell_len(w) for line in text.splitlines() for w in _items(line, sep)), default=0)


def fill(text: str, width: int, sep: str) -> str:
    """``text`` in lines of at most ``width`` cells, broken only between its items (so
    ``zlib 93%`` or ``needs_rebuild 1`` is never split from its number)."""
    lines: list[str] = []
    for para in text.splitlines() or [""]:
        line = ""
        for item in _items(para, sep):
            joined = f"{line} {item}" if line else item
            if line and cell_len(joined) > width:
                lines.append(line)
                line = item
            else:
                line = joined
        lines.append(line)
    return "\n".join(lines)


def line_breaks(text: str, width: int) -> list[tuple[int, int]]:
    """Where to break one line of words into lines of at most ``width`` cells: (end of a line,
    start of the next) offsets, between words only and never between a number and the word
    after it (``22.0 GiB``). A word wider than ``width`` gets a line of its own."""
    words = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
    cuts: list[tuple[int, int]] = []
    start = words[0][0] if words else 0
    last: tuple[int, int] | None = None  # the latest place a break may go on this line
    for k, (s, e) in enumerate(words):
        if last is not None and cell_len(text[start:e]) > width:
            cuts.append(last)
            start, last = last[1], None
        if k + 1 < len(words) and not _NUMBER.fullmatch(text[s:e]):
            last = (e, words[k + 1][0])
    return cuts


def widest_line(text: str) -> int:
    return max((cell_len(line) for line in text.splitlines()), default=0)


def table_cells_width(widths: Sequence[int]) -> int:
    """The width of a table whose columns are ``widths`` wide."""
    if not widths:
        return 0
    return EDGES + sum(widths) + BETWEEN * (len(widths) - 1)


def fit_columns(
    cols: Sequence[Col], rows: Sequence[Sequence[str]], width: int | None, wide: bool = False
) -> Fit:
    """Choose the columns of ``rows`` (cell texts) to show in ``width`` terminal cells.

    ``width`` None or ``wide`` shows every column with its full title.
    """
    full = [col.title for col in cols]
    if width is None or wide:
        return Fit(list(range(len(cols))), full, [])

    def need(i: int, title: str) -> int:
        col = cols[i]
        cells = [row[i] for row in rows]
        if col.wrap:
            return max([cell_len(title), *(_longest_item(c, col.wrap) for c in cells)])
        return max([cell_len(title), *(widest_line(c) for c in cells)])

    def natural(i: int, title: str) -> int:
        return max([cell_len(title), *(widest_line(row[i]) for row in rows)])

    shown = list(range(len(cols)))
    if table_cells_width([natural(i, full[i]) for i in shown]) <= width:
        return Fit(shown, full, [])
    titles = {i: cols[i].short or cols[i].title for i in shown}
    # drop the least important column until the rest fit; never the last one standing
    order = sorted(shown, key=lambda i: (-cols[i].priority, -i))
    hidden: list[int] = []
    while len(shown) > 1 and table_cells_width([need(i, titles[i]) for i in shown]) > width:
        victim = order.pop(0)
        if cols[victim].priority == 0:
            break
        shown.remove(victim)
        hidden.append(victim)
    for i in sorted(hidden, key=lambda j: (cols[j].priority, j)):  # a smaller one may fit again
        trial = sorted([*shown, i])
        if table_cells_width([need(j, titles[j]) for j in trial]) <= width:
            shown = trial
            hidden.remove(i)
    widths = {i: max(natural(i, titles[i]), need(i, titles[i])) for i in shown}
    # narrow the wrapping text columns, widest first, never below their longest word
    excess = table_cells_width(list(widths.values())) - width
    while excess > 0:
        room = [i for i in shown if cols[i].wrap and widths[i] > need(i, titles[i])]
        if not room:
            break
        i = max(room, key=lambda j: widths[j])
        widths[i] -= 1
        excess -= 1
    for i in shown:  # a wrapped column only as wide as its longest filled line
        sep = cols[i].wrap
        if sep:
            lines = [fill(row[i], widths[i], sep) for row in rows]
            widths[i] = max([cell_len(titles[i]), *(widest_line(t) for t in lines)])
    return Fit(
        shown,
        [titles[i] for i in shown],
        [cols[i].title for i in hidden],
        [widths[i] for i in shown],
    )


def table_width() -> int | None:
    """How wide tables may be on stdout: on a terminal ``COLUMNS`` when set (as Rich reads
    it), else the terminal's width; on a pipe or a file None, every column at its natural
    width (an inherited ``COLUMNS`` does not squeeze what a script reads)."""
    import sys

    try:
        if not sys.stdout.isatty():
            return None
        columns = os.environ.get("COLUMNS", "")
        if columns.isdigit() and int(columns) > 0:
            return int(columns)
        return os.get_terminal_size(sys.stdout.fileno()).columns or None
    except (OSError, ValueError):
        return None
