"""Ways to damage a real tablespace, each aimed at a structure FORMATS.md describes.

A mutator takes the file's bytes (a ``bytearray`` it changes in place), the :class:`Original`
they came from and a :class:`Chooser`, and returns a short description of what it did. Every
random decision goes through the chooser, so the same mutators run under a seeded
``random.Random`` (:class:`RandomChooser`) and under hypothesis (its ``data.draw``), which
shrinks a failing case to the fewest and smallest choices.

Families: bytes (bit flips, random runs, truncation); header fields at their extremes (FIL
header, FSP flags, index header, MySQL type 14 and MariaDB 34354 metadata, the full_crc32
stored size, SDI record headers); pointer loops (next-record offsets, FIL_PAGE_NEXT, the SDI
root, BLOB next page, the chains of externally stored values, file-list nodes); compression
bombs (page payloads and SDI records that inflate far past their page) and hostile JSON (nested
deep, millions of values).
"""

from __future__ import annotations

import lzma
import random
import zlib
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from tests.fuzz.originals import Original

T = TypeVar("T")

SDI_RECORD_DATA = 33  # §8.3: the JSON's zlib stream follows 33 bytes after the record origin
PAGE_NEW_INFIMUM = 99


class Chooser(Protocol):
    """Where a mutator's random decisions come from."""

    def integer(self, lo: int, hi: int) -> int:
        """A number in ``[lo, hi]``."""
        ...

    def choice(self, options: Sequence[T]) -> T: ...


