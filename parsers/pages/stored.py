"""The stored image, as the file holds it: FIL header, then its envelope (§1, §2.1, §3, §7.1).

A plain page is header, body and trailer; a compressed one is header, compression metadata,
payload and padding, laid out as MySQL (§2.1), MariaDB classic (§3.1) or MariaDB full_crc32
(§3.2) write it; a ROW_FORMAT=COMPRESSED page keeps its index header and a zlib stream (§7.1).
"""

from __future__ import annotations

from ibdtool.parsers.codecs import FCRC32_LENGTH_BYTE, MARIADB_ALGORITHMS, MYSQL_ALGORITHMS
from ibdtool.parsers.constants import (
    FIL_PAGE_COMPRESSED,
    FIL_PAGE_COMPRESSED_AND_ENCRYPTED,
    FIL_PAGE_DATA,
    FIL_PAGE_PAGE_COMPRESSED,
    FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED,
    Algorithm,
    page_type_name,
)
from ibdtool.parsers.envelope import fcrc32_declared_size, fcrc32_stored_size
from ibdtool.parsers.page import PageInfo
from ibdtool.parsers.pages.base import (
    Field,
    FieldGroup,
    Layout,
    Parts,
    Region,
    Span,
    clip,
    field,
    spans,
)
from ibdtool.parsers.pages.fil import HEADER, TRAILER_SIZE, header_group, trailer_group
from ibdtool.parsers.pages.fsp import FSP
from ibdtool.parsers.pages.index import zip_regions
from ibdtool.parsers.space import SpaceFormat
from ibdtool.parsers.structs import (
    MARIADB_CLASSIC_COMP_OFFSET,
    MARIADB_CLASSIC_ENC_PAYLOAD,
    MARIADB_CLASSIC_PAYLOAD,
    MARIADB_FCRC32_PAYLOAD,
    MYSQL_COMPRESSION_META_OFFSET,
    MariaDBClassicCompHeader,
    MariaDBClassicEncCompHeader,
    MySQLCompressionMeta,
)
from ibdtool.parsers.vendor import Vendor

_MYSQL = spans(MySQLCompressionMeta, MYSQL_COMPRESSION_META_OFFSET)
_CLASSIC = spans(MariaDBClassicCompHeader, MARIADB_CLASSIC_COMP_OFFSET)
_CLASSIC_ENC = spans(MariaDBClassicEncCompHeader, MARIADB_CLASSIC_COMP_OFFSET)


def stored_layout(stored: bytes, info: PageInfo, fmt: SpaceFormat) -> Layout:
    """Fields and regions of the image as the file holds it (§1, §2.1, §3.1, §3.2, §7.1)."""
    size = len(stored)
    if info.empty:
        return Layout((FieldGroup("All-zero page (never written)"),), (Region(0, size, "free"),))
    groups = [header_group(stored, info, fmt, "FIL header (stored)")]
    regions = [Region(0, FIL_PAGE_DATA, "fil_header")]
    st = info.stored_type
    if fmt.full_crc32 and st & 0x8000:
        envelope = _fcrc32_compressed(stored, info, fmt)
    elif st in (FIL_PAGE_COMPRESSED, FIL_PAGE_COMPRESSED_AND_ENCRYPTED) and not fmt.zip:
        envelope = _mysql_compressed(stored)
    elif st == FIL_PAGE_PAGE_COMPRESSED and fmt.vendor is not Vendor.MYSQL:
        envelope = _mariadb_classic(stored)
    elif st == FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED and fmt.vendor is not Vendor.MYSQL:
        envelope = _mariadb_classic_encrypted(stored)
    elif fmt.zip:
        envelope = [], zip_regions(info, size)
    else:
        envelope = (
            [trailer_group(stored, size, fmt.full_crc32)],
            [
                Region(size - TRAILER_SIZE, size, "trailer"),
                Region(FIL_PAGE_DATA, size - TRAILER_SIZE, "data"),
            ],
        )
    groups += envelope[0]
    regions += envelope[1]
    return Layout(tuple(groups), clip(regions, size))


def _payload(start: int, end: int, size: int) -> list[Region]:
    return [Region(start, end, "payload"), Region(end, size, "padding")]


