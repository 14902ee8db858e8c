"""MariaDB 10.4+ instant DROP COLUMN and column reorder: the clustered index as it is stored.

An instant ADD COLUMN (10.3+) only appends fields; 10.4 (MDEV-15562) can also drop a column or
move one (``ADD COLUMN … FIRST``, ``MODIFY … AFTER``) without rebuilding, so the clustered
index's stored fields no longer follow the table's column order. What they are is kept in the
tablespace itself:

* the clustered root page's type is ``FIL_PAGE_TYPE_INSTANT`` (18) and ``PAGE_INSTANT`` holds
  the count of "core" fields (those every record has) shifted left by 3;
* the first record of the index is the metadata record ("default row", min-rec flag set); with
  the delete-mark flag also set it carries, after DB_ROLL_PTR, a 20-byte reference to a BLOB
  page (``btr_cur_instant_init_low``): a 4-byte count of the fields after DB_ROLL_PTR, then 2
  bytes per field (``dict_table_t::serialise_columns``): bit 15 set for a dropped column
  (bit 14 then: it was NOT NULL; the low 10 bits 0 for a variable length up to 255 bytes, 1 for
  a longer one, 1 + L for a fixed length L), else the low 10 bits are the column's place among
  the table's stored columns;
* the metadata record's other fields, after that reference, are the values instantly added
  columns take in records written before them; it also has one field more than it counts;
* when the table has been through such an ALTER, the infimum and supremum records are zeroed
  and the supremum's 8th byte holds the null-bitmap size of a record of core fields
  (``btr_cur_instant_root_init``).

Dropped columns stay in the records (old ones keep their value, new ones store NULL or an
empty/zero value); they become hidden fields here and are never shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from construct import Array, ConstructError, Int16ub, Int32ub, Struct, this

from ibdtool.parsers.errors import ParseError
from ibdtool.parsers.tabledef import Column, IndexDef, IndexField, Kind, TableDef

# --- the metadata BLOB, declared once --------------------------------------------------------
MetadataBlob = Struct("n_fields" / Int32ub, "map" / Array(this.n_fields, Int16ub))

FIELD_DROPPED = 1 << 15
FIELD_NOT_NULL = 1 << 14
FIELD_IND = (1 << 10) - 1
REC_MAX_N_FIELDS = 1023
DICT_MAX_FIXED_COL_LEN = 768
PAGE_NEW_INFIMUM = 99
PAGE_NEW_SUPREMUM = 112
PAGE_OLD_INFIMUM = 101
PAGE_OLD_SUPREMUM = 116
METADATA_REF_SIZE = 20


class InstantError(ParseError):
    """Instant ALTER metadata that cannot be what MariaDB wrote."""


@dataclass(frozen=True, slots=True)
class MapEntry:
    """One stored field after DB_ROLL_PTR."""

    dropped: bool
    not_null: bool  # a dropped column that was NOT NULL
    ind: int  # column place, or for a dropped column its length code

    @property
    def fixed_len(self) -> int:
        return self.ind - 1 if self.dropped and self.ind > 1 else 0


def parse_field_map(blob: bytes) -> list[MapEntry]:
    """The field map of a metadata BLOB (``dict_table_t::deserialise_columns``)."""
    try:
        parsed: Any = MetadataBlob.parse(blob)
    except (ConstructError, ValueError, OverflowError, MemoryError):
        raise InstantError("instant ALTER metadata BLOB is damaged") from None
    if parsed.n_fields >= REC_MAX_N_FIELDS - 3:
        raise InstantError(f"instant ALTER metadata names {parsed.n_fields} fields")
    out = []
    for v in parsed.map:
        e = MapEntry(bool(v & FIELD_DROPPED), bool(v & FIELD_NOT_NULL), v & FIELD_IND)
        if e.dropped and e.ind > DICT_MAX_FIXED_COL_LEN + 1:
            raise InstantError(f"dropped column of fixed length {e.ind - 1}")
        out.append(e)
    return out


def core_null_bytes(root: bytes, compact: bool) -> int | None:
    """The null-bitmap size of a core record, when the root's infimum/supremum hold it."""
    inf, sup = (
        (PAGE_NEW_INFIMUM, PAGE_NEW_SUPREMUM) if compact else (PAGE_OLD_INFIMUM, PAGE_OLD_SUPREMUM)
    )
    if any(root[inf : inf + 8]) or any(root[sup : sup + 7]):  # "infimum", "supremum": intact
        return None
    return root[sup + 7]


def first_user_field(clustered: IndexDef) -> int:
    """Fields before the first one the map describes: the key, DB_TRX_ID, DB_ROLL_PTR."""
    for i, f in enumerate(clustered.fields):
        if f.column.name == "DB_ROLL_PTR" and f.column.kind is Kind.SYS:
            return i + 1
    raise InstantError("the clustered index has no DB_ROLL_PTR")


def metadata_ref_offset(clustered: IndexDef) -> int:
    """Where the BLOB reference starts in a COMPACT/DYNAMIC metadata record, from its origin:
    MariaDB writes the key's variable-length fields empty there, so only fixed lengths count."""
    n = first_user_field(clustered) - 2
    return sum(f.fixed_len(True) for f in clustered.fields[:n]) + 13


def dropped_column(n: int, entry: MapEntry) -> Column:
    """A hidden stand-in with the stored shape of an instantly dropped column."""
    name = f"(dropped {n})"
    nullable = not entry.not_null
    if entry.ind == 0:
        return Column(name, Kind.VARCHAR, 255, nullable=nullable, hidden=True)
    if entry.ind == 1:
        return Column(name, Kind.VARCHAR, 256, nullable=nullable, hidden=True)
    return Column(name, Kind.RAW, entry.fixed_len, nullable=nullable, hidden=True)


def rebuild_clustered(table: TableDef, clustered: IndexDef, fmap: list[MapEntry]) -> IndexDef:
    """The clustered index's stored fields: the key and system fields, then the map's."""
    first = first_user_field(clustered)
    have = {f.column.name: f for f in clustered.fields[first:]}
    fields = list(clustered.fields[:first])
    n_dropped = 0
    for e in fmap:
        if e.dropped:
            n_dropped += 1
            fields.append(IndexField(dropped_column(n_dropped, e)))
            continue
        if e.ind >= len(table.columns):
            raise InstantError(
                f"instant ALTER metadata names column {e.ind}; the definition has "
                f"{len(table.columns)} (is it this table's?)"
            )
        col = table.columns[e.ind]
        fields.append(have.get(col.name) or IndexField(col))
    stored = {f.column.name for f in fields}
    missing = [f.column.name for f in clustered.fields[first:] if f.column.name not in stored]
    missing = [n for n in missing if not n.startswith("(dropped")]
    if missing:
        raise InstantError(
            f"column {missing[0]} is not in the instant ALTER metadata (is the definition "
            "this table's?)"
        )
    return IndexDef(
        clustered.name,
        tuple(fields),
        True,
        clustered.n_key,
        index_id=clustered.index_id,
        root=clustered.root,
    )