class RandomChooser:
    """Decisions from a seeded ``random.Random``."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def choice(self, options: Sequence[T]) -> T:
        return options[self.rng.randrange(len(options))]


def put(data: bytearray, offset: int, value: int, size: int) -> None:
    """Write ``value`` big-endian at ``offset`` (clipped at the end of the data)."""
    if 0 <= offset < len(data):
        raw = (value & ((1 << (8 * size)) - 1)).to_bytes(size, "big")
        data[offset : offset + size] = raw[: len(data) - offset]


def be(data: bytes | bytearray, offset: int, size: int) -> int:
    return int.from_bytes(data[offset : offset + size], "big")


def _page(o: Original, c: Chooser, first: int = 0) -> int:
    return c.integer(min(first, o.n_pages - 1), o.n_pages - 1)


def extreme(c: Chooser, size: int, o: Original) -> int:
    """A value a field of ``size`` bytes should never hold, or holds only at its limits."""
    top = (1 << (8 * size)) - 1
    return c.choice((0, 1, top, top - 1, top >> 1, (top >> 1) + 1, o.n_pages, o.physical))


# --- bytes -----------------------------------------------------------------------------------


def bit_flips(data: bytearray, o: Original, c: Chooser) -> str:
    n = c.choice((1, 2, 8, 64))
    page = _page(o, c)
    for _ in range(n):
        at = page * o.physical + c.integer(0, o.physical - 1)
        if at < len(data):
            data[at] ^= 1 << c.integer(0, 7)
    return f"{n} bit flips in page {page}"


def random_bytes(data: bytearray, o: Original, c: Chooser) -> str:
    page = _page(o, c)
    n = c.choice((1, 3, 50, 400))
    for _ in range(n):
        at = page * o.physical + c.integer(0, o.physical - 1)
        if at < len(data):
            data[at] = c.integer(0, 255)
    return f"{n} random bytes in page {page}"


def random_run(data: bytearray, o: Original, c: Chooser) -> str:
    start = _page(o, c) * o.physical + c.integer(0, o.physical - 1)
    n = c.integer(1, 2000)
    fill = c.choice((0x00, 0xFF, 0x78, -1))
    seed = c.integer(0, 1 << 30)
    run = random.Random(seed).randbytes(n) if fill < 0 else bytes([fill]) * n
    data[start : start + n] = run[: len(data[start : start + n])]
    return f"{n} bytes of {fill if fill >= 0 else 'noise'} at {start}"


def truncate(data: bytearray, o: Original, c: Chooser) -> str:
    cut = c.choice(
        (c.integer(0, len(data) - 1), o.physical * c.integer(1, o.n_pages - 1), 1, 37, 39)
    )
    del data[cut:]
    return f"truncated at {cut}"


# --- header fields at their extremes --------------------------------------------------------

FIL_FIELDS = ((0, 4), (4, 4), (8, 4), (12, 4), (16, 8), (24, 2), (26, 8), (34, 4))  # §1


def fil_header_extreme(data: bytearray, o: Original, c: Chooser) -> str:
    page = _page(o, c)
    offset, size = c.choice(FIL_FIELDS)
    value = extreme(c, size, o)
    put(data, page * o.physical + offset, value, size)
    return f"page {page} FIL header +{offset} = {value}"


def fil_trailer_extreme(data: bytearray, o: Original, c: Chooser) -> str:
    page = _page(o, c)
    value = extreme(c, 4, o)
    put(data, (page + 1) * o.physical - c.choice((8, 4)), value, 4)
    return f"page {page} trailer = {value}"


def fsp_flags(data: bytearray, o: Original, c: Chooser) -> str:
    value = c.choice(
        (
            c.integer(0, (1 << 32) - 1),
            c.integer(0, (1 << 17) - 1),
            c.integer(0, 255),
            0,
            0xFFFFFFFF,
            0x10 | c.integer(0, 15),  # full_crc32 marker with any page size
            (c.integer(0, 15) << 6) | (c.integer(0, 7) << 1) | 1,  # any page and zip size
        )
    )
    put(data, 54, value, 4)
    return f"FSP flags 0x{value:x}"


def fsp_header_extreme(data: bytearray, o: Original, c: Chooser) -> str:
    """Space id, size, free limit, fragment counters, list bases (§4.1 at FIL_PAGE_DATA)."""
    offset = c.choice((38, 42, 46, 50, 58, 62, 66, 70, 74, 78, 82, 86, 90, 94, 98, 102, 106))
    value = extreme(c, 4, o)
    put(data, offset, value, 4)
    return f"FSP header +{offset - 38} = {value}"


HOSTILE_TYPES = {
    "fcrc32-marker-255": 0x80FF,  # compressed image of 0x7F00 bytes (past the page)
    "fcrc32-marker-1": 0x8001,  # compressed image of 256 bytes
    "fcrc32-marker-0": 0x8000,  # compressed image of 0 bytes
    "all-ones": 0xFFFF,
    "mysql-compressed": 14,
    "mysql-encrypted": 15,
    "mariadb-page-compressed": 34354,
    "mariadb-page-compressed-encrypted": 37401,
    "sdi": 17853,
    "sdi-blob": 18,
    "blob": 10,
    "xdes": 9,
    "inode": 3,
    "fsp-hdr": 8,
    "lob-first": 24,
}


def hostile_type(data: bytearray, o: Original, c: Chooser) -> str:
    page = _page(o, c, 1)
    name = c.choice(sorted(HOSTILE_TYPES))
    put(data, page * o.physical + 24, HOSTILE_TYPES[name], 2)
    return f"page {page} type {name}"


def hostile_mysql_compressed(data: bytearray, o: Original, c: Chooser) -> str:
    """Type 14 with version 1/2 and sizes 0, 1, 65535 or the page's (§2.1 metadata at 26)."""
    page = _page(o, c, 1)
    base = page * o.physical
    put(data, base + 24, 14, 2)
    version, algo = c.choice((1, 2, 0, 255)), c.choice((1, 2, 0, 7))
    orig, comp = (c.choice((0, 1, 65535, o.logical - 38, o.physical)) for _ in range(2))
    put(data, base + 26, version, 1)
    put(data, base + 27, algo, 1)
    put(data, base + 28, c.choice((17855, 0, 0xFFFF)), 2)
    put(data, base + 30, orig, 2)
    put(data, base + 32, comp, 2)
    return f"page {page} type 14 v{version} algo {algo} sizes {orig}/{comp}"


