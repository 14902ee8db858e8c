"""User records of an index page → field bytes → values, for every row format.

COMPACT, DYNAMIC and (rebuilt) COMPRESSED records are read with :mod:`ibdtool.parsers.compact_rec`
(null bitmap and length bytes below the 5 fixed header bytes, FORMATS.md §5.2), from an index
description made from the table definition instead of a zip page's own. REDUNDANT records keep
a 6-byte header and one end offset per field (1 or 2 bytes: NULL and external flags in the top
bits). A record may hold fewer fields than its index:

* MySQL 8.0.12–8.0.28 instant ADD COLUMN: info bit 0x80, the field count in 1–2 bytes before the
  null bitmap; records without it hold the columns the table had before the first instant ADD.
* MySQL 8.0.29+ row versions: info bit 0x40, a version byte before the null bitmap; a version
  holds the columns added up to it and not yet dropped, in ``physical_pos`` order; records
  without it are version 0.
* MariaDB 10.3+ instant ADD: status 4 (``REC_STATUS_INSTANT``) records store ``fields − core −
  1`` in 1–2 bytes before the null bitmap; ordinary ones hold the core fields (PAGE_INSTANT of
  the root page). The first record of the index, flagged min-rec, is the metadata record: it
  holds the added columns' values for older rows.
* MariaDB 10.4+ instant DROP COLUMN / reorder: a metadata record also delete-marked points to
  a BLOB with the stored fields' map; the clustered index is then laid out by it
  (:mod:`ibdtool.parsers.instant_mariadb`), dropped columns as hidden fields.

Missing columns take the value the column had when it was added. Externally stored fields are
followed through :mod:`ibdtool.parsers.lob`, up to a byte limit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ibdtool.parsers.columns import ColumnError, decode_value, hex_bytes
from ibdtool.parsers.compact_rec import (
    REC_INFO_DELETED_FLAG,
    REC_INFO_MIN_REC_FLAG,
    REC_N_NEW_EXTRA_BYTES,
    REC_STATUS_NODE_PTR,
    FieldSpec,
    RecordError,
    ZipIndex,
    iter_free,
    iter_records,
    record_fields,
)
from ibdtool.parsers.errors import ParseError
from ibdtool.parsers.instant_mariadb import (
    METADATA_REF_SIZE,
    InstantError,
    first_user_field,
    metadata_ref_offset,
    parse_field_map,
    rebuild_clustered,
)
from ibdtool.parsers.lob import BTR_EXTERN_FIELD_REF_SIZE, ExternRef, LobError, read_extern
from ibdtool.parsers.record_fit import (
    KeyOrder,
    Span,
    field_misfit,
    heap_misfit,
    null_padding_misfit,
    value_misfit,
)
from ibdtool.parsers.tabledef import Column, IndexDef, IndexField, Kind, TableDef

REC_INFO_INSTANT_FLAG = 0x80  # MySQL 8.0.12+: the record stores its field count
REC_INFO_VERSION_FLAG = 0x40  # MySQL 8.0.29+: the record stores its row version
REC_STATUS_INSTANT = 4  # MariaDB 10.3+
PAGE_OLD_INFIMUM = 101
PAGE_OLD_SUPREMUM = 116
REC_N_OLD_EXTRA_BYTES = 6
PAGE_HEAP_TOP = 38 + 2
PAGE_N_HEAP = 38 + 4
PAGE_INSTANT = 38 + 12  # MariaDB: core field count << 3 | direction, on an instant root
FIL_PAGE_TYPE_INSTANT = 18
DEFAULT_EXTERN_LIMIT = 1 << 20
MAX_METADATA_BLOB = 1 << 16  # 4 + 2 bytes per field, at most 1,020 fields


class RecordsError(ParseError):
    """A page or record that cannot be read with the table definition given."""


@dataclass(slots=True)
class Row:
    """One user record: its place, whether it is delete-marked, its values."""

    page: int
    origin: int
    deleted: bool
    fields: dict[str, Any]
    truncated: list[str] = field(default_factory=list)  # external values cut at the limit
    errors: dict[str, str] = field(default_factory=dict)  # per field: why it has no value
    #: what of the record does not fit the definition (:mod:`ibdtool.parsers.record_fit`); None:
    #: fits
    misfit: str | None = None


@dataclass(slots=True)
class _Raw:
    """One record's fields as bytes (None: NULL; missing: not stored in this record)."""

    deleted: bool
    min_rec: bool
    values: list[bytes | None]
    extern: list[bool]
    n_stored: int
    fields: tuple[IndexField, ...]
    misfit: str | None = None


