"""``ibdtool records``: the user records of one index of a tablespace, in key order, by column.

The table definition comes from the first source that has one: the tablespace's own SDI (MySQL
8), a ``CREATE TABLE`` given with ``--schema``, the live server (``SHOW CREATE TABLE`` of the
table the file belongs to), the ``.cfg`` file beside the ``.ibd``. Without any, each record's
bytes are shown in hex. The index's leaf pages are found by their headers (index id, level 0,
no previous page) and walked along FIL_PAGE_NEXT with a visited set; each page is read as the
server holds it (decrypted with the key an encrypted tablespace was opened with, page-compressed
pages inflated, ROW_FORMAT=COMPRESSED pages rebuilt); externally stored parts are read from the
same decrypted pages.

The engine yields :class:`RecordEvent` values; the CLI prints them.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from ibdtool.errors import InputError
from ibdtool.parsers.cfg import CfgError, parse_cfg
from ibdtool.parsers.constants import FIL_NULL, FIL_PAGE_INDEX
from ibdtool.parsers.ddl import DdlError, parse_create_table
from ibdtool.parsers.errors import ParseError
from ibdtool.parsers.frm import MAX_FRM_SIZE, FrmError, parse_frm, refine_with_frm
from ibdtool.parsers.instant_mariadb import core_null_bytes
from ibdtool.parsers.keyring import Keyring
from ibdtool.parsers.records import (
    DEFAULT_EXTERN_LIMIT,
    FIL_PAGE_TYPE_INSTANT,
    IndexReader,
    RecordsError,
    mariadb_core_fields,
    page_is_compact,
    raw_rows,
)
from ibdtool.parsers.rowplan import PagePlan
from ibdtool.parsers.sdi_table import SdiTableError, table_from_sdi
from ibdtool.parsers.tabledef import IndexDef, TableDef
from ibdtool.parsers.vendor import Vendor
from ibdtool.parsers.zip_page import ZipPageError, decompress_zip_page
from ibdtool.tablespace.reader import Tablespace
from ibdtool.tablespace.schemas import index_names_by_order

MAX_LEAF_PAGES = 1 << 26
NOT_LEAF = 0xFFFFFFFE  # in IndexPages.next_of: not a leaf page (FIL_NULL ends a chain)


@dataclass(slots=True)
class FastRows:
    """The records of one leaf page read by the index's compiled plan
    (:mod:`ibdtool.parsers.rowplan`): (delete-marked, values in :meth:`RecordsRun.column_names`
    order) each."""

    page: int
    rows: list[tuple[bool, tuple[Any, ...]]]
    names: tuple[str, ...]
    #: per column: ``i`` its values are ints, ``s`` strs, ``o`` either (None: NULL)
    styles: str


Item = Union["RecordEvent", FastRows]


@dataclass(slots=True)
class IndexPages:
    """What the page headers say about one index id."""

    index_id: int
    leaves: list[int] = field(default_factory=list)  # level-0 pages with no previous page
    root: int | None = None
    root_level: int = -1
    pages: int = 0
    #: per page of the file, a level-0 page's FIL_PAGE_NEXT by its header (the leaf chain as
    #: it seems), :data:`NOT_LEAF` for other pages; one array shared by every index
    next_of: array[int] = field(default_factory=lambda: array("I"))


@dataclass(frozen=True, slots=True)
class RecordEvent:
    """One output line: a row, or a problem met on the way (the walk goes on when it can)."""

    index: str
    page: int
    deleted: bool = False
    fields: dict[str, Any] | None = None
    truncated: tuple[str, ...] = ()
    errors: dict[str, str] | None = None
    problem: str | None = None
    #: the record does not fit the definition: what did not (its values are not to be trusted)
    misfit: str | None = None
    origin: int | None = None  # the record's offset on its page

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"index": self.index, "page": self.page}
        if self.problem is not None:
            doc["problem"] = self.problem
            return doc
        if self.misfit is not None:
            doc["record"] = self.origin
            doc["misfit"] = self.misfit
        doc["deleted"] = self.deleted
        doc["fields"] = self.fields
        if self.truncated:
            doc["truncated"] = list(self.truncated)
        if self.errors:
            doc["errors"] = self.errors
        return doc


# --- the definition ------------------------------------------------------------------------


def definition_from_sdi(ts: Tablespace) -> TableDef | None:
    entries = [e for e in ts.sdi() if e.sdi_type == 1]
    if not entries:
        return None
    obj = entries[0].obj.get("dd_object")
    if not isinstance(obj, dict):
        raise InputError(f"{ts.path}: the SDI table record has no dd_object")
    try:
        return table_from_sdi(obj)
    except SdiTableError as exc:
        raise InputError(f"{ts.path}: SDI: {exc}") from None


def definition_from_cfg(path: Path) -> TableDef | None:
    """The ``.cfg`` beside ``path``, with the ``.frm`` beside it when there is one (the SQL
    types the ``.cfg`` lacks: DECIMAL scale, ENUM/SET names, UUID/INET)."""
    cfg = path.with_suffix(".cfg")
    if not cfg.is_file():
        return None
    try:
        table = parse_cfg(cfg.read_bytes())
    except CfgError as exc:
        raise InputError(f"{cfg}: {exc}") from None
    except OSError as exc:
        raise InputError(f"{cfg}: {exc.strerror}") from None
    frm = path.with_suffix(".frm")
    if not frm.is_file():
        return table
    try:
        with frm.open("rb") as fh:
            return refine_with_frm(table, parse_frm(fh.read(MAX_FRM_SIZE + 1)))
    except FrmError as exc:
        raise InputError(f"{frm}: {exc}") from None
    except OSError as exc:
        raise InputError(f"{frm}: {exc.strerror}") from None


def definition_from_schema(sql: str) -> TableDef:
    try:
        return parse_create_table(sql)
    except DdlError as exc:
        raise InputError(f"--schema: {exc}") from None


def table_name_of(path: Path) -> tuple[str, str]:
    """(schema, table) of a file in a datadir, decoded from the servers' filename encoding
    (:mod:`ibdtool.parsers.filename`): ``shop/t#P#p0.ibd`` → ("shop", "t"),
    ``shop/Bestell@1obersicht.ibd`` → ("shop", "Bestellübersicht")."""
    from ibdtool.parsers.filename import decode, split_table_file

    resolved = path.resolve()
    return decode(resolved.parent.name), split_table_file(resolved.stem).table


# --- pages ---------------------------------------------------------------------------------


class PageSource:
    """Pages as the server holds them: decrypted, logical images, zip index pages rebuilt."""

    def __init__(self, ts: Tablespace) -> None:
        self.ts = ts
        self.zip = ts.format.zip

    def index_page(self, no: int) -> bytes:
        if self.zip:
            raw = self.ts.stored_page(no)
            try:
                return decompress_zip_page(raw, self.ts.logical_size).page
            except ZipPageError as exc:
                raise RecordsError(f"page {no}: {exc}") from None
        return self.ts.logical_page(no)

    def extern_page(self, no: int) -> bytes:
        """A BLOB page: ZBLOB pages of a zip space are read as stored (decrypted)."""
        if not 0 <= no < self.ts.n_pages:
            raise ValueError(f"page {no} beyond the end of the file")
        try:
            return self.ts.stored_page(no) if self.zip else self.ts.logical_page(no)
        except InputError as exc:
            raise ValueError(exc.message) from None


def scan_indexes(ts: Tablespace) -> dict[int, IndexPages]:
    """Index id → its pages, from every page header (pages the extent descriptors call free
    are left out: a freed page keeps its old header)."""
    found: dict[int, IndexPages] = {}
    free = ts.free_window(0, ts.n_pages)
    next_of = array("I", [NOT_LEAF]) * ts.n_pages
    for info in ts.pages():
        if info.index is None or info.real_type not in (FIL_PAGE_INDEX, FIL_PAGE_TYPE_INSTANT):
            continue
        if info.page_no < len(free) and free[info.page_no]:
            continue
        ip = found.setdefault(info.index.index_id, IndexPages(info.index.index_id, next_of=next_of))
        ip.pages += 1
        level = info.index.level
        if level == 0 and info.page_no < len(next_of):
            next_of[info.page_no] = info.next
            if info.prev == FIL_NULL:
                ip.leaves.append(info.page_no)
        if level > ip.root_level:
            ip.root, ip.root_level = info.page_no, level
    return found


def _match_index(table: TableDef, index: IndexDef, found: dict[int, IndexPages]) -> IndexPages:
    if index.index_id is not None and index.index_id in found:
        return found[index.index_id]
    if index.root is not None:
        for ip in found.values():
            if ip.root == index.root:
                return ip
    if (
        index.index_id is None
    ):  # CREATE TABLE: no ids, matched by order (ibdtool.tablespace.schemas)
        roots = {i: p.root for i, p in found.items() if p.root is not None}
        for iid, name in index_names_by_order(table, roots).names.items():
            if name == index.name:
                return found[iid]
    raise InputError(f"index {index.name} has no pages in this file")


# --- the walk ------------------------------------------------------------------------------


@dataclass(slots=True)
class RecordsRun:
    """Everything ``records`` needs: the file, the definition, the index and where it lives."""

    ts: Tablespace
    table: TableDef | None
    index: IndexDef | None
    pages: IndexPages
    extern_limit: int = DEFAULT_EXTERN_LIMIT
    #: go on past records that do not fit the definition (they are marked); else the first
    #: one is the last event
    force: bool = False

    @property
    def index_name(self) -> str:
        return self.index.name if self.index else f"id {self.pages.index_id}"

    def make_reader(self, src: PageSource) -> IndexReader | None:
        """The reader of this run's index (None without a definition: records in hex)."""
        if self.table is None or self.index is None:
            return None
        core = null_bytes = None
        if self.ts.format.vendor is not Vendor.MYSQL and self.pages.root is not None:
            root = src.index_page(self.pages.root)
            core = mariadb_core_fields(root)
            if core is not None:
                null_bytes = core_null_bytes(root, page_is_compact(root))
        return IndexReader(
            self.table, self.index, src.extern_page, extern_limit=self.extern_limit,
            mariadb_core=core, mariadb_core_null_bytes=null_bytes,
        )  # fmt: skip

    def events(self) -> Iterator[RecordEvent]:
        """Every record of the index along its leaf chain, by the general reader (the
        reference :mod:`ibdtool.tablespace.record_blocks` is held to)."""
        for item in self.walk():
            assert isinstance(item, RecordEvent)
            yield item

    def walk(self, plan: Callable[[IndexReader], PagePlan | None] | None = None) -> Iterator[Item]:
        """:meth:`events`; with ``plan`` (:func:`ibdtool.parsers.rowplan.compile_plan`), the pages
        after the first that the plan reads come as one :class:`FastRows` each."""
        src = PageSource(self.ts)
        name = self.index_name
        if not self.pages.leaves:
            yield RecordEvent(name, -1, problem="no leftmost leaf page found for this index")
            return
        reader = self.make_reader(src)
        first = min(self.pages.leaves)
        seen: set[int] = set()
        no = first
        fast: PagePlan | None = None
        while no != FIL_NULL:
            if no in seen or len(seen) > MAX_LEAF_PAGES:
                yield RecordEvent(name, no, problem="leaf chain loops")
                return
            if not 0 <= no < self.ts.n_pages:
                yield RecordEvent(name, no, problem="leaf chain points beyond the file")
                return
            seen.add(no)
            try:
                page = src.index_page(no)
            except (RecordsError, InputError) as exc:
                yield RecordEvent(name, no, problem=str(exc))
                return
            if not self.is_leaf(page):
                yield RecordEvent(name, no, problem="leaf chain leaves the index")
                return
            rows = fast.rows(page) if fast is not None else None
            if fast is not None and rows is not None:
                yield FastRows(no, rows, fast.names, fast.styles)
            else:
                stop = False
                for ev in self.page_events(reader, no, page, no == first):
                    yield ev
                    stop = ev.misfit is not None and not self.force
                if stop:
                    return
            if plan is not None and no == first and reader is not None:
                fast = plan(reader)
            no = int.from_bytes(page[12:16], "big")

    def is_leaf(self, page: bytes) -> bool:
        """A leaf page of this index (the chain has not left it)."""
        ptype = int.from_bytes(page[24:26], "big")
        page_index = int.from_bytes(page[66:74], "big")
        level = int.from_bytes(page[64:66], "big")
        return (
            ptype in (FIL_PAGE_INDEX, FIL_PAGE_TYPE_INSTANT)
            and page_index == self.pages.index_id
            and not level
        )

    def page_events(
        self, reader: IndexReader | None, no: int, page: bytes, first: bool
    ) -> Iterator[RecordEvent]:
        """The events of one leaf page by the general reader (the last one is a misfit's when
        the walk must stop there)."""
        name = self.index_name
        try:
            if reader is None:
                yield from self._raw_rows(no, page)
                return
            rows = list(reader.rows(no, page, metadata=first))
            if not self.force:  # a page with a misfit shows none of its values
                rows = next(([r] for r in rows if r.misfit is not None), rows)
            for row in rows:
                yield RecordEvent(
                    name,
                    no,
                    row.deleted,
                    row.fields,
                    tuple(row.truncated),
                    row.errors or None,
                    misfit=row.misfit,
                    origin=row.origin,
                )
                if row.misfit is not None and not self.force:
                    return
        except (ParseError, ValueError, IndexError) as exc:  # a damaged record or page
            yield RecordEvent(name, no, problem=str(exc) or type(exc).__name__)

    def _raw_rows(self, no: int, page: bytes) -> Iterator[RecordEvent]:
        for deleted, fields in raw_rows(page):
            yield RecordEvent(self.index_name, no, deleted, fields)