def hostile_mariadb_compressed(data: bytearray, o: Original, c: Chooser) -> str:
    """34354 with unknown or real algorithm ids and lengths past the page (§3.1)."""
    page = _page(o, c, 1)
    base = page * o.physical
    put(data, base + 24, 34354, 2)
    algo = c.choice((0, 1, 2, 3, 4, 5, 6, 7, 255, 1 << 40))
    length = c.choice((0, 1, 2, 65535, o.physical - 40, o.physical - 39))
    put(data, base + 26, algo, 8)
    put(data, base + 38, length, 2)
    return f"page {page} type 34354 algo {algo} length {length}"


def hostile_fcrc32_size(data: bytearray, o: Original, c: Chooser) -> str:
    """A full_crc32 compressed marker whose size is tiny, exactly the page, or past it."""
    page = _page(o, c, 1)
    units = c.choice((0, 1, 2, o.physical >> 8, (o.physical >> 8) - 1, 0x7FFF))
    put(data, page * o.physical + 24, 0x8000 | units, 2)
    if c.choice((False, True)):  # and a length byte before the CRC past the payload
        put(data, page * o.physical + (units << 8) - 5, c.choice((0, 1, 255)), 1)
    return f"page {page} fcrc32 marker size {units << 8}"


def hostile_index_header(data: bytearray, o: Original, c: Chooser) -> str:
    page = _page(o, c, 1)
    field = c.choice((38, 40, 42, 44, 46, 48, 50, 52, 54, 64))  # §5.1, 2-byte fields
    value = c.choice((0, 1, 0x7FFF, 0x8000, 0xFFFF, o.logical))
    put(data, page * o.physical + field, value, 2)
    return f"page {page} index header +{field - 38} = {value}"


def _first_record(data: bytearray, base: int) -> int:
    """Offset in the page of the first user record of a compact page (§5.2)."""
    return (PAGE_NEW_INFIMUM + be(data, base + PAGE_NEW_INFIMUM - 2, 2)) & 0xFFFF


def sdi_record_header(data: bytearray, o: Original, c: Chooser) -> str:
    """The first SDI record's type, id, lengths and length byte at their extremes (§8.3)."""
    if o.sdi_root is None or o.zip:
        return random_bytes(data, o, c)
    base = o.sdi_root * o.physical
    at = base + _first_record(data, base)
    offset, size = c.choice(((0, 4), (4, 8), (25, 4), (29, 4), (-6, 1), (-7, 1)))
    value = extreme(c, size, o)
    put(data, at + offset, value, size)
    return f"SDI record +{offset} = {value}"


def sdi_root_pointer(data: bytearray, o: Original, c: Chooser) -> str:
    root = c.choice((0, 1, 2, 3, o.n_pages - 1, o.n_pages, o.n_pages + 7, 0xFFFFFFFF))
    put(data, o.sdi_pointer, c.choice((1, 1, 1, 2)), 4)
    put(data, o.sdi_pointer + 4, root, 4)
    return f"SDI root pointer {root}"


# --- pointer loops ---------------------------------------------------------------------------


def next_record_loop(data: bytearray, o: Original, c: Chooser) -> str:
    """A compact record's next-record offset pointing to itself, the infimum or an earlier one."""
    page = o.sdi_root if o.sdi_root is not None and c.choice((True, False)) else _page(o, c, 1)
    base = page * o.physical
    origins = [PAGE_NEW_INFIMUM]
    for _ in range(c.integer(0, 20)):
        nxt = (origins[-1] + be(data, base + origins[-1] - 2, 2)) & 0xFFFF
        if not 99 <= nxt < o.physical - 8 or nxt in origins:
            break
        origins.append(nxt)
    victim = origins[-1]
    target = c.choice(origins)
    put(data, base + victim - 2, (target - victim) & 0xFFFF, 2)
    return f"page {page} record {victim} -> {target}"


def page_chain_loop(data: bytearray, o: Original, c: Chooser) -> str:
    """FIL_PAGE_NEXT / FIL_PAGE_PREV pointing to the page itself or back down the chain."""
    page = o.sdi_root if o.sdi_root is not None and c.choice((True, False)) else _page(o, c, 1)
    target = c.choice((page, 0, max(0, page - 1), o.sdi_root or 0))
    put(data, page * o.physical + c.choice((12, 8)), target, 4)
    return f"page {page} next/prev -> {target}"