def _is_alter_metadata(info_bits: int) -> bool:
    """MariaDB 10.4+: min-rec and delete-marked, the metadata record of instant DROP/reorder."""
    both = REC_INFO_MIN_REC_FLAG | REC_INFO_DELETED_FLAG
    return info_bits & both == both


def page_is_compact(page: bytes) -> bool:
    return bool(int.from_bytes(page[PAGE_N_HEAP : PAGE_N_HEAP + 2], "big") & 0x8000)


def mariadb_core_fields(root: bytes) -> int | None:
    """MariaDB's count of fields before instant ADD, from an instant root page; else None."""
    if int.from_bytes(root[24:26], "big") != FIL_PAGE_TYPE_INSTANT:
        return None
    return int.from_bytes(root[PAGE_INSTANT : PAGE_INSTANT + 2], "big") >> 3


@dataclass(frozen=True, slots=True)
class RedundantRecord:
    """A REDUNDANT record: its fields are self-describing (end offsets, NULL/external bits)."""

    origin: int
    deleted: bool
    min_rec: bool
    values: list[bytes | None]
    extern: list[bool]

    @property
    def n_fields(self) -> int:
        return len(self.values)


def iter_redundant(page: bytes) -> Iterator[RedundantRecord]:
    """The user records of a REDUNDANT page in key order, each split into its fields."""
    seen: set[int] = set()
    rec = int.from_bytes(page[PAGE_OLD_INFIMUM - 2 : PAGE_OLD_INFIMUM], "big")
    while rec != PAGE_OLD_SUPREMUM:
        if rec in seen or not PAGE_OLD_SUPREMUM < rec < len(page):
            raise RecordError(f"record list {'loops' if rec in seen else 'points'} to {rec}")
        seen.add(rec)
        info = page[rec - REC_N_OLD_EXTRA_BYTES] & 0xF0
        n_fields = (int.from_bytes(page[rec - 4 : rec - 2], "big") >> 1) & 0x3FF
        short = page[rec - 3] & 1
        if n_fields == 0:
            raise RecordError(f"record at {rec} has no fields")
        values: list[bytes | None] = []
        extern: list[bool] = []
        start = rec
        for i in range(n_fields):
            if short:  # 1-byte end offsets: 0x80 NULL
                raw_end = page[rec - REC_N_OLD_EXTRA_BYTES - 1 - i]
                end, null, ext = raw_end & 0x7F, bool(raw_end & 0x80), False
            else:  # 2-byte end offsets: 0x8000 NULL, 0x4000 external
                pos = rec - REC_N_OLD_EXTRA_BYTES - 2 * (i + 1)
                raw_end = int.from_bytes(page[pos : pos + 2], "big")
                end, null, ext = raw_end & 0x3FFF, bool(raw_end & 0x8000), bool(raw_end & 0x4000)
            if rec + end > len(page) or rec + end < start:
                raise RecordError(f"record at {rec}: field {i} ends outside the page")
            values.append(None if null else bytes(page[start : rec + end]))
            extern.append(ext)
            start = rec + end
        yield RedundantRecord(
            rec,
            bool(info & REC_INFO_DELETED_FLAG),
            bool(info & REC_INFO_MIN_REC_FLAG),
            values,
            extern,
        )
        rec = int.from_bytes(page[rec - 2 : rec], "big")


def raw_rows(page: bytes) -> Iterator[tuple[bool, dict[str, Any]]]:
    """Without a table definition: (deleted, fields) of each user record, in hex.

    REDUNDANT records split into their fields; a COMPACT record's layout needs the definition,
    so its bytes are given whole, up to the 5 fixed header bytes of the next record in the heap
    (its null bitmap and length bytes included).
    """
    if not page_is_compact(page):
        for rec in iter_redundant(page):
            yield (
                rec.deleted,
                {
                    f"field{i}": None if v is None else {"length": len(v), "hex": hex_bytes(v)}
                    for i, v in enumerate(rec.values)
                },
            )
        return
    heads = list(iter_records(page))
    heap_top = int.from_bytes(page[PAGE_HEAP_TOP : PAGE_HEAP_TOP + 2], "big")
    origins = sorted({h.origin for h in heads})
    for h in heads:
        later = [o for o in origins if o > h.origin]
        end = max(h.origin, min(later[0] - REC_N_NEW_EXTRA_BYTES if later else heap_top, heap_top))
        data = bytes(page[h.origin : end])
        yield h.deleted, {"raw": {"length": len(data), "hex": hex_bytes(data)}}