def open_records(
    path: str,
    *,
    index: str | None = None,
    schema: str | TableDef | None = None,
    server_sql: Callable[[str, str], str | None] | None = None,
    extern_limit: int = DEFAULT_EXTERN_LIMIT,
    keyring: Keyring | None = None,
    force: bool = False,
) -> RecordsRun:
    """Open ``path`` and choose the definition and the index (the caller closes ``run.ts``).

    An encrypted tablespace needs ``keyring``; a wrong or missing key is an :class:`InputError`
    before any record is read."""
    ts = Tablespace(path, keyring)
    try:
        _need_key(ts)
        table = _definition(ts, schema, server_sql)
        found = scan_indexes(ts)
        if ts.format.sdi_root is not None:  # the SDI's own B-tree is not a table index
            found = {k: v for k, v in found.items() if v.root != ts.format.sdi_root}
        if not found:
            raise InputError(f"{path}: no index pages")
        if table is None:
            ids = sorted(found)
            if index is None:
                return RecordsRun(ts, None, None, found[ids[0]], extern_limit, force)
            raise InputError(f"{path}: --index needs a table definition (SDI, --schema, .cfg)")
        chosen = table.clustered if index is None else table.index(index)
        if chosen is None:
            names = ", ".join(i.name for i in table.indexes)
            raise InputError(f"{path}: no index {index!r} (the table has {names})")
        if chosen.unread:
            raise InputError(f"{path}: index {chosen.name} is {chosen.unread}: not read")
        pages = _match_index(table, chosen, found)
        return RecordsRun(ts, table, chosen, pages, extern_limit, force)
    except BaseException:
        ts.close()
        raise


def _need_key(ts: Tablespace) -> None:
    """Refuse an encrypted tablespace opened without its key: its records are ciphertext."""
    fmt = ts.format
    if ts.decryptor is None and (fmt.mysql_encryption is not None or fmt.crypt_encrypted):
        raise InputError(f"{ts.path}: the tablespace is encrypted: give its key with --keyring")


def _definition(
    ts: Tablespace,
    schema: str | TableDef | None,
    server_sql: Callable[[str, str], str | None] | None,
) -> TableDef | None:
    if ts.format.sdi_root is not None and ts.format.vendor is Vendor.MYSQL:
        table = definition_from_sdi(ts)
        if table is not None:
            return table
    if isinstance(schema, TableDef):
        return schema
    if schema is not None:
        return definition_from_schema(schema)
    if server_sql is not None:
        sql = server_sql(*table_name_of(ts.path))
        if sql:
            return definition_from_schema(sql)
    return definition_from_cfg(ts.path)
