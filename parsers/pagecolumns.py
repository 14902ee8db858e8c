"""Header fields of every page in a chunk of whole pages at once, and which pages verify plainly.

Scans of large files (``checksum``, ``inspect``, ``pages --json``) spend most of their time on
pages that need nothing but their header and their checksum: plain pages with a good crc32 or
full_crc32 checksum. Here one ``struct.iter_unpack`` call over a chunk read in one piece gives
the fields of every page (as columns, one tuple per field), and one CRC-32C call per page over
a memoryview of the chunk (``map`` over precomputed slices, with no Python frame per page)
gives each verdict, so the per-page work runs in C. The formats are derived from the construct
declarations of :mod:`ibdtool.parsers.structs` (``FilHeader`` at 0, ``IndexHeader`` at 38,
``FilTrailer`` in the last 8 bytes, through their fields in :mod:`ibdtool.parsers._structs_gen`):
they stay the one source of truth, and the tests compare these columns with the construct parse on
every page of the samples and the corpus.

:func:`plain_verified` says, per page, whether it is exactly what :func:`ibdtool.parsers.page.
decode_page` would call a valid unencrypted, uncompressed page with this page number and no
problem; every other page (zero, compressed, encrypted, zip, damaged, innodb-checksummed) is
``False`` and is for the caller to hand to the decoder.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from itertools import compress, repeat
from operator import add, and_, eq, is_not, itemgetter, mul, not_, xor
from typing import TypeVar

from ibdtool.parsers._structs_gen import (
    FIL_HEADER_FIELDS,
    FIL_TRAILER_FIELDS,
    FULL_CRC32_TRAILER_FIELDS,
    INDEX_HEADER_FIELDS,
    PAGE_DATA,
    PAGE_HEADER,
)
from ibdtool.parsers.constants import (
    FIL_PAGE_COMPRESS_FCRC32_MARKER,
    FIL_PAGE_COMPRESSED,
    FIL_PAGE_COMPRESSED_AND_ENCRYPTED,
    FIL_PAGE_PAGE_COMPRESSED,
    FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED,
    MYSQL_ENCRYPTED_TYPES,
)
from ibdtool.parsers.crc32c_fast import crc32c
from ibdtool.parsers.envelope import fcrc32_stored_size

#: page types whose envelope is not the plain page in a crc32 (not full_crc32) tablespace
SPECIAL_TYPES = frozenset(
    {
        FIL_PAGE_COMPRESSED,
        FIL_PAGE_COMPRESSED_AND_ENCRYPTED,
        FIL_PAGE_PAGE_COMPRESSED,
        FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED,
    }
    | MYSQL_ENCRYPTED_TYPES
)

#: the FIL header and the index page header: the bytes of a page :func:`prefix_columns` reads
PREFIX_BYTES = PAGE_DATA

_LOW32 = 0xFFFFFFFF
_U32 = struct.Struct(">I")
_MARKER = FIL_PAGE_COMPRESS_FCRC32_MARKER
_FIRST = itemgetter(0)
T = TypeVar("T")

#: the columns every verdict needs: FIL header names, the trailer's with a ``trailer_`` prefix
#: (``FilTrailer``, or ``FullCrc32Trailer`` in a full_crc32 tablespace)
VERDICT_FIELDS = ("checksum", "page_no", "lsn", "page_type", "trailer_lsn_low")
CRC32_FIELDS = (*VERDICT_FIELDS, "trailer_old_checksum")
FCRC32_FIELDS = (*VERDICT_FIELDS, "trailer_crc32c")
#: … and those of the index page header that ``inspect`` and ``pages`` show
INDEX_FIELDS = ("heap_top", "n_heap", "garbage", "n_recs", "level", "index_id")


def verdict_fields(full_crc32: bool) -> tuple[str, ...]:
    """The columns :func:`plain_verified` reads in a tablespace of this checksum format."""
    return FCRC32_FIELDS if full_crc32 else CRC32_FIELDS


@cache
def page_struct(
    psize: int, full_crc32: bool, fields: tuple[str, ...]
) -> tuple[struct.Struct, tuple[str, ...]]:
    """A ``psize``-byte ``struct.Struct`` unpacking ``fields`` of one page and skipping the
    rest: FIL header names, index page header names, and the trailer's with a ``trailer_``
    prefix; the names come back in the order the tuples hold them."""
    trailer = FULL_CRC32_TRAILER_FIELDS if full_crc32 else FIL_TRAILER_FIELDS
    trailer_size = struct.calcsize(">" + "".join(code for _, code in trailer))
    return _struct_of(psize, fields, (psize - trailer_size, trailer, "trailer_"))


@cache
def prefix_struct(fields: tuple[str, ...]) -> tuple[struct.Struct, tuple[str, ...]]:
    """:func:`page_struct` for the first :data:`PREFIX_BYTES` bytes of a page alone (the FIL
    and index page headers: what a compressed page's header inflate gives)."""
    return _struct_of(PREFIX_BYTES, fields)


def prefix_columns(heads: bytes | bytearray, fields: tuple[str, ...]) -> dict[str, tuple[int, ...]]:
    """:func:`columns` over page prefixes laid end to end, :data:`PREFIX_BYTES` each."""
    packer, names = prefix_struct(fields)
    cols: list[tuple[int, ...]] = list(zip(*packer.iter_unpack(heads), strict=True))
    if not cols:
        cols = [() for _ in names]
    return dict(zip(names, cols, strict=True))


@cache
def prefix_layout(fields: tuple[str, ...]) -> tuple[tuple[str, int, int], ...]:
    """Where ``fields`` are in the first :data:`PREFIX_BYTES` bytes of a page (FIL and index
    page headers): ``(name, offset, width in bytes)`` each, big-endian unsigned, in the order
    :func:`prefix_columns` gives them (for code that unpacks them itself: the compiled chunk
    loop, :mod:`ibdtool.parsers.fcrc32_native`)."""
    parts = _parts(fields)
    return tuple(
        (name, at, struct.calcsize(">" + code)) for at, name, code in parts if name in fields
    )


def _parts(
    fields: tuple[str, ...], *more: tuple[int, tuple[tuple[str, str], ...], str]
) -> list[tuple[int, str, str]]:
    """Every declared field of the FIL header, the index page header and ``more`` as
    ``(offset, name, struct code)``, in page order; ValueError when ``fields`` names another."""
    parts: list[tuple[int, str, str]] = []
    for base, flat, prefix in (
        (0, FIL_HEADER_FIELDS, ""),
        (PAGE_HEADER, INDEX_HEADER_FIELDS, ""),
        *more,
    ):
        at = base
        for name, code in flat:
            parts.append((at, prefix + name, code))
            at += struct.calcsize(">" + code)
    unknown = set(fields) - {name for _, name, _ in parts}
    if unknown:
        raise ValueError(f"no such page field: {', '.join(sorted(unknown))}")
    return parts


def _struct_of(
    size: int, fields: tuple[str, ...], *more: tuple[int, tuple[tuple[str, str], ...], str]
) -> tuple[struct.Struct, tuple[str, ...]]:
    parts = _parts(fields, *more)
    fmt, names, at = [">"], [], 0
    for offset, name, code in parts:
        if name not in fields:
            continue
        if offset > at:
            fmt.append(f"{offset - at}x")
        fmt.append(code)
        names.append(name)
        at = offset + struct.calcsize(">" + code)
    if size > at:
        fmt.append(f"{size - at}x")
    packer = struct.Struct("".join(fmt))
    assert packer.size == size
    return packer, tuple(names)


def columns(
    chunk: memoryview, psize: int, full_crc32: bool, fields: tuple[str, ...]
) -> dict[str, tuple[int, ...]]:
    """``fields`` of every page in ``chunk`` (whole pages), one tuple per field."""
    packer, names = page_struct(psize, full_crc32, fields)
    cols: list[tuple[int, ...]] = list(zip(*packer.iter_unpack(chunk), strict=True))
    if not cols:
        cols = [() for _ in names]
    return dict(zip(names, cols, strict=True))


@cache
def _slices(psize: int, count: int, start: int, end_back: int) -> tuple[slice, ...]:
    """For page k of a chunk, the slice [k*psize + start, (k+1)*psize - end_back)."""
    return tuple(slice(k * psize + start, (k + 1) * psize - end_back) for k in range(count))


def scatter(count: int, where: Iterable[int], values: Iterable[T], fill: T) -> list[T]:
    """A list of ``count`` items, ``fill`` but at the indexes ``where`` (in order), which take
    ``values`` one after the other: the per-page verdicts of the pages a chunk's cheap checks
    kept, set by ``map`` (no Python step per page)."""
    out = [fill] * count
    deque(map(out.__setitem__, where, values), maxlen=0)
    return out


def _verdicts(count: int, cheap: list[bool], crc_ok: Iterable[bool]) -> list[bool]:
    """Per page: ``cheap`` and, for the pages ``cheap`` kept, their value of ``crc_ok``."""
    if cheap.count(True) == count:
        return list(crc_ok)
    return scatter(count, compress(range(count), cheap), crc_ok, False)


def _numbers_ok(page_no: Sequence[int], first_page: int) -> bool:
    """Is every page of the chunk at its own page number? (``tuple`` of a tuple is the tuple.)"""
    return tuple(page_no) == tuple(range(first_page, first_page + len(page_no)))


def plain_verified(
    chunk: memoryview,
    psize: int,
    first_page: int,
    full_crc32: bool,
    cols: dict[str, tuple[int, ...]],
) -> list[bool]:
    """Per page of ``chunk`` (pages ``first_page``…; ``cols`` from :func:`columns` with at
    least :func:`verdict_fields`): is it a plain page whose crc32 (``full_crc32``: full_crc32)
    checksum verifies, untorn, unencrypted, at its own page number? (See the module doc.)

    The cheap checks are first made on the whole chunk at once (a tuple comparison per
    column): a chunk of plain pages passes them all and only its CRCs are computed, page by
    page in C; a chunk where any page fails one is checked page by page, still in C."""
    count = len(cols["page_no"])
    chk, ptype = cols["checksum"], cols["page_type"]
    lsn_low = tuple(map(_LOW32.__and__, cols["lsn"]))
    trailer_lsn = cols["trailer_lsn_low"]
    cheap: list[bool]
    if full_crc32:
        # §3.2 / §6.6: key version 0 (not encrypted), no compression marker, CRC-32C of all but
        # the last 4 bytes stored in them (0 is never a stored checksum)
        markers = tuple(map(_MARKER.__and__, ptype))
        if all(markers):
            return [False] * count  # all compressed: no plain page to look for
        stored = cols["trailer_crc32c"]
        if (
            not any(chk)
            and not any(markers)
            and all(stored)
            and lsn_low == trailer_lsn
            and _numbers_ok(cols["page_no"], first_page)
        ):
            cheap = [True] * count
        else:
            checks: tuple[Iterable[object], ...] = (
                map(eq, cols["page_no"], range(first_page, first_page + count)),
                map(not_, chk),
                map(not_, markers),
                map(eq, lsn_low, trailer_lsn),
                stored,
            )
            cheap = list(map(all, zip(*checks, strict=True)))
        slices = compress(_slices(psize, count, 0, 4), cheap)
        crc_ok = map(eq, compress(stored, cheap), map(crc32c, map(chunk.__getitem__, slices)))
    else:
        # §6.1: crc32 of [4, 26) xor crc32 of [38, end - 8), at 0 and in the trailer
        special = tuple(map(SPECIAL_TYPES.__contains__, ptype))
        if all(special):
            return [False] * count
        if (
            all(chk)
            and not any(special)
            and chk == cols["trailer_old_checksum"]
            and lsn_low == trailer_lsn
            and _numbers_ok(cols["page_no"], first_page)
        ):
            cheap = [True] * count
        else:
            checks = (
                map(eq, cols["page_no"], range(first_page, first_page + count)),
                chk,
                map(not_, special),
                map(eq, chk, cols["trailer_old_checksum"]),
                map(eq, lsn_low, trailer_lsn),
            )
            cheap = list(map(all, zip(*checks, strict=True)))
        get = chunk.__getitem__
        head = map(crc32c, map(get, compress(_slices(psize, count, 4, psize - 26), cheap)))
        body = map(crc32c, map(get, compress(_slices(psize, count, 38, 8), cheap)))
        crc_ok = map(eq, compress(chk, cheap), map(xor, head, body))
    # the CRCs only of the pages that passed the rest: a compressed file costs no CRC here
    return _verdicts(count, cheap, crc_ok)


class _StoredSizes(dict[int, "int | None"]):
    """:func:`~ibdtool.parsers.envelope.fcrc32_stored_size` of each stored page type, for one
    physical page size, worked out once per distinct type (a file holds a few dozen)."""

    def __init__(self, psize: int) -> None:
        super().__init__()
        self.psize = psize

    def __missing__(self, ptype: int) -> int | None:
        size = self[ptype] = fcrc32_stored_size(ptype, self.psize)
        return size


@cache
def _stored_sizes(psize: int) -> _StoredSizes:
    return _StoredSizes(psize)


def stored_sizes(ptypes: Iterable[int], psize: int) -> list[int | None]:
    """:func:`~ibdtool.parsers.envelope.fcrc32_stored_size` of every page type of ``ptypes``
    (a dictionary lookup each, in C)."""
    return list(map(_stored_sizes(psize).__getitem__, ptypes))


def compressed_verified(
    chunk: memoryview,
    psize: int,
    first_page: int,
    cols: Mapping[str, Sequence[int]],
) -> list[bool]:
    """Per page of ``chunk`` in a full_crc32 tablespace (``cols`` as for
    :func:`plain_verified`): is it a page-compressed image, unencrypted, at its own page
    number, whose CRC-32C (over the image, in its last 4 bytes, §3.2 / §6.6) verifies? That
    is the whole verdict of such a page: nothing to inflate for ``checksum``."""
    return compressed_sized(chunk, psize, first_page, cols)[0]


def compressed_sized(
    chunk: memoryview,
    psize: int,
    first_page: int,
    cols: Mapping[str, Sequence[int]],
) -> tuple[list[bool], list[int | None]]:
    """:func:`compressed_verified`, and every page's image size as its type gives it
    (:func:`stored_sizes`; None where the type holds none)."""
    count = len(cols["page_no"])
    ptype = cols["page_type"]
    sizes = stored_sizes(ptype, psize)
    cheap: list[bool]
    if (
        None not in sizes
        and not any(cols["checksum"])
        and all(map(_MARKER.__and__, ptype))
        and _numbers_ok(cols["page_no"], first_page)
    ):
        cheap = [True] * count
        starts: Iterable[int] = range(0, count * psize, psize)
        kept: Iterable[int] = sizes  # type: ignore[assignment]  # no None: checked above
    else:
        checks = (
            map(eq, cols["page_no"], range(first_page, first_page + count)),
            map(not_, cols["checksum"]),
            map(_MARKER.__and__, ptype),
            map(is_not, sizes, repeat(None)),
        )
        cheap = list(map(all, zip(*checks, strict=True)))
        starts = list(map(mul, compress(range(count), cheap), repeat(psize)))
        kept = compress(sizes, cheap)  # type: ignore[arg-type]  # None is never kept
    ends = list(map(add, starts, map(add, kept, repeat(-4))))
    stored = list(map(_FIRST, map(_U32.unpack_from, repeat(chunk), ends)))
    crcs = map(crc32c, map(chunk.__getitem__, map(slice, starts, ends)))
    # 0 is never a stored CRC: looked for once, not page by page, where none is 0
    crc_ok = (
        map(eq, stored, crcs)
        if 0 not in stored
        else map(and_, map(bool, stored), map(eq, stored, crcs))
    )
    return _verdicts(count, cheap, crc_ok), sizes


def select(col: Sequence[int], mask: Sequence[bool]) -> list[int]:
    """The values of ``col`` where ``mask`` is true."""
    return list(compress(col, mask))
