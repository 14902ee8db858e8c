"""The ``.frm`` file of a MySQL 5.x / MariaDB table → what its columns are, by name.

A ``.cfg`` export file gives InnoDB's view of each column (its bytes, not its SQL type): a
DECIMAL's precision and scale, an ENUM's or SET's member names and MariaDB's UUID / INET4 /
INET6 types are not in it. The ``.frm`` beside the ``.ibd`` (MySQL 5.7, MariaDB) holds them;
this module reads only those facts (``TABLE_SHARE::init_from_binary_frm_image`` in MariaDB's
``sql/table.cc``, the same layout MySQL 5.x writes). Multi-byte integers are little-endian.

* header (64 bytes): ``FE 01``, frm version at 2, the extra2 segment's length at 4 (2),
  MySQL version at 51 (4); the extra2 segment at 64 (MariaDB: typed sections, 130 = each
  field's data type name such as ``uuid``); the forminfo offset right after it (4).
* forminfo (288 bytes): field count at 258, screens' length at 260, names' length at 268,
  interval count at 270, intervals' length at 274 (2 each); then the screens, then one
  17-byte record per field (length at 3, pack flag at 8, interval number at 12, type at 13),
  then the names and the ENUM/SET intervals (each a list ``<sep>a<sep>b<sep>\\0``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ibdtool.parsers.decimals import decimal_size
from ibdtool.parsers.errors import ParseError
from ibdtool.parsers.tabledef import Column, Kind, TableDef

FRM_HEADER_SIZE = 64
FRM_FORMINFO_SIZE = 288
FIELD_PACK_LENGTH = 17
EXTRA2_FIELD_DATA_TYPE_INFO = 130
MYSQL_TYPE_NEWDECIMAL, MYSQL_TYPE_ENUM, MYSQL_TYPE_SET = 246, 247, 248
FIELDFLAG_DECIMAL = 1  # in a numeric field's pack flag: signed
FIELDFLAG_DEC_SHIFT = 8
MAX_FRM_SIZE = 64 << 20


class FrmError(ParseError):
    """Bytes that are not a ``.frm`` file ibdtool can read."""


@dataclass(frozen=True, slots=True)
class FrmColumn:
    name: str
    mysql_type: int  # enum_field_types
    precision: int = 0  # DECIMAL
    scale: int = 0
    elements: tuple[str, ...] = ()  # ENUM / SET members
    type_name: str = ""  # MariaDB's data type plugin: uuid, inet4, inet6


def _u16(b: bytes, at: int) -> int:
    if at + 2 > len(b):
        raise FrmError(f"the file ends at byte {len(b)}, inside a field at {at}")
    return int.from_bytes(b[at : at + 2], "little")


def _u32(b: bytes, at: int) -> int:
    if at + 4 > len(b):
        raise FrmError(f"the file ends at byte {len(b)}, inside a field at {at}")
    return int.from_bytes(b[at : at + 4], "little")


def _lists(data: bytes, count: int) -> list[list[str]]:
    """``fix_type_pointers``: ``count`` lists, each ``<sep>v1<sep>v2<sep>\\0``."""
    out: list[list[str]] = []
    pos = 0
    for _ in range(count):
        if pos >= len(data):
            raise FrmError("a name list runs past its section")
        sep = data[pos : pos + 1]
        end = data.find(sep + b"\0", pos + 1)
        if end < 0:
            raise FrmError("a name list has no end")
        body = data[pos + 1 : end]
        out.append([v.decode("utf-8", "replace") for v in body.split(sep)] if body else [])
        pos = end + 2
    return out


def _lenc(b: bytes, pos: int) -> tuple[int, int]:
    """A length-encoded integer (``net_field_length``): (value, next position)."""
    if pos >= len(b):
        raise FrmError("data type info ends inside a length")
    first = b[pos]
    if first < 251:
        return first, pos + 1
    size = {252: 2, 253: 3, 254: 8}.get(first)
    if size is None or pos + 1 + size > len(b):
        raise FrmError("data type info has a bad length")
    return int.from_bytes(b[pos + 1 : pos + 1 + size], "little"), pos + 1 + size


def _type_names(b: bytes, length: int) -> dict[int, str]:
    """MariaDB's extra2 segment: field number → data type name (section 130)."""
    pos, end = FRM_HEADER_SIZE, FRM_HEADER_SIZE + length
    if length == 0 or b[pos : pos + 1] == b"/":  # old files: no typed sections
        return {}
    names: dict[int, str] = {}
    while pos + 3 <= end:
        kind = b[pos]
        size = b[pos + 1]
        pos += 2
        if size == 0:
            size = _u16(b, pos)
            pos += 2
        if size == 0 or pos + size > end:
            raise FrmError("an extra2 section runs past its segment")
        if kind == EXTRA2_FIELD_DATA_TYPE_INFO:
            sec, p = b[pos : pos + size], 0
            while p < len(sec):
                fieldnr, p = _lenc(sec, p)
                n, p = _lenc(sec, p)
                names[fieldnr] = sec[p : p + n].decode("ascii", "replace").lower()
                p += n
        pos += size
    return names