def sdi_self_loop(data: bytearray, o: Original, c: Chooser) -> str:
    """The SDI root's FIL_PAGE_NEXT or its first node pointer pointing to itself."""
    root = o.sdi_root or 3
    base = root * o.physical
    how = c.choice(("next", "level", "both"))
    if how in ("next", "both"):
        put(data, base + 12, root, 4)
    if how in ("level", "both"):
        put(data, base + 64, c.choice((1, 2, 0xFFFF)), 2)  # PAGE_LEVEL: descend ...
        first = _first_record(data, base)
        if first + 16 <= o.physical:
            put(data, base + first + 12, root, 4)  # ... into the root itself
    return f"SDI root {root} points to itself ({how})"


def blob_loop(data: bytearray, o: Original, c: Chooser) -> str:
    """A page made (or kept) a BLOB / SDI_BLOB page whose next page is itself or a neighbour."""
    page = _page(o, c, 1)
    base = page * o.physical
    put(data, base + 24, c.choice((18, 10)), 2)  # SDI_BLOB, BLOB
    put(data, base + 38, c.choice((0, 1, o.physical - 54, 0xFFFFFFFF)), 4)  # part length
    put(data, base + 42, c.choice((page, page - 1, 0, o.sdi_root or 0)), 4)  # next page
    if o.sdi_root is not None and not o.zip and c.choice((True, False)):
        # and the first SDI record stored externally, there
        root = o.sdi_root * o.physical
        at = root + _first_record(data, root)
        data[at - 6] = 0x80 | 0x40
        data[at - 7] = 20
        put(data, at + SDI_RECORD_DATA + 4, page, 4)
        put(data, at + SDI_RECORD_DATA + 12, c.choice((1 << 20, 0xFFFFFFFF)), 8)
        put(data, at + 29, c.choice((1 << 20, 0xFFFFFFFF)), 4)
    return f"page {page} BLOB chain loop"


#: pages of an externally stored value's chain (§4.3 BLOB, §7.1 ZBLOB, MySQL 8 LOB and ZLOB)
EXTERN_TYPES = (10, 11, 12, 22, 23, 24, 25, 26, 28)
LOB_FIRST_INDEX = 64  # lob0first.h: the index list's base node; entries from 96, 60 bytes each
LOB_FIRST_ENTRY = 96


def extern_chain_loop(data: bytearray, o: Original, c: Chooser) -> str:
    """A page of an external value's chain (``records`` follows them) that points back to itself
    or to the chain's first page, or claims more data than it holds: FIL_PAGE_NEXT (ZBLOB,
    ZLOB data), the BLOB part header's next page, the LOB index list and its entries."""
    chain = [n for n in range(o.n_pages) if be(data, n * o.physical + 24, 2) in EXTERN_TYPES] or [
        _page(o, c, 1)
    ]
    page = c.choice(chain)
    base = page * o.physical
    back = c.choice((page, chain[0], 0xFFFFFFFF, o.n_pages))
    how = c.choice(("fil-next", "blob-next", "lob-list", "lob-entry", "lob-lengths"))
    if how == "fil-next":
        put(data, base + 12, back, 4)
    elif how == "blob-next":
        put(data, base + 38 + 4, back, 4)
        put(data, base + 38, c.choice((0, o.physical - 46, 0xFFFFFFFF)), 4)  # part length
    elif how == "lob-list":  # the list's first node: an entry on this very page, or past it
        put(data, base + LOB_FIRST_INDEX + 4, back, 4)
        put(data, base + LOB_FIRST_INDEX + 8, c.choice((LOB_FIRST_ENTRY, 0, 0xFFFF)), 2)
    elif how == "lob-entry":  # an entry whose next entry is itself
        entry = base + LOB_FIRST_ENTRY + 60 * c.integer(0, 9)
        put(data, entry + 6, page, 4)
        put(data, entry + 10, entry - base, 2)
    else:
        put(data, base + c.choice((39, 54)), c.choice((0xFFFFFFFF, o.physical)), 4)
        put(data, base + LOB_FIRST_ENTRY + 52, 0xFFFFFFFF, 4)  # an entry's data length
    return f"page {page} external chain: {how} -> {back}"


