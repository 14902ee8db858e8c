"""What a tablespace is: which server wrote it, which version, and what kind of space it is.

Page 0 (:func:`ibdtool.parsers.flags.vendor_from_flags`) decides most files; the page types found by
a scan settle more (§4.4 rule 4: MySQL's types 14–17 and 21–29, MariaDB's 18, 34354, 37401), and
then the space id, the FSP flags, the file's name and the SDI tell the kind:

* space 0 is the system tablespace (ibdata1);
* MySQL 8 reserves ids at the top of the range (``dict_sys_t`` in dict0dict.h): 0xFFFFFFFE the
  data dictionary (mysql.ibd), 0xFFFFFFFD the global temporary tablespace (ibtmp1), undo
  tablespaces and session temporary tablespaces (``#innodb_temp/*.ibt``) below 0xFFFFFFF0.
  MariaDB gives 0xFFFFFFFE to its temporary tablespace;
* the TEMPORARY flag marks MySQL temporary tablespaces, SHARED general ones (and MySQL 8's
  ibdata1 and mysql.ibd, told apart by their ids);
* an undo tablespace of MySQL 5.7 or MariaDB has an ordinary id: it is told by its name
  (``undo001``, ``undo_001``, ``*.ibu``) or by its pages (undo and system pages, no index);
* a full-text index keeps its words in auxiliary tables named
  ``FTS_<table id>_<index id>_INDEX_<n>`` and ``FTS_<table id>_CONFIG`` (``_DELETED``,
  ``_DELETED_CACHE``, ``_BEING_DELETED``, ``_BEING_DELETED_CACHE``), ids in hex; MySQL 8 writes
  them in lower case.

Nothing here reads a file: callers pass the facts.
"""

# No ``from __future__ import annotations`` here: a NamedTuple's string annotations are each
# compiled by typing when the class is made, ~0.9 ms of every start over the records of
# inspect's path (issue 24, item 4; tests/test_startup.py checks them)

import re
from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import NamedTuple

from ibdtool.parsers.constants import (
    FIL_PAGE_COMPRESSED,
    FIL_PAGE_INDEX,
    FIL_PAGE_PAGE_COMPRESSED,
    FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED,
    FIL_PAGE_RTREE,
    FIL_PAGE_SDI,
    FIL_PAGE_TYPE_INSTANT,
    FIL_PAGE_TYPE_LOB_INDEX,
    FIL_PAGE_TYPE_RSEG_ARRAY,
    FIL_PAGE_TYPE_SYS,
    FIL_PAGE_TYPE_ZLOB_FRAG_ENTRY,
    FIL_PAGE_UNDO_LOG,
    MYSQL_ENCRYPTED_TYPES,
    Vendor,
)
from ibdtool.parsers.flags import MYSQL_DICT_SPACE_ID, MYSQL_TEMP_SPACE_ID, mysql8_reserved
from ibdtool.parsers.space import SpaceFormat

#: page types only MySQL writes: transparent compression and encryption (§2), and MySQL 8's
#: undo RSEG_ARRAY, LOB and ZLOB pages
MYSQL_ONLY_TYPES = frozenset(
    {FIL_PAGE_COMPRESSED, FIL_PAGE_TYPE_RSEG_ARRAY}
    | MYSQL_ENCRYPTED_TYPES
    | set(range(FIL_PAGE_TYPE_LOB_INDEX, FIL_PAGE_TYPE_ZLOB_FRAG_ENTRY + 1))
)
MYSQL8_TYPES = frozenset(
    {FIL_PAGE_SDI, FIL_PAGE_TYPE_RSEG_ARRAY}
    | set(range(FIL_PAGE_TYPE_LOB_INDEX, FIL_PAGE_TYPE_ZLOB_FRAG_ENTRY + 1))
)
#: page types only MariaDB writes (the instant-ALTER root, classic page_compressed)
MARIADB_ONLY_TYPES = frozenset(
    {FIL_PAGE_PAGE_COMPRESSED, FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED, FIL_PAGE_TYPE_INSTANT}
)
_INDEX_TYPES = frozenset({FIL_PAGE_INDEX, FIL_PAGE_RTREE, FIL_PAGE_SDI, FIL_PAGE_TYPE_INSTANT})

FTS_NAME = re.compile(
    r"fts_(?P<table>[0-9a-f]{16})_(?:(?P<index>[0-9a-f]{16})_index_(?P<n>\d+)"
    r"|(?P<common>being_deleted_cache|being_deleted|deleted_cache|deleted|config))",
    re.IGNORECASE,
)
UNDO_NAME = re.compile(r"undo_?\d+", re.IGNORECASE)


class SpaceKind(StrEnum):
    """What a tablespace holds."""

    TABLE = "table"
    SYSTEM = "system"
    UNDO = "undo"
    TEMPORARY = "temporary"
    DICTIONARY = "dictionary"
    GENERAL = "general"
    FTS = "fts"


_KIND_WORDS = {
    SpaceKind.SYSTEM: "system tablespace",
    SpaceKind.UNDO: "undo tablespace",
    SpaceKind.TEMPORARY: "temporary tablespace",
    SpaceKind.DICTIONARY: "data dictionary",
    SpaceKind.GENERAL: "general tablespace",
    SpaceKind.FTS: "full-text index auxiliary table",
}