def parse_frm(b: bytes) -> list[FrmColumn]:
    """The columns of a ``.frm`` file, in table order."""
    if len(b) > MAX_FRM_SIZE:
        raise FrmError(f"{len(b)} bytes: not a .frm file")
    if len(b) < FRM_HEADER_SIZE + FRM_FORMINFO_SIZE or b[0] != 0xFE or b[1] != 0x01:
        raise FrmError("not a .frm file (no FE 01 header)")
    if b[2] - 6 < 3:  # FRM_VER + 3: the 17-byte field records of MySQL 4.1+
        raise FrmError(f".frm version {b[2]} is older than MySQL 4.1")
    extra2_len = _u16(b, 4)
    mysql_version = _u32(b, 51)
    forminfo = _u32(b, FRM_HEADER_SIZE + extra2_len)
    if forminfo + FRM_FORMINFO_SIZE > len(b):
        raise FrmError(f"forminfo offset {forminfo} beyond the file")
    fi = b[forminfo : forminfo + FRM_FORMINFO_SIZE]
    n_fields, screens = _u16(fi, 258), _u16(fi, 260)
    n_length, n_intervals, int_length = _u16(fi, 268), _u16(fi, 270), _u16(fi, 274)
    recs = forminfo + FRM_FORMINFO_SIZE + screens
    names_at = recs + n_fields * FIELD_PACK_LENGTH
    if names_at + n_length + int_length > len(b):
        raise FrmError("the field records and names run past the file")
    (names,) = _lists(b[names_at : names_at + n_length], 1)
    if len(names) != n_fields:
        raise FrmError(f"{len(names)} names for {n_fields} fields")
    intervals = _lists(b[names_at + n_length : names_at + n_length + int_length], n_intervals)
    types = _type_names(b, extra2_len)
    max_dec = 63 if mysql_version >= 100200 else 31
    out = []
    for i in range(n_fields):
        rec = b[recs + i * FIELD_PACK_LENGTH : recs + (i + 1) * FIELD_PACK_LENGTH]
        length, pack_flag, interval_nr, ftype = _u16(rec, 3), _u16(rec, 8), rec[12], rec[13]
        col = FrmColumn(names[i], ftype, type_name=types.get(i, ""))
        if ftype == MYSQL_TYPE_NEWDECIMAL:
            scale = (pack_flag >> FIELDFLAG_DEC_SHIFT) & max_dec
            unsigned = not pack_flag & FIELDFLAG_DECIMAL
            precision = length - (1 if scale else 0) - (0 if unsigned or not length else 1)
            col = FrmColumn(names[i], ftype, precision, scale)
        elif 0 < interval_nr <= len(intervals):  # ENUM / SET
            col = FrmColumn(names[i], ftype, elements=tuple(intervals[interval_nr - 1]))
        out.append(col)
    return out


def refine_with_frm(table: TableDef, frm: list[FrmColumn]) -> TableDef:
    """A ``.cfg`` definition with what only the ``.frm`` knows: DECIMAL precision and scale,
    ENUM/SET member names, MariaDB's UUID/INET4/INET6 types (matched by column name)."""
    by_name = {c.name: c for c in frm}
    new: dict[str, Column] = {}
    for col in table.columns:
        f = by_name.get(col.name)
        if f is None:
            continue
        kind = _TYPE_KINDS.get(f.type_name)
        if kind is not None and col.length == _TYPE_SIZES[kind]:
            new[col.name] = replace(col, kind=kind, charset=None)
        elif f.mysql_type == MYSQL_TYPE_NEWDECIMAL and col.length == decimal_size(
            f.precision, f.scale
        ):
            new[col.name] = replace(col, kind=Kind.DECIMAL, precision=f.precision, scale=f.scale)
        elif f.elements and col.kind in (Kind.ENUM, Kind.SET, Kind.INT):
            kind = Kind.SET if f.mysql_type == MYSQL_TYPE_SET else Kind.ENUM
            new[col.name] = replace(col, kind=kind, elements=f.elements)
    if not new:
        return table

    def swap(c: Column) -> Column:
        return new.get(c.name, c) if not c.hidden else c

    indexes = tuple(
        replace(ix, fields=tuple(replace(f, column=swap(f.column)) for f in ix.fields))
        for ix in table.indexes
    )
    columns = tuple(swap(c) for c in table.columns)
    kept = [n for n in table.notes if not any(w in n for w in ("DECIMAL", "ENUM/SET"))]
    notes = (*kept, "types from the .frm file")
    if any(c.kind is Kind.RAW for c in columns):
        notes += ("DECIMAL precision and scale are not in the .cfg or .frm file: shown as hex",)
    return replace(table, columns=columns, indexes=indexes, notes=notes)


_TYPE_KINDS = {"uuid": Kind.UUID, "inet4": Kind.INET4, "inet6": Kind.INET6}
_TYPE_SIZES = {Kind.UUID: 16, Kind.INET4: 4, Kind.INET6: 16}