def list_node_loop(data: bytearray, o: Original, c: Chooser) -> str:
    """A file-list base or node (§9.2) whose first/last/prev/next address is its own."""
    page = c.choice((0, 0, 2, _page(o, c)))  # FSP header lists, the inode page, anywhere
    base = page * o.physical
    offset = c.choice((38 + 24, 38 + 40, 38 + 56, 38 + 72, 38 + 88, 50, 56, 150 + 8, 150 + 14))
    put(data, base + offset, c.choice((page, 0xFFFFFFFF, o.n_pages)), 4)
    put(data, base + offset + 4, c.choice((offset - 4, offset, 0)), 2)
    return f"page {page} list address at +{offset} loops"


# --- compression bombs and hostile JSON ------------------------------------------------------

BOMB_SIZES = (1 << 20, 16 << 20, 64 << 20)
_STREAMS: dict[tuple[str, int], bytes] = {}


def _compressed_zeros(how: str, size: int) -> bytes:
    if (how, size) not in _STREAMS:
        zeros = bytes(size)
        _STREAMS[how, size] = (
            zlib.compress(zeros, 9)
            if how == "zlib"
            else lzma.compress(zeros, format=lzma.FORMAT_XZ, check=lzma.CHECK_NONE)
        )
    return _STREAMS[how, size]


def bomb_stream(c: Chooser, fits: int) -> tuple[bytes, str]:
    """A compressed stream of at most ``fits`` bytes that inflates as far as it can."""
    how = c.choice(("zlib", "zlib", "lzma"))
    for size in sorted(BOMB_SIZES, reverse=True):
        stream = _compressed_zeros(how, size)
        if len(stream) <= fits:
            return stream, f"{how} of {size} zeros"
    return _compressed_zeros("zlib", 1 << 20)[:fits], "zlib of 1 MiB zeros (cut)"


def page_bomb(data: bytearray, o: Original, c: Chooser) -> str:
    """A compressed page whose payload inflates far past the page (§2.1, §3.1, §3.2)."""
    page = _page(o, c, 1)
    base = page * o.physical
    room = o.physical - 64
    stream, what = bomb_stream(c, room)
    layout = c.choice(("mysql14", "mariadb34354", "fcrc32", "zip"))
    if layout == "mysql14":
        put(data, base + 24, 14, 2)
        put(data, base + 26, 1, 1)
        put(data, base + 27, 1, 1)
        put(data, base + 30, o.logical - 38, 2)
        put(data, base + 32, len(stream), 2)
        data[base + 38 : base + 38 + len(stream)] = stream
    elif layout == "mariadb34354":
        put(data, base + 24, 34354, 2)
        put(data, base + 26, c.choice((1, 4)), 8)
        put(data, base + 38, len(stream), 2)
        data[base + 40 : base + 40 + len(stream)] = stream
    elif layout == "fcrc32":
        put(data, base + 24, 0x8000 | ((len(stream) + 14 + 255) >> 8), 2)
        data[base + 26 : base + 26 + len(stream)] = stream
    else:  # a zip index page's zlib stream at PAGE_DATA (§7.1)
        data[base + 94 : base + 94 + len(stream)] = stream[: o.physical - 94]
    return f"page {page} {layout} bomb: {what}"


def _sdi_record_data(data: bytearray, o: Original, length: int, blob: bytes) -> str:
    """Make the first SDI record ``blob`` (zlib of ``length`` bytes of JSON), if it fits."""
    if o.sdi_root is None:
        return "no SDI"
    base = o.sdi_root * o.physical
    if o.zip:  # a zip SDI page: the record (type, id, lengths, zlib) inside the page stream
        record = (1).to_bytes(4, "big") + (7).to_bytes(8, "big")
        record += length.to_bytes(4, "big") + len(blob).to_bytes(4, "big") + blob
        stream = zlib.compress(record, 9)
        if len(stream) > o.physical - 94:
            return "SDI record too big for the zip page"
        data[base + 94 : base + 94 + len(stream)] = stream
        return "zip SDI page stream replaced"
    at = base + _first_record(data, base)
    room = o.physical - 8 - (at - base) - SDI_RECORD_DATA
    if len(blob) > min(room, 0x3FFF):
        return "SDI record too big for the page"
    put(data, at + 25, length, 4)
    put(data, at + 29, len(blob), 4)
    data[at - 6] = 0x80 | (len(blob) >> 8)
    data[at - 7] = len(blob) & 0xFF
    data[at + SDI_RECORD_DATA : at + SDI_RECORD_DATA + len(blob)] = blob
    return "SDI record replaced"


