"""The system tablespace's SYS_TABLES: each InnoDB table's name and table id (MariaDB, MySQL 5.x).

Before MySQL 8's data dictionary, InnoDB keeps its own catalog in the system tablespace
(``ibdata1``): page 7 is the dictionary header, whose ``DICT_HDR_TABLES`` field (offset 32 of the
page body) is the root page of SYS_TABLES' clustered index (storage/innobase/include/dict0boot.h,
the same in MariaDB 10.x/11.x and MySQL 5.x). Its records are REDUNDANT, keyed by NAME
(``schema/table`` in the filename encoding); the leaf records hold NAME, DB_TRX_ID, DB_ROLL_PTR,
ID (8 bytes, big-endian), N_COLS, TYPE, MIX_ID, MIX_LEN, CLUSTER_NAME and SPACE. The table id is
what a FULLTEXT index's auxiliary tablespaces carry in their names (``FTS_<id in hex>_…``).

This module is pure: page bytes in; the walk over pages is
:mod:`ibdtool.tablespace.sys_tables`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ibdtool.parsers.errors import ParseError
from ibdtool.parsers.records import iter_redundant

DICT_HDR_PAGE_NO = 7
FIL_PAGE_DATA = 38
DICT_HDR_TABLES = 32  # within the header, after ROW_ID, TABLE_ID, INDEX_ID, MAX_SPACE_ID, MIX_ID
FIL_PAGE_NEXT = 12
FIL_NULL = 0xFFFFFFFF
PAGE_LEVEL = FIL_PAGE_DATA + 26
LEAF_FIELDS = 10  # NAME DB_TRX_ID DB_ROLL_PTR ID N_COLS TYPE MIX_ID MIX_LEN CLUSTER_NAME SPACE
NAME, ID, SPACE = 0, 3, 9


class SysTablesError(ParseError):
    """A dictionary page that is not what SYS_TABLES' pages are."""


@dataclass(frozen=True)
class SysTable:
    """One row of SYS_TABLES."""

    name: str  # ``schema/table`` as stored (filename encoding)
    table_id: int
    space: int | None


def tables_root(header_page: bytes) -> int:
    """SYS_TABLES' root page number from the dictionary header page (page 7)."""
    at = FIL_PAGE_DATA + DICT_HDR_TABLES
    if len(header_page) < at + 4:
        raise SysTablesError("the dictionary header page is too short")
    return int.from_bytes(header_page[at : at + 4], "big")


def page_level(page: bytes) -> int:
    return int.from_bytes(page[PAGE_LEVEL : PAGE_LEVEL + 2], "big")


def next_page(page: bytes) -> int | None:
    n = int.from_bytes(page[FIL_PAGE_NEXT : FIL_PAGE_NEXT + 4], "big")
    return None if n == FIL_NULL else n


def first_child(page: bytes) -> int:
    """The leftmost child of a node page (its first node pointer's last field)."""
    for rec in iter_redundant(page):
        child = rec.values[-1]
        if child is None or len(child) != 4:
            raise SysTablesError("a SYS_TABLES node pointer without a child page number")
        return int.from_bytes(child, "big")
    raise SysTablesError("a SYS_TABLES node page without records")


def leaf_rows(page: bytes) -> Iterator[SysTable]:
    """The rows of one SYS_TABLES leaf page (delete-marked ones left out)."""
    for rec in iter_redundant(page):
        if rec.deleted or rec.n_fields != LEAF_FIELDS:
            continue
        name, tid, space = rec.values[NAME], rec.values[ID], rec.values[SPACE]
        if name is None or tid is None or len(tid) != 8:
            raise SysTablesError("a SYS_TABLES record without NAME or ID")
        yield SysTable(
            name.decode("utf-8", "replace"),
            int.from_bytes(tid, "big"),
            int.from_bytes(space, "big") if space is not None and len(space) == 4 else None,
        )


__all__ = [
    "DICT_HDR_PAGE_NO",
    "SysTable",
    "SysTablesError",
    "first_child",
    "leaf_rows",
    "next_page",
    "page_level",
    "tables_root",
]
