"""Named fields and labelled byte regions of one page, for a page view and a hex dump.

innodb_ruby's pages yield ``(offset, length, name)`` regions that drive its illustrations; this
module does the same for the two images a page view shows: the *stored* image (as on disk,
compressed or not) and the *logical* page (decompressed). Each image gets groups of fields
named as in the server sources and regions that colour its hex dump. Pure decoding: bytes and
the :class:`~parsers.page.PageInfo` of :func:`~parsers.page.decode_page` in, records out. Rare
structures are parsed with the plain construct declarations of :mod:`parsers.structs`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from parsers.constants import (
    FIL_NULL,
    FIL_PAGE_COMPRESSED,
    FIL_PAGE_COMPRESSED_AND_ENCRYPTED,
    FIL_PAGE_DATA,
    FIL_PAGE_INODE,
    FIL_PAGE_PAGE_COMPRESSED,
    FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED,
    FIL_PAGE_SDI_BLOB,
    FIL_PAGE_TYPE_BLOB,
    FIL_PAGE_TYPE_FSP_HDR,
    FIL_PAGE_TYPE_XDES,
    MARIADB_ALGORITHMS,
    MYSQL_ALGORITHMS,
    Algorithm,
    Vendor,
    page_type_name,
)
from parsers.page import PageInfo
from parsers.space import SpaceFormat, sdi_offset, xdes_size
from parsers.structs import (
    FSEG_ARR_OFFSET,
    FSEG_MAGIC_N_VALUE,
    FSP_HEADER_OFFSET,
    MARIADB_CLASSIC_COMP_OFFSET,
    MARIADB_CLASSIC_ENC_PAYLOAD,
    MARIADB_CLASSIC_PAYLOAD,
    MARIADB_FCRC32_PAYLOAD,
    MYSQL_COMPRESSION_META_OFFSET,
    PAGE_DATA,
    PAGE_HEADER,
    XDES_ARR_OFFSET,
    FilHeader,
    FilTrailer,
    FspHeader,
    IndexHeader,
    LobHeader,
    MariaDBClassicCompHeader,
    MariaDBClassicEncCompHeader,
    MySQLCompressionMeta,
    inode_entry,
)
from parsers.xdes import XDES_NOT_INITED, decode_descriptor_page

#: Region names, in the order a legend lists them.
REGION_NAMES = (
    "fil_header",
    "compression",
    "payload",
    "padding",
    "trailer",
    "index_header",
    "fseg",
    "records",
    "free",
    "directory",
    "fsp_header",
    "xdes",
    "inode",
    "lob_header",
    "data",
)

PAGE_NEW_SUPREMUM_END = 120
PAGE_OLD_SUPREMUM_END = 125
PAGE_DIR = 8  # the directory ends 8 bytes before the page end (§5.2)
_DIRECTIONS = {1: "LEFT", 2: "RIGHT", 3: "SAME_REC", 4: "SAME_PAGE", 5: "NO_DIRECTION"}


@dataclass(frozen=True, slots=True)
class Field:
    """One on-disk field: its server name, where it is, and its value as text."""

    name: str
    offset: int
    size: int
    value: str
    note: str = ""


@dataclass(frozen=True, slots=True)
class FieldGroup:
    """A structure of the page (FIL header, index header, XDES array…)."""

    title: str
    fields: tuple[Field, ...] = ()
    #: free-form rows for arrays (one line per XDES entry or inode)
    lines: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Region:
    """Bytes ``[start, end)`` of an image belong to the structure ``name``."""

    start: int
    end: int
    name: str


@dataclass(frozen=True, slots=True)
class Layout:
    """Fields and regions of one image."""

    groups: tuple[FieldGroup, ...]
    regions: tuple[Region, ...]


def _page_ref(n: int) -> str:
    return "FIL_NULL" if n == FIL_NULL else str(n)


def _addr(a: Any) -> str:
    return "FIL_NULL" if a.page == FIL_NULL else f"{a.page}:{a.offset}"


def _flst(base: Any) -> str:
    return f"len {base.length}, first {_addr(base.first)}, last {_addr(base.last)}"


def _clip(regions: list[Region], size: int) -> tuple[Region, ...]:
    out = [Region(max(0, r.start), min(size, r.end), r.name) for r in regions]
    return tuple(r for r in out if r.end > r.start)


# --- FIL header and trailer (§1) -------------------------------------------------------------


def _fil_group(page: bytes, info: PageInfo, fmt: SpaceFormat, title: str) -> FieldGroup:
    h = FilHeader.parse(page[:FIL_PAGE_DATA])
    vendor = fmt.vendor
    stored = h.page_type
    if fmt.full_crc32:
        first = Field("FIL_PAGE_SPACE_OR_CHKSUM", 0, 4, str(h.checksum), "key version (0: plain)")
    elif stored in (FIL_PAGE_PAGE_COMPRESSED, FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED):
        first = Field("FIL_PAGE_SPACE_OR_CHKSUM", 0, 4, f"0x{h.checksum:08x}", "no checksum")
    else:
        first = Field("FIL_PAGE_SPACE_OR_CHKSUM", 0, 4, f"0x{h.checksum:08x}", "checksum")
    mysql8_page0 = info.page_no == 0 and fmt.server_version is not None
    if fmt.full_crc32 and stored & 0x8000:
        type_note = f"page_compressed, {(stored & 0x7FFF) << 8} bytes stored"
    else:
        type_note = page_type_name(stored, vendor)
    flush_note = ""
    if stored in (FIL_PAGE_COMPRESSED, FIL_PAGE_COMPRESSED_AND_ENCRYPTED):
        flush_note = "compression metadata"
    elif stored in (FIL_PAGE_PAGE_COMPRESSED, FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED):
        flush_note = "algorithm / key version"
    fields: tuple[Field, ...] = (
        first,
        Field("FIL_PAGE_OFFSET", 4, 4, str(h.page_no), "page number"),
        Field(
            "FIL_PAGE_SRV_VERSION" if mysql8_page0 else "FIL_PAGE_PREV",
            8,
            4,
            str(h.prev) if mysql8_page0 else _page_ref(h.prev),
        ),
        Field(
            "FIL_PAGE_SPACE_VERSION" if mysql8_page0 else "FIL_PAGE_NEXT",
            12,
            4,
            str(h.next) if mysql8_page0 else _page_ref(h.next),
        ),
        Field("FIL_PAGE_LSN", 16, 8, str(h.lsn)),
        Field("FIL_PAGE_TYPE", 24, 2, f"{stored} (0x{stored:04x})", type_note),
    )
    if not (fmt.full_crc32 and stored & 0x8000):  # there the payload starts at 26 (§3.2)
        fields += (
            Field("FIL_PAGE_FILE_FLUSH_LSN", 26, 8, f"0x{h.flush_lsn:016x}", flush_note),
            Field("FIL_PAGE_SPACE_ID", 34, 4, str(h.space_id)),
        )
    return FieldGroup(title, fields)


def _trailer_group(page: bytes, size: int, fcrc32: bool) -> FieldGroup:
    t = FilTrailer.parse(page[size - 8 : size])
    if fcrc32:
        return FieldGroup(
            "FIL trailer (full_crc32)",
            (
                Field("FIL_PAGE_FCRC32_END_LSN", size - 8, 4, f"0x{t.old_checksum:08x}"),
                Field("FIL_PAGE_FCRC32_CHECKSUM", size - 4, 4, f"0x{t.lsn_low:08x}", "CRC-32C"),
            ),
        )
    return FieldGroup(
        "FIL trailer",
        (
            Field("FIL_PAGE_END_LSN_OLD_CHKSUM", size - 8, 4, f"0x{t.old_checksum:08x}"),
            Field("(LSN low 32 bits)", size - 4, 4, f"0x{t.lsn_low:08x}"),
        ),
    )


# --- the stored image ------------------------------------------------------------------------


def stored_layout(stored: bytes, info: PageInfo, fmt: SpaceFormat) -> Layout:
    """Fields and regions of the image as the file holds it (§1, §2.1, §3.1, §3.2, §7.1)."""
    size = len(stored)
    if info.empty:
        return Layout((FieldGroup("All-zero page (never written)"),), (Region(0, size, "free"),))
    groups = [_fil_group(stored, info, fmt, "FIL header (stored)")]
    regions = [Region(0, FIL_PAGE_DATA, "fil_header")]
    st = info.stored_type
    if fmt.full_crc32 and st & 0x8000:
        groups_, regions_ = _fcrc32_compressed(stored, info, fmt)
        groups += groups_
        regions += regions_
    elif st in (FIL_PAGE_COMPRESSED, FIL_PAGE_COMPRESSED_AND_ENCRYPTED) and not fmt.zip:
        m = MySQLCompressionMeta.parse(stored[MYSQL_COMPRESSION_META_OFFSET:FIL_PAGE_DATA])
        algo = MYSQL_ALGORITHMS.get(m.algorithm)
        end = FIL_PAGE_DATA + m.compressed_size
        o = MYSQL_COMPRESSION_META_OFFSET
        groups.append(
            FieldGroup(
                "MySQL compression metadata (§2.1)",
                (
                    Field("FIL_PAGE_VERSION", o, 1, str(m.version)),
                    Field(
                        "FIL_PAGE_ALGORITHM_V1",
                        o + 1,
                        1,
                        str(m.algorithm),
                        algo.value if algo else "unknown",
                    ),
                    Field(
                        "FIL_PAGE_ORIGINAL_TYPE_V1",
                        o + 2,
                        2,
                        str(m.original_type),
                        page_type_name(m.original_type, Vendor.MYSQL),
                    ),
                    Field("FIL_PAGE_ORIGINAL_SIZE_V1", o + 4, 2, str(m.original_size)),
                    Field("FIL_PAGE_COMPRESS_SIZE_V1", o + 6, 2, str(m.compressed_size)),
                ),
            )
        )
        regions += [
            Region(o, o + 8, "compression"),
            Region(FIL_PAGE_DATA, end, "payload"),
            Region(end, size, "padding"),
        ]
    elif st == FIL_PAGE_PAGE_COMPRESSED and fmt.vendor is not Vendor.MYSQL:
        h = MariaDBClassicCompHeader.parse(stored[MARIADB_CLASSIC_COMP_OFFSET:40])
        algo = MARIADB_ALGORITHMS.get(h.algorithm)
        end = MARIADB_CLASSIC_PAYLOAD + h.comp_size
        groups.append(
            FieldGroup(
                "MariaDB page_compressed header (§3.1)",
                (
                    Field(
                        "FIL_PAGE_COMP_ALGO",
                        26,
                        8,
                        str(h.algorithm),
                        algo.value if algo else "unknown",
                    ),
                    Field("FIL_PAGE_COMP_SIZE", 38, 2, str(h.comp_size)),
                ),
            )
        )
        regions += [
            Region(26, 34, "compression"),
            Region(38, 40, "compression"),
            Region(40, end, "payload"),
            Region(end, size, "padding"),
        ]
    elif st == FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED and fmt.vendor is not Vendor.MYSQL:
        h = MariaDBClassicEncCompHeader.parse(stored[MARIADB_CLASSIC_COMP_OFFSET:42])
        algo = MARIADB_ALGORITHMS.get(h.algorithm)
        end = MARIADB_CLASSIC_ENC_PAYLOAD + h.comp_size
        groups.append(
            FieldGroup(
                "MariaDB page_compressed + encrypted header (§3.1)",
                (
                    Field("FIL_PAGE_KEY_VERSION", 26, 4, str(h.key_version)),
                    Field("post-encryption checksum", 30, 4, f"0x{h.post_enc_checksum:08x}"),
                    Field("FIL_PAGE_COMP_SIZE", 38, 2, str(h.comp_size)),
                    Field(
                        "FIL_PAGE_COMP_ALGO", 40, 2, str(h.algorithm), algo.value if algo else "?"
                    ),
                ),
            )
        )
        regions += [
            Region(26, 34, "compression"),
            Region(38, 42, "compression"),
            Region(42, end, "payload"),
            Region(end, size, "padding"),
        ]
    elif fmt.zip:
        regions += _zip_regions(info, size)
    else:
        groups.append(_trailer_group(stored, size, fmt.full_crc32))
        regions.append(Region(size - 8, size, "trailer"))
        regions.append(Region(FIL_PAGE_DATA, size - 8, "data"))
    return Layout(tuple(groups), _clip(regions, size))


def _fcrc32_compressed(
    stored: bytes, info: PageInfo, fmt: SpaceFormat
) -> tuple[list[FieldGroup], list[Region]]:
    """§3.2: the size in the type word, payload at 26, optional length byte, CRC-32C."""
    size = len(stored)
    image = (info.stored_type & 0x7FFF) << 8
    algo = fmt.fcrc32_algorithm or Algorithm.NONE
    fields = [
        Field("FIL_PAGE_TYPE", 24, 2, f"0x{info.stored_type:04x}", f"stored size {image}"),
        Field("(algorithm, from FSP flags)", 54, 0, algo.value),
    ]
    regions: list[Region] = []
    if not MARIADB_FCRC32_PAYLOAD + 4 < image < size:
        return [FieldGroup("MariaDB full_crc32 page_compressed (§3.2)", tuple(fields))], regions
    end = image - 4
    if algo in (Algorithm.LZ4, Algorithm.LZO, Algorithm.SNAPPY):
        fields.append(Field("length byte", image - 5, 1, str(stored[image - 5])))
        regions.append(Region(image - 5, image - 4, "compression"))
        end = image - 5
    crc = int.from_bytes(stored[image - 4 : image], "big")
    fields.append(Field("FIL_PAGE_FCRC32_CHECKSUM", image - 4, 4, f"0x{crc:08x}", "CRC-32C"))
    payload_end = MARIADB_FCRC32_PAYLOAD + (info.compressed_size or end - MARIADB_FCRC32_PAYLOAD)
    regions += [
        Region(MARIADB_FCRC32_PAYLOAD, min(payload_end, end), "payload"),
        Region(min(payload_end, end), end, "padding"),
        Region(image - 4, image, "trailer"),
        Region(image, size, "padding"),
    ]
    return [FieldGroup("MariaDB full_crc32 page_compressed (§3.2)", tuple(fields))], regions


def _zip_regions(info: PageInfo, size: int) -> list[Region]:
    """§7.1: a ROW_FORMAT=COMPRESSED page (no trailer; header, zlib stream, the rest)."""
    if info.index is None:
        return [Region(FIL_PAGE_DATA, size, "data")]
    out = [Region(PAGE_HEADER, 74, "index_header"), Region(74, PAGE_DATA, "fseg")]
    if info.zip_stream:
        out.append(Region(PAGE_DATA, PAGE_DATA + info.zip_stream, "payload"))
        out.append(Region(PAGE_DATA + info.zip_stream, size, "data"))
    return out


# --- the logical page ------------------------------------------------------------------------


def logical_layout(logical: bytes, info: PageInfo, fmt: SpaceFormat) -> Layout:
    """Type-specific structures of the decoded page (§4.1, §5.1, §9.2, §9.3)."""
    size = len(logical)
    if info.empty:
        return Layout((), (Region(0, size, "free"),))
    if info.real_type < 0:
        return Layout((FieldGroup("Body unreadable (encrypted or damaged)"),), ())
    groups: list[FieldGroup] = []
    regions = [Region(0, FIL_PAGE_DATA, "fil_header")]
    if info.is_compressed:
        groups.append(_fil_group(logical, info, fmt, "FIL header (decompressed)"))
    trailer = not fmt.zip
    rt = info.real_type
    if info.index is not None:
        g, r = _index(logical, info, fmt)
        groups += g
        regions += r
    elif rt == FIL_PAGE_TYPE_FSP_HDR:
        g, r = _fsp(logical, info, fmt)
        groups += g
        regions += r
    elif rt == FIL_PAGE_TYPE_XDES:
        xdes_group, xdes_region = _xdes(logical, info, fmt)
        groups.append(xdes_group)
        regions.append(xdes_region)
    elif rt == FIL_PAGE_INODE:
        inode_group, inode_regions = _inodes(logical, fmt)
        groups.append(inode_group)
        regions += inode_regions
    elif rt == FIL_PAGE_TYPE_BLOB or (rt == FIL_PAGE_SDI_BLOB and fmt.vendor is Vendor.MYSQL):
        h = LobHeader.parse(logical[FIL_PAGE_DATA : FIL_PAGE_DATA + 8])
        groups.append(
            FieldGroup(
                "BLOB header",
                (
                    Field("BTR_BLOB_PART_LEN", 38, 4, str(h.part_len)),
                    Field("BTR_BLOB_NEXT_PAGE_NO", 42, 4, _page_ref(h.next_page_no)),
                ),
            )
        )
        regions += [Region(38, 46, "lob_header"), Region(46, 46 + h.part_len, "data")]
    if trailer and not (fmt.full_crc32 and info.is_compressed):
        groups.append(_trailer_group(logical, size, fmt.full_crc32))
    if trailer:
        regions.append(Region(size - 8, size, "trailer"))
    return Layout(tuple(groups), _clip(regions, size))


def _index(page: bytes, info: PageInfo, fmt: SpaceFormat) -> tuple[list[FieldGroup], list[Region]]:
    h = IndexHeader.parse(page[PAGE_HEADER:PAGE_DATA])
    compact = bool(h.n_heap & 0x8000)
    direction = h.direction & 0x7 if fmt.vendor is Vendor.MARIADB else h.direction
    fields = (
        Field("PAGE_N_DIR_SLOTS", 38, 2, str(h.n_dir_slots)),
        Field("PAGE_HEAP_TOP", 40, 2, str(h.heap_top)),
        Field(
            "PAGE_N_HEAP",
            42,
            2,
            str(h.n_heap & 0x7FFF),
            "compact" if compact else "redundant",
        ),
        Field("PAGE_FREE", 44, 2, str(h.free)),
        Field("PAGE_GARBAGE", 46, 2, str(h.garbage)),
        Field("PAGE_LAST_INSERT", 48, 2, str(h.last_insert)),
        Field("PAGE_DIRECTION", 50, 2, str(direction), _DIRECTIONS.get(direction, "")),
        Field("PAGE_N_DIRECTION", 52, 2, str(h.n_direction)),
        Field("PAGE_N_RECS", 54, 2, str(h.n_recs)),
        Field("PAGE_MAX_TRX_ID", 56, 8, str(h.max_trx_id)),
        Field("PAGE_LEVEL", 64, 2, str(h.level), "leaf" if h.level == 0 else ""),
        Field(
            "PAGE_INDEX_ID",
            66,
            8,
            str(h.index_id),
            "SDI index" if h.index_id == 0xFFFFFFFFFFFFFFFF else "",
        ),
    )
    fill = info.index.fill if info.index else 0.0
    stats = (
        Field("(data bytes)", 0, 0, str(info.index.data_size if info.index else 0)),
        Field("(fill)", 0, 0, f"{100 * fill:.1f}%"),
    )
    seg = []
    for name, off, f in (
        ("PAGE_BTR_SEG_LEAF", 74, h.btr_seg_leaf),
        ("PAGE_BTR_SEG_TOP", 84, h.btr_seg_top),
    ):
        if f.space or f.page_no or f.offset:
            seg.append(Field(name, off, 10, f"space {f.space} page {f.page_no} offset {f.offset}"))
    groups = [
        FieldGroup("Index page header (§5.1)", fields + stats),
    ]
    if seg:
        groups.append(FieldGroup("File segment headers (root page)", tuple(seg)))
    size = len(page)
    regions = [Region(PAGE_HEADER, 74, "index_header"), Region(74, PAGE_DATA, "fseg")]
    if fmt.zip:
        return groups, regions + _zip_regions(info, size)[2:]
    sup_end = PAGE_NEW_SUPREMUM_END if compact else PAGE_OLD_SUPREMUM_END
    dir_start = size - PAGE_DIR - 2 * h.n_dir_slots
    top = min(max(h.heap_top, sup_end), dir_start)
    regions += [
        Region(PAGE_DATA, top, "records"),
        Region(top, dir_start, "free"),
        Region(dir_start, size - PAGE_DIR, "directory"),
    ]
    return groups, regions


def _fsp(page: bytes, info: PageInfo, fmt: SpaceFormat) -> tuple[list[FieldGroup], list[Region]]:
    h = FspHeader.parse(page[FSP_HEADER_OFFSET:XDES_ARR_OFFSET])
    o = FSP_HEADER_OFFSET
    fields = (
        Field("FSP_SPACE_ID", o, 4, str(h.space_id)),
        Field("FSP_SIZE", o + 8, 4, str(h.size), "pages"),
        Field("FSP_FREE_LIMIT", o + 12, 4, str(h.free_limit)),
        Field("FSP_SPACE_FLAGS", o + 16, 4, f"0x{h.space_flags:x}", " ".join(fmt.flags.names())),
        Field("FSP_FRAG_N_USED", o + 20, 4, str(h.frag_n_used)),
        Field("FSP_FREE", o + 24, 16, _flst(h.free)),
        Field("FSP_FREE_FRAG", o + 40, 16, _flst(h.free_frag)),
        Field("FSP_FULL_FRAG", o + 56, 16, _flst(h.full_frag)),
        Field("FSP_SEG_ID", o + 72, 8, str(h.seg_id), "next segment id"),
        Field("FSP_SEG_INODES_FULL", o + 80, 16, _flst(h.seg_inodes_full)),
        Field("FSP_SEG_INODES_FREE", o + 96, 16, _flst(h.seg_inodes_free)),
    )
    groups = [FieldGroup("FSP header (§4.1)", fields)]
    regions = [Region(FSP_HEADER_OFFSET, XDES_ARR_OFFSET, "fsp_header")]
    xg, xr = _xdes(page, info, fmt)
    groups.append(xg)
    regions.append(xr)
    if fmt.sdi_root is not None and fmt.vendor is Vendor.MYSQL:
        s = sdi_offset(fmt.logical_size, fmt.physical_size)
        version = int.from_bytes(page[s : s + 4], "big")
        root = int.from_bytes(page[s + 4 : s + 8], "big")
        groups.append(
            FieldGroup(
                "SDI header (§4.1, MySQL 8)",
                (
                    Field("SDI version", s, 4, str(version)),
                    Field("SDI root page", s + 4, 4, str(root)),
                ),
            )
        )
        regions.append(Region(s, s + 8, "fseg"))
    return groups, regions


def _xdes(page: bytes, info: PageInfo, fmt: SpaceFormat) -> tuple[FieldGroup, Region]:
    """§9.2: one line per initialised extent: state, owning segment, used pages."""
    extent = fmt.extent_pages
    lines: list[str] = []
    not_inited = 0
    extents = decode_descriptor_page(page, info.page_no, fmt)
    for i, e in enumerate(extents):
        if e.state == XDES_NOT_INITED:
            not_inited += 1
            continue
        first = e.first_page
        used = [first + k for k, free in enumerate(e.free) if not free]
        lines.append(
            f"extent {i:>3} pages {first}-{first + extent - 1}: {e.state_name}"
            + (f" seg {e.seg_id}" if e.seg_id else "")
            + f", {len(used)}/{extent} used"
            + (f" ({_ranges(used)})" if 0 < len(used) < extent else "")
        )
    if not_inited:
        lines.append(f"{not_inited} entries NOT_INITED")
    end = XDES_ARR_OFFSET + (fmt.physical_size // extent) * xdes_size(fmt.logical_size)
    region = Region(XDES_ARR_OFFSET, end, "xdes")
    return FieldGroup("Extent descriptors (XDES, §9.2)", lines=tuple(lines)), region


def _ranges(numbers: list[int]) -> str:
    """``[0,1,2,5,7,8]`` -> ``0-2,5,7-8``."""
    parts: list[str] = []
    start = prev = None
    for n in numbers:
        if start is None:
            start = prev = n
        elif prev is not None and n == prev + 1:
            prev = n
        else:
            parts.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = n
    if start is not None:
        parts.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ",".join(parts)


def _inodes(page: bytes, fmt: SpaceFormat) -> tuple[FieldGroup, list[Region]]:
    """§9.3: one line per used segment inode."""
    extent = fmt.extent_pages
    con = inode_entry(extent)
    size = con.sizeof()
    per_page = (fmt.physical_size - FSEG_ARR_OFFSET - 10) // size
    lines: list[str] = []
    for j in range(per_page):
        off = FSEG_ARR_OFFSET + j * size
        e = con.parse(page[off : off + size])
        if e.fseg_id == 0:
            continue
        frags = [p for p in e.frag_arr if p != FIL_NULL]
        magic = "" if e.magic_n == FSEG_MAGIC_N_VALUE else " BAD MAGIC"
        lines.append(
            f"slot {j:>2} seg {e.fseg_id}: not_full_n_used {e.not_full_n_used}, extents "
            f"free {e.free.length} not_full {e.not_full.length} full {e.full.length}, "
            f"{len(frags)} fragment pages"
            + (f" ({_ranges(sorted(frags))})" if frags else "")
            + magic
        )
    regions = [
        Region(38, FSEG_ARR_OFFSET, "fseg"),
        Region(FSEG_ARR_OFFSET, FSEG_ARR_OFFSET + per_page * size, "inode"),
    ]
    return FieldGroup("Segment inodes (§9.3)", lines=tuple(lines) or ("no used slots",)), regions


def region_at(regions: tuple[Region, ...], offset: int) -> str | None:
    """The name of the region holding ``offset`` (the last declared wins), or None."""
    found = None
    for r in regions:
        if r.start <= offset < r.end:
            found = r.name
    return found
