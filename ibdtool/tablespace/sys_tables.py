"""Table ids by table name from a system tablespace's SYS_TABLES (MariaDB, MySQL 5.x).

Walks SYS_TABLES' clustered index (:mod:`ibdtool.parsers.sys_tables`): down the leftmost node
pointers to the first leaf, then along the leaves. ``report`` uses it to tie a FULLTEXT index's
``FTS_<table id>_…`` tablespaces to their table where no SDI names the id.
"""

from __future__ import annotations

from pathlib import Path

from ibdtool.errors import InputError
from ibdtool.parsers.errors import ParseError
from ibdtool.parsers.sys_tables import (
    DICT_HDR_PAGE_NO,
    first_child,
    leaf_rows,
    next_page,
    page_level,
    tables_root,
)
from ibdtool.tablespace.reader import Tablespace

MAX_DEPTH = 16  # a B-tree of InnoDB is never this deep: a loop in a damaged file


def sys_table_ids(path: str | Path) -> dict[int, str]:
    """table id -> ``schema/table`` (filename encoding) of every table in ``path``'s
    SYS_TABLES; :class:`InputError` when ``path`` is not a readable system tablespace."""
    out: dict[int, str] = {}
    try:
        with Tablespace(path) as ts:
            if ts.format.space_id != 0:
                raise InputError(f"{path}: not a system tablespace (space id {ts.format.space_id})")
            page_no = tables_root(ts.logical_page(DICT_HDR_PAGE_NO))
            for _ in range(MAX_DEPTH):
                page = ts.logical_page(page_no)
                if page_level(page) == 0:
                    break
                page_no = first_child(page)
            else:
                raise InputError(f"{path}: SYS_TABLES is deeper than {MAX_DEPTH} levels")
            seen: set[int] = set()
            while True:
                seen.add(page_no)
                for row in leaf_rows(page):
                    out[row.table_id] = row.name
                nxt = next_page(page)
                if nxt is None:
                    break
                if nxt in seen:
                    raise InputError(f"{path}: SYS_TABLES' leaf pages loop at page {nxt}")
                page_no, page = nxt, ts.logical_page(nxt)
    except ParseError as exc:
        raise InputError(f"{path}: SYS_TABLES: {exc}") from None
    return out