class Identity(NamedTuple):
    """Who wrote a tablespace and what it is."""

    vendor: Vendor
    server: str  # "MySQL 8 (8.0.15)", "MariaDB 10.4+ full_crc32", "MySQL 5.x or MariaDB classic"
    kind: SpaceKind
    detail: str | None = None  # "INDEX_1 of index 148, table 1059", "68 tables"

    @property
    def label(self) -> str:
        """The one-line description ``inspect`` shows as the format."""
        if self.kind is SpaceKind.TABLE:
            return self.server
        words = _KIND_WORDS[self.kind]
        return f"{self.server} {words}" + (f" ({self.detail})" if self.detail else "")


def refine_vendor(vendor: Vendor, stored_types: Iterable[int]) -> Vendor:
    """§4.4 rule 4: page types settle what page 0 could not."""
    if vendor is not Vendor.UNKNOWN:
        return vendor
    types = set(stored_types)
    if types & MYSQL_ONLY_TYPES:
        return Vendor.MYSQL
    if types & MARIADB_ONLY_TYPES:
        return Vendor.MARIADB
    return Vendor.UNKNOWN


def _version(v: int) -> str:
    return f"{v // 10000}.{v // 100 % 100}.{v % 100}"


def server_name(fmt: SpaceFormat, vendor: Vendor, stored_types: Iterable[int] = ()) -> str:
    """The server family and version as far as the file tells."""
    if fmt.full_crc32:
        return "MariaDB 10.4+ full_crc32"
    if vendor is Vendor.MARIADB:
        classic = "MariaDB classic"
        return f"{classic} (page_compressed)" if fmt.flags.page_compressed else classic
    if vendor is Vendor.MYSQL:
        v = fmt.server_version
        if v:
            return f"MySQL {v // 10000} ({_version(v)})"
        if fmt.flags.sdi or mysql8_reserved(fmt.space_id) or set(stored_types) & MYSQL8_TYPES:
            return "MySQL 8"
        if fmt.page0_type == 0:
            return "MySQL 5.0 or older"  # page types came with 5.1.7
        return "MySQL 5.x"
    return "MySQL 5.x or MariaDB classic"


def _stem(name: str) -> str:
    base = name.rsplit("/", 1)[-1]
    for ext in (".ibd", ".ibu", ".ibt"):
        if base.lower().endswith(ext):
            return base[: -len(ext)]
    return base


def fts_detail(name: str) -> str | None:
    """``INDEX_1 of index 0x94, table 0x423`` for an FTS auxiliary table's name, else None:
    the ids in hex, as the file name writes them."""
    m = FTS_NAME.fullmatch(_stem(name))
    if m is None:
        return None
    table = f"0x{int(m['table'], 16):x}"
    if m["common"]:
        return f"{m['common'].upper()} of table {table}"
    return f"INDEX_{m['n']} of index 0x{int(m['index'], 16):x}, table {table}"


def space_kind(
    fmt: SpaceFormat,
    vendor: Vendor,
    stored_types: Iterable[int] = (),
    name: str | None = None,
    sdi_tables: Sequence[str] = (),
) -> tuple[SpaceKind, str | None]:
    """(kind, detail) from the space id, flags, page types, file name and SDI table names."""
    sid, flags = fmt.space_id, fmt.flags
    types = set(stored_types)
    n_tables = f"{len(sdi_tables)} tables" if len(sdi_tables) > 1 else None
    if sid == 0:
        return SpaceKind.SYSTEM, None
    if sid == MYSQL_DICT_SPACE_ID:
        if vendor is Vendor.MYSQL:
            return SpaceKind.DICTIONARY, n_tables
        return SpaceKind.TEMPORARY, None  # MariaDB's ibtmp1
    if flags.temporary or sid == MYSQL_TEMP_SPACE_ID:
        return SpaceKind.TEMPORARY, None
    stem = _stem(name) if name else ""
    if (
        mysql8_reserved(sid)
        or FIL_PAGE_TYPE_RSEG_ARRAY in types
        or UNDO_NAME.fullmatch(stem)
        or (name or "").lower().endswith(".ibu")
        or (types & {FIL_PAGE_UNDO_LOG, FIL_PAGE_TYPE_SYS} and not types & _INDEX_TYPES)
    ):
        return SpaceKind.UNDO, None
    if flags.shared:
        return SpaceKind.GENERAL, n_tables
    for candidate in (stem, *(t.rsplit(".", 1)[-1] for t in sdi_tables)):
        detail = fts_detail(candidate)
        if detail:
            return SpaceKind.FTS, detail
    return SpaceKind.TABLE, n_tables


def identify(
    fmt: SpaceFormat,
    stored_types: Iterable[int] = (),
    name: str | None = None,
    sdi_tables: Sequence[str] = (),
) -> Identity:
    """Everything above in one :class:`Identity`; ``stored_types`` empty before a scan."""
    types = frozenset(stored_types)
    vendor = refine_vendor(fmt.vendor, types)
    kind, detail = space_kind(fmt, vendor, types, name, sdi_tables)
    return Identity(vendor, server_name(fmt, vendor, types), kind, detail)