_JSON: dict[tuple[str, int], tuple[int, bytes]] = {}


def hostile_json(kind: str, n: int) -> tuple[int, bytes]:
    """(length, zlib stream) of an SDI document that is ``n`` deep (``deep``) or ``n`` bytes
    of whitespace, zeros or empty objects, all valid JSON."""
    if (kind, n) not in _JSON:
        if kind == "deep":
            inner = b"[" * n + b"]" * n
        else:
            body = {"spaces": b" ", "zeros": b"0,", "objects": b"{},"}[kind]
            inner = b"[" + body * (n // len(body)) + b"0]"
        text = b'{"dd_object": {"x": ' + inner + b"}}"
        _JSON[kind, n] = (len(text), zlib.compress(text, 9))
    return _JSON[kind, n]


def sdi_bomb(data: bytearray, o: Original, c: Chooser) -> str:
    """An SDI record that inflates to far more JSON than any table has: whitespace, values."""
    kind = c.choice(("spaces", "zeros", "objects"))
    size = c.choice((1 << 20, 8 << 20, 15 << 20))
    return f"SDI {kind} bomb of {size}: " + _sdi_record_data(data, o, *hostile_json(kind, size))


def sdi_deep_json(data: bytearray, o: Original, c: Chooser) -> str:
    depth = c.choice((50, 101, 500, 990, 3000, 100_000))
    return f"SDI JSON {depth} deep: " + _sdi_record_data(data, o, *hostile_json("deep", depth))


Mutator = Callable[[bytearray, Original, Chooser], str]

#: (mutator, weight): how often each is drawn
MUTATORS: list[tuple[Mutator, int]] = [
    (bit_flips, 6),
    (random_bytes, 4),
    (random_run, 3),
    (fil_header_extreme, 4),
    (fil_trailer_extreme, 1),
    (fsp_flags, 2),
    (fsp_header_extreme, 2),
    (hostile_type, 4),
    (hostile_mysql_compressed, 2),
    (hostile_mariadb_compressed, 2),
    (hostile_fcrc32_size, 2),
    (hostile_index_header, 3),
    (sdi_record_header, 2),
    (sdi_root_pointer, 2),
    (next_record_loop, 3),
    (page_chain_loop, 2),
    (sdi_self_loop, 2),
    (blob_loop, 2),
    (extern_chain_loop, 2),
    (list_node_loop, 2),
    (page_bomb, 2),
    (sdi_bomb, 1),
    (sdi_deep_json, 1),
]
WEIGHTED: list[Mutator] = [m for m, w in MUTATORS for _ in range(w)]


def mutate(o: Original, c: Chooser) -> tuple[bytes, list[str]]:
    """One damaged copy of ``o``: one to four mutations, sometimes truncated last."""
    data = bytearray(o.data)
    done = [c.choice(WEIGHTED)(data, o, c) for _ in range(c.choice((1, 1, 1, 2, 4)))]
    if c.integer(0, 9) == 0:  # last: the other mutators aim at whole pages
        done.append(truncate(data, o, c))
    return bytes(data), done


def warm() -> None:
    """Build every cached bomb and JSON document now (a long run then measures only inputs)."""
    for how in ("zlib", "lzma"):
        for size in BOMB_SIZES:
            _compressed_zeros(how, size)
    _compressed_zeros("zlib", 1 << 20)
    for kind in ("spaces", "zeros", "objects"):
        for size in (1 << 20, 8 << 20, 15 << 20):
            hostile_json(kind, size)
    for depth in (50, 101, 500, 990, 3000, 100_000):
        hostile_json("deep", depth)
