"""How each server lays a compressed page image into its slot (FORMATS.md §2.1, §3.1, §3.2).

Pure arithmetic from a payload length to the bytes the server writes, and from those to what a
filesystem allocates: the rules ``simulate`` predicts with and ``inspect`` checks punching with.
Each function returns None when the server would store the page uncompressed.
"""

from __future__ import annotations

from ibdtool.parsers._structs_gen import (
    FCRC32_CHECKSUM_SIZE,
    FCRC32_SIZE_UNIT,
    MARIADB_CLASSIC_PAYLOAD,
    MARIADB_FCRC32_PAYLOAD,
)
from ibdtool.parsers.codecs import FCRC32_LENGTH_BYTE
from ibdtool.parsers.constants import FIL_PAGE_DATA, Algorithm
from ibdtool.parsers.vendor import Vendor

MYSQL_HEADER = FIL_PAGE_DATA  # §2.1: the 38-byte header stays, the rest is compressed


def align_up(n: int, block: int) -> int:
    return -(-n // block) * block


def mysql_write_size(payload: int, page_size: int, block: int) -> int | None:
    """MySQL ``os_file_compress_page``: ``align_up(38 + payload, block)``, only if the result
    fits in ``page_size - block`` (saves at least one block) and the page is at least two
    blocks (§2.1)."""
    if block <= 0 or page_size < 2 * block:
        return None
    if payload > page_size - MYSQL_HEADER - block:
        return None
    return align_up(MYSQL_HEADER + payload, block)


def mariadb_fcrc32_stored_size(algorithm: Algorithm, payload: int, page_size: int) -> int | None:
    """MariaDB full_crc32: 26 + payload + 4-byte CRC [+ length byte], rounded up to 256; must
    stay below the page size (§3.2)."""
    size = MARIADB_FCRC32_PAYLOAD + payload + FCRC32_CHECKSUM_SIZE
    size += 1 if algorithm in FCRC32_LENGTH_BYTE else 0
    size = align_up(size, FCRC32_SIZE_UNIT)
    return size if size < page_size else None


def mariadb_classic_stored_size(payload: int, page_size: int) -> int | None:
    """MariaDB classic page_compressed: header + 2-byte length + payload (§3.1)."""
    size = MARIADB_CLASSIC_PAYLOAD + payload
    return size if size < page_size else None


def server_stored_size(
    vendor: Vendor,
    algorithm: Algorithm,
    payload: int,
    page_size: int,
    block: int,
    *,
    full_crc32: bool = True,
) -> int | None:
    """Bytes a server writes for a page whose compressed payload is ``payload`` bytes: MySQL's
    block-aligned write, or MariaDB's image in its full_crc32 or classic layout; None when it
    would store the page uncompressed. Any vendor but MySQL lays pages out as MariaDB."""
    if vendor is Vendor.MYSQL:
        return mysql_write_size(payload, page_size, block)
    if full_crc32:
        return mariadb_fcrc32_stored_size(algorithm, payload, page_size)
    return mariadb_classic_stored_size(payload, page_size)


def allocated_for_image(stored: int, page_size: int, block: int) -> int:
    """Bytes a filesystem with ``block``-byte blocks allocates for an image of ``stored`` bytes
    at the start of a punched ``page_size`` slot (never more than the slot)."""
    return min(page_size, align_up(stored, block))


def ntfs_allocated(stored: int, page_size: int, unit: int) -> int:
    """NTFS frees space only in whole compression units (16 clusters, 64 KiB with 4 KiB
    clusters): a unit holding any data stays allocated. With pages no larger than a unit,
    every non-empty page keeps its unit(s) allocated, i.e. costs its whole slot."""
    if stored <= 0:
        return 0
    if page_size <= unit:
        return page_size
    return min(page_size, align_up(stored, unit))