class IndexReader:
    """Reads the user records of one index's leaf pages with a table definition."""

    def __init__(
        self,
        table: TableDef,
        index: IndexDef,
        get_page: Callable[[int], bytes],
        *,
        extern_limit: int = DEFAULT_EXTERN_LIMIT,
        mariadb_core: int | None = None,
        mariadb_core_null_bytes: int | None = None,
    ) -> None:
        self.table = table
        self.index = index
        self.get_page = get_page  # physical page n as stored, uncompressed (for LOB chains)
        self.extern_limit = extern_limit
        self.mariadb_core = mariadb_core
        #: MariaDB 10.4+ after instant DROP/reorder: the null bitmap of a core record
        self.core_null_bytes = mariadb_core_null_bytes
        self.defaults: dict[str, bytes | None] = {
            f.column.name: f.column.default for f in index.fields if f.column.instant
        }
        fields = index.fields
        if table.versioned:
            self.core_fields = tuple(f for f in fields if f.column.in_version(0))
        elif mariadb_core is not None:
            self.core_fields = fields[:mariadb_core]
        else:
            n_instant = sum(1 for f in fields if f.column.instant)
            self.core_fields = fields[: len(fields) - n_instant] if index.clustered else fields
        self._specs: dict[tuple[int, ...], ZipIndex] = {}
        self.altered = False  # the MariaDB instant DROP/reorder field map is applied
        self.key_order = KeyOrder(index.fields[0] if index.fields else None)
        #: fewer stored fields than the index has are possible (instant ADD COLUMN)
        self.may_be_short = (
            table.versioned or mariadb_core is not None or any(f.column.instant for f in fields)
        )

    # --- field layout ----------------------------------------------------------------------

    def _zindex(self, fields: tuple[IndexField, ...]) -> ZipIndex:
        key = tuple(id(f) for f in fields)
        z = self._specs.get(key)
        if z is None:
            specs = tuple(
                FieldSpec(f.fixed_len(True), f.column.nullable, f.column.big) for f in fields
            )
            n_nullable = sum(s.nullable for s in specs)
            if fields is self.core_fields and self.core_null_bytes is not None:
                n_nullable = self.core_null_bytes * 8
            z = self._specs[key] = ZipIndex(specs, True, None, n_nullable)
        return z

    # --- MariaDB 10.4+ instant DROP COLUMN / reorder -----------------------------------------

    def _alter_metadata_ref(self, page: bytes, rec: int, compact: bool) -> ExternRef:
        ref: bytes | None = b""
        if compact:
            at = rec + metadata_ref_offset(self.index)
            ref = page[at : at + METADATA_REF_SIZE]
        else:
            found = next((r for r in iter_redundant(page) if r.origin == rec), None)
            pos = first_user_field(self.index)
            ref = found.values[pos] if found is not None and pos < len(found.values) else None
        if ref is None or len(ref) != METADATA_REF_SIZE or int.from_bytes(ref[12:16], "big"):
            raise InstantError(f"metadata record at {rec}: no BLOB reference after DB_ROLL_PTR")
        return ExternRef.parse(bytes(ref))

    def _install_alter_metadata(self, page: bytes, rec: int, compact: bool) -> None:
        """Read the field map the metadata record points to and lay the index out by it."""
        if not self.index.clustered:
            return
        ref = self._alter_metadata_ref(page, rec, compact)
        try:
            blob, cut = read_extern(self.get_page, ref, MAX_METADATA_BLOB)
        except LobError as exc:
            raise InstantError(f"instant ALTER metadata BLOB: {exc}") from None
        if cut:
            raise InstantError(f"instant ALTER metadata BLOB of {ref.length} bytes")
        self.index = rebuild_clustered(self.table, self.index, parse_field_map(blob))
        n_core = self.mariadb_core if self.mariadb_core is not None else len(self.index.fields)
        self.core_fields = self.index.fields[:n_core]
        self._specs.clear()
        self.altered = True

    def _metadata_layout(
        self, page: bytes, rec: int, status: int
    ) -> tuple[tuple[IndexField, ...], ZipIndex, int]:
        """The fields of an instant-ALTER metadata record (its BLOB reference left out), its
        layout with the reference in place, and the header bytes before its null bitmap."""
        below = rec - REC_N_NEW_EXTRA_BYTES - 1
        n_add, skip = page[below], 1
        if n_add & 0x80:
            n_add, skip = (n_add & 0x7F) | page[below - 1] << 7, 2
        if status != REC_STATUS_INSTANT:
            raise InstantError(f"metadata record at {rec} has status {status}")
        core = self.mariadb_core if self.mariadb_core is not None else len(self.core_fields)
        fields = self.index.fields[: core + n_add]
        if core + n_add > len(self.index.fields):
            raise RecordError(f"metadata record at {rec} has more fields than the index")
        specs = [FieldSpec(f.fixed_len(True), f.column.nullable, f.column.big) for f in fields]
        specs.insert(first_user_field(self.index), FieldSpec(METADATA_REF_SIZE, False, False))
        z = ZipIndex(tuple(specs), True, None, sum(sp.nullable for sp in specs))
        return fields, z, skip

    def _compact_fields(
        self, page: bytes, rec: int, info: int, status: int
    ) -> tuple[tuple[IndexField, ...], int]:
        """The fields this record stores and the header bytes before its null bitmap."""
        fields = self.index.fields
        below = rec - REC_N_NEW_EXTRA_BYTES - 1
        if status == REC_STATUS_INSTANT:  # MariaDB
            n_add = page[below]
            skip = 1
            if n_add & 0x80:
                n_add = (n_add & 0x7F) | page[below - 1] << 7
                skip = 2
            core = self.mariadb_core if self.mariadb_core is not None else len(self.core_fields)
            n = core + 1 + n_add
            if n > len(fields):
                raise RecordError(f"record at {rec} has {n} fields, the index {len(fields)}")
            return fields[:n], skip
        if info & REC_INFO_VERSION_FLAG:
            version = page[below]
            return tuple(f for f in fields if f.column.in_version(version)), 1
        if info & REC_INFO_INSTANT_FLAG:
            n = page[below]
            skip = 1
            if n & 0x80:
                n = (n & 0x7F) << 8 | page[below - 1]
                skip = 2
            if n > len(fields):
                raise RecordError(f"record at {rec} has {n} fields, the index {len(fields)}")
            return fields[:n], skip
        return self.core_fields, 0

    def _compact(self, page: bytes, metadata: bool) -> Iterator[tuple[int, _Raw]]:
        out: list[tuple[int, _Raw]] = []
        spans: list[Span] = []
        for head in iter_records(page):
            if head.status == REC_STATUS_NODE_PTR:
                raise RecordsError(f"record at {head.origin} is a node pointer on a leaf page")
            misfit = None
            if metadata and _is_alter_metadata(head.info_bits) and self.index.clustered:
                self._install_alter_metadata(page, head.origin, True)
                fields, z, skip = self._metadata_layout(page, head.origin, head.status)
                lay = record_fields(page, head.origin, z, False, skip)
                got = list(lay.fields)
                del got[first_user_field(self.index)]  # the BLOB reference
            else:
                fields, skip = self._compact_fields(page, head.origin, head.info_bits, head.status)
                z = self._zindex(fields)
                lay = record_fields(page, head.origin, z, False, skip)
                got = list(lay.fields)
                if z.n_nullable == sum(sp.nullable for sp in z.fields):
                    base = head.origin - REC_N_NEW_EXTRA_BYTES - 1 - skip
                    misfit = null_padding_misfit(page, base, z.n_nullable)
            end = lay.fields[-1].end if lay.fields else head.origin
            start = head.origin - REC_N_NEW_EXTRA_BYTES - skip - lay.extra_len
            spans.append(Span(start, head.origin, end))
            values: list[bytes | None] = []
            extern: list[bool] = []
            for f in got:
                values.append(None if f.null else bytes(page[f.start : f.end]))
                extern.append(f.extern)
            raw = _Raw(
                bool(head.info_bits & REC_INFO_DELETED_FLAG),
                bool(head.info_bits & REC_INFO_MIN_REC_FLAG),
                values,
                extern,
                len(fields),
                fields,
                misfit,
            )
            raw.misfit = raw.misfit or self._fields_misfit(raw, True)
            out.append((head.origin, raw))
        free_head = int.from_bytes(page[38 + 6 : 38 + 8], "big")
        free = [h.origin for h in iter_free(page, free_head)] if free_head else []
        bad = heap_misfit(page, spans, free)
        if bad is not None:
            for origin, raw in out:
                if origin == bad[0] and raw.misfit is None:
                    raw.misfit = bad[1]
        yield from out

    def _fields_misfit(self, raw: _Raw, compact: bool) -> str | None:
        for f, val, ext in zip(raw.fields, raw.values, raw.extern, strict=False):
            why = field_misfit(f, val, ext, compact)
            if why is not None:
                return why
        return None

    def _redundant(self, page: bytes, metadata: bool) -> Iterator[tuple[int, _Raw]]:
        for rec in iter_redundant(page):
            if metadata and rec.min_rec and rec.deleted and self.index.clustered:
                self._install_alter_metadata(page, rec.origin, False)
                cut = first_user_field(self.index)
                rec = RedundantRecord(
                    rec.origin,
                    rec.deleted,
                    rec.min_rec,
                    rec.values[:cut] + rec.values[cut + 1 :],
                    rec.extern[:cut] + rec.extern[cut + 1 :],
                )
            fields_all = self.index.fields
            raw = _Raw(
                rec.deleted,
                rec.min_rec,
                rec.values,
                rec.extern,
                rec.n_fields,
                fields_all[: rec.n_fields],
            )
            if rec.n_fields > len(fields_all) or (
                rec.n_fields < len(fields_all) and not self.may_be_short and not rec.min_rec
            ):
                raw.misfit = f"it stores {rec.n_fields} fields, the index has {len(fields_all)}"
            raw.misfit = raw.misfit or self._fields_misfit(raw, False)
            yield rec.origin, raw

    # --- values ----------------------------------------------------------------------------

    def _value(self, col: Column, raw: bytes | None, ext: bool, row: Row) -> Any:
        if raw is None:
            return None
        if ext:
            if len(raw) < BTR_EXTERN_FIELD_REF_SIZE:
                row.errors[col.name] = "external field shorter than its reference"
                return None
            local, ref = raw[:-BTR_EXTERN_FIELD_REF_SIZE], raw[-BTR_EXTERN_FIELD_REF_SIZE:]
            try:
                more, cut = read_extern(
                    self.get_page, ExternRef.parse(ref), max(0, self.extern_limit - len(local))
                )
            except LobError as exc:
                row.errors[col.name] = str(exc)
                return None
            raw = local + more
            if cut:
                row.truncated.append(col.name)
                if col.kind is Kind.JSON:  # a cut JSON document has no text
                    return hex_bytes(raw)
        try:
            return decode_value(col, raw)
        except (ColumnError, ParseError) as exc:
            row.errors[col.name] = str(exc)
            return hex_bytes(raw)

    def rows(self, page_no: int, page: bytes, *, metadata: bool = False) -> Iterator[Row]:
        """The user records of leaf page ``page`` in key order (delete-marked ones flagged).

        ``metadata``: the page is the index's first leaf; a MariaDB metadata record there
        sets the instantly added columns' values and is not a row.
        """
        compact = page_is_compact(page)
        raws = self._compact(page, metadata) if compact else self._redundant(page, metadata)
        for origin, raw in raws:
            if raw.min_rec:
                if metadata and (raw.n_stored > len(self.core_fields) or self.defaults):
                    self._take_metadata(raw)
                continue
            row = Row(page_no, origin, raw.deleted, {}, misfit=raw.misfit)
            if raw.fields and raw.fields[0] is self.index.fields[0]:
                row.misfit = row.misfit or self.key_order.misfit(raw.values[0])
            got = {f.column.name: i for i, f in enumerate(raw.fields)}
            stored_apart: set[str] = set()  # values on other pages: their errors are damage there
            for f in self.output_fields():
                col = f.column
                i = got.get(col.name)
                if i is None:
                    dflt = self.defaults.get(col.name)
                    row.fields[col.name] = (
                        None if dflt is None else self._value(col, dflt, False, row)
                    )
                else:
                    val, ext = raw.values[i], raw.extern[i]
                    if ext:
                        stored_apart.add(col.name)
                    row.fields[col.name] = self._value(col, val, ext, row)
                    if row.misfit is None and val is not None and not ext:
                        row.misfit = value_misfit(col, val)
            # a value that does not decode is a misfit, unless it is stored on other pages (a
            # broken external chain is damage in those pages: the value's error says so)
            here = [(k, v) for k, v in row.errors.items() if k not in stored_apart]
            if row.misfit is None and here:
                name, why = here[0]
                row.misfit = f"{name}: {why}"
            yield row

    def _take_metadata(self, raw: _Raw) -> None:
        if raw.deleted and not self.altered:
            raise RecordsError("instant ALTER metadata record outside a clustered index")
        for f, val, ext in zip(raw.fields, raw.values, raw.extern, strict=True):
            if f not in self.core_fields and not ext:
                self.defaults[f.column.name] = val

    def output_fields(self) -> list[IndexField]:
        """The fields a row shows: the table's columns for the clustered index (table order),
        the index's own fields for a secondary one."""
        if self.index.clustered:
            by_name = {f.column.name: f for f in self.index.fields}
            return [by_name[c.name] for c in self.table.columns if c.name in by_name]
        return [f for f in self.index.fields if not f.column.hidden]