def _mysql_compressed(stored: bytes) -> Parts:
    """§2.1: metadata in FIL_PAGE_FILE_FLUSH_LSN, the payload after the header."""
    at = _MYSQL
    start = at["version"].offset
    m = MySQLCompressionMeta.parse(stored[start:FIL_PAGE_DATA])
    algo = MYSQL_ALGORITHMS.get(m.algorithm)
    group = FieldGroup(
        "MySQL compression metadata (§2.1)",
        (
            field(at["version"], "FIL_PAGE_VERSION", str(m.version)),
            field(
                at["algorithm"],
                "FIL_PAGE_ALGORITHM_V1",
                str(m.algorithm),
                algo.value if algo else "unknown",
            ),
            field(
                at["original_type"],
                "FIL_PAGE_ORIGINAL_TYPE_V1",
                str(m.original_type),
                page_type_name(m.original_type, Vendor.MYSQL),
            ),
            field(at["original_size"], "FIL_PAGE_ORIGINAL_SIZE_V1", str(m.original_size)),
            field(at["compressed_size"], "FIL_PAGE_COMPRESS_SIZE_V1", str(m.compressed_size)),
        ),
    )
    end = FIL_PAGE_DATA + m.compressed_size
    regions = [Region(start, at["compressed_size"].end, "compression")]
    return [group], regions + _payload(FIL_PAGE_DATA, end, len(stored))


def _mariadb_classic(stored: bytes) -> Parts:
    """§3.1: the algorithm in FIL_PAGE_FILE_FLUSH_LSN, the payload length after the header."""
    at = _CLASSIC
    h = MariaDBClassicCompHeader.parse(stored[MARIADB_CLASSIC_COMP_OFFSET:MARIADB_CLASSIC_PAYLOAD])
    algo = MARIADB_ALGORITHMS.get(h.algorithm)
    group = FieldGroup(
        "MariaDB page_compressed header (§3.1)",
        (
            field(
                at["algorithm"],
                "FIL_PAGE_COMP_ALGO",
                str(h.algorithm),
                algo.value if algo else "unknown",
            ),
            field(at["comp_size"], "FIL_PAGE_COMP_SIZE", str(h.comp_size)),
        ),
    )
    end = MARIADB_CLASSIC_PAYLOAD + h.comp_size
    regions = [_region(at["algorithm"], "compression"), _region(at["comp_size"], "compression")]
    return [group], regions + _payload(MARIADB_CLASSIC_PAYLOAD, end, len(stored))


def _mariadb_classic_encrypted(stored: bytes) -> Parts:
    """§3.1: key version and checksum where the algorithm was, the algorithm after the length."""
    at = _CLASSIC_ENC
    h = MariaDBClassicEncCompHeader.parse(
        stored[MARIADB_CLASSIC_COMP_OFFSET:MARIADB_CLASSIC_ENC_PAYLOAD]
    )
    algo = MARIADB_ALGORITHMS.get(h.algorithm)
    group = FieldGroup(
        "MariaDB page_compressed + encrypted header (§3.1)",
        (
            field(at["key_version"], "FIL_PAGE_KEY_VERSION", str(h.key_version)),
            field(
                at["post_enc_checksum"], "post-encryption checksum", f"0x{h.post_enc_checksum:08x}"
            ),
            field(at["comp_size"], "FIL_PAGE_COMP_SIZE", str(h.comp_size)),
            field(
                at["algorithm"], "FIL_PAGE_COMP_ALGO", str(h.algorithm), algo.value if algo else "?"
            ),
        ),
    )
    end = MARIADB_CLASSIC_ENC_PAYLOAD + h.comp_size
    regions = [
        Region(at["key_version"].offset, at["post_enc_checksum"].end, "compression"),
        Region(at["comp_size"].offset, at["algorithm"].end, "compression"),
    ]
    return [group], regions + _payload(MARIADB_CLASSIC_ENC_PAYLOAD, end, len(stored))


def _region(span: Span, name: str) -> Region:
    return Region(span.offset, span.end, name)


def _fcrc32_compressed(stored: bytes, info: PageInfo, fmt: SpaceFormat) -> Parts:
    """§3.2: the size in the type word, payload at 26, optional length byte, CRC-32C."""
    size = len(stored)
    image = fcrc32_declared_size(info.stored_type)
    algo = fmt.fcrc32_algorithm or Algorithm.NONE
    fields = [
        field(
            HEADER["page_type"],
            "FIL_PAGE_TYPE",
            f"0x{info.stored_type:04x}",
            f"stored size {image}",
        ),
        Field("(algorithm, from FSP flags)", FSP["space_flags"].offset, 0, algo.value),
    ]
    regions: list[Region] = []
    if fcrc32_stored_size(info.stored_type, size) is None:
        return [FieldGroup("MariaDB full_crc32 page_compressed (§3.2)", tuple(fields))], regions
    end = image - 4
    if algo in FCRC32_LENGTH_BYTE:
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
