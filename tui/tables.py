"""Filling a ``DataTable`` with its columns' widths given with the rows.

Left to the table, a column of automatic width is measured when the table is next idle; a
frame drawn before that (a busy app: a scan's messages, a worker's batches) caches the header
under a count of updates that the measuring does not raise, and the header then keeps the old
widths over the new rows (the simulation table showed it first; the command log, the server's
tables and the browser fill the same way). Here every column gets a fixed width, as wide as its
label and widest cell, with the rows: :func:`fill_table` replaces the rows, :func:`add_rows`
appends and :func:`set_cells` changes one row, each filling the table again when a cell is wider
than its column (rare: a longer name or SQL text), so no frame shows a header narrower than the
cells under it. Columns are keyed by their labels.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import DataTable

#: a row: its key and its cells
Row = tuple[str, Sequence[Any]]


def cell_width(cell: object) -> int:
    """Cells a value takes in a one-line row (a ``Text`` its own width, else as a string)."""
    return cell.cell_len if isinstance(cell, Text) else cell_len(str(cell))


def fill_table(
    table: DataTable[Any],
    labels: Sequence[str],
    rows: Iterable[Row],
    widths: Mapping[str, int] | None = None,
) -> None:
    """Replace ``table``'s rows with ``rows`` (key, cells), each column made as wide as its
    label, its widest cell here and ``widths[label]`` if given (a column filled later, kept
    from jumping), with the rows. The cursor stays on the row of the same key when it is
    still there."""
    rows = list(rows)
    width = [max(cell_len(label), (widths or {}).get(label, 0)) for label in labels]
    for _key, cells in rows:
        width = [max(w, cell_width(c)) for w, c in zip(width, cells, strict=True)]
    keep = _cursor_key(table)
    table.clear(columns=True)
    for label, w in zip(labels, width, strict=True):
        table.add_column(label, width=w, key=label)
    for key, cells in rows:
        table.add_row(*cells, key=key)
    if keep is not None and keep in table.rows:
        table.move_cursor(row=table.get_row_index(keep), animate=False)


def add_rows(table: DataTable[Any], rows: Iterable[Row]) -> None:
    """Append ``rows`` (key, cells) to a table :func:`fill_table` made; when a cell is wider
    than its column, the table is filled again with its rows and these."""
    rows = list(rows)
    if _fits(table, (cells for _key, cells in rows)):
        for key, cells in rows:
            table.add_row(*cells, key=key)
        return
    fill_table(table, _labels(table), [*_rows_of(table), *rows], _widths(table))


def set_cells(table: DataTable[Any], key: str, cells: Mapping[str, Any]) -> None:
    """Set the cells of the row ``key`` (column label: value) of a table :func:`fill_table`
    made; when one is wider than its column, the table is filled again with the new cells."""
    widths = _widths(table)
    if all(cell_width(v) <= widths[name] for name, v in cells.items()):
        for name, value in cells.items():
            table.update_cell(key, name, value)
        return
    labels = _labels(table)
    rows = [
        (k, [cells.get(label, old) for label, old in zip(labels, row, strict=True)])
        if k == key
        else (k, row)
        for k, row in _rows_of(table)
    ]
    fill_table(table, labels, rows, widths)


def _fits(table: DataTable[Any], rows: Iterable[Sequence[Any]]) -> bool:
    widths = [c.width for c in table.ordered_columns]
    return all(cell_width(c) <= w for cells in rows for c, w in zip(cells, widths, strict=True))


def _labels(table: DataTable[Any]) -> list[str]:
    return [str(c.key.value) for c in table.ordered_columns]


def _widths(table: DataTable[Any]) -> dict[str, int]:
    """The columns' widths now: a table filled again never narrows a column (no jumping)."""
    return {str(c.key.value): c.width for c in table.ordered_columns}


def _rows_of(table: DataTable[Any]) -> list[Row]:
    return [(str(r.key.value), table.get_row(r.key)) for r in table.ordered_rows]


def _cursor_key(table: DataTable[Any]) -> str | None:
    if not table.row_count or not table.is_valid_coordinate(table.cursor_coordinate):
        return None
    key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
    return None if key is None else str(key)
