"""``inspect``'s inline path: the common pages tallied straight from their stored bytes.

A scan of a large file spends its time on a few kinds of page: all-zero ones, plain pages with a
good crc32 or full_crc32 checksum, full_crc32 page-compressed images with a good CRC-32C (§3.2,
§6.6), MariaDB classic page_compressed images (§3.1) and MySQL type-14 images (§2.1) whose inner
page verifies. Those are tallied here from one chunk read at a time (into one reused buffer),
without a :class:`~ibdtool.parsers.page.PageInfo` per page: the plain ones with their headers
unpacked together and their CRCs mapped over memoryviews (:mod:`ibdtool.parsers.pagecolumns`), the
full_crc32 compressed ones with their CRCs mapped the same way and only the header of the page
inside inflated (:data:`ibdtool.parsers.page.HEADER_PREFIX` bytes through the codec registry,
:func:`compressed_headers`; zlib ones a chunk at a time in compiled code where it is built,
:mod:`ibdtool.parsers.fcrc32_native`, with the Python path as its reference), the classic and MySQL
ones inflated whole, once, since their checksum is inside (:func:`classic_pages`); the headers of a
chunk's compressed pages are then unpacked together too. Every other page — damaged, encrypted,
MySQL compressed and encrypted, those whose codec is not installed, zip, innodb-checksummed, a page
number that does not match, a doublewrite copy — goes through
:func:`ibdtool.parsers.page.decode_page` as before, so the tally is exactly the decoder's (the tests
compare both on every sample and corpus file, damaged copies too). Holes are counted by
:mod:`ibdtool.tablespace.inspect` without reading them; this takes the runs that hold data.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache
from itertools import compress, repeat
from operator import add, and_, mul, not_, or_, sub
from typing import TYPE_CHECKING, NamedTuple

from ibdtool.parsers._structs_gen import FIL_HEADER_FAST
from ibdtool.parsers.checksum import ChecksumAlgo, zip_crc32
from ibdtool.parsers.codecs import FCRC32_LENGTH_BYTE, CodecError, codec_for
from ibdtool.parsers.constants import (
    FIL_PAGE_COMPRESS_FCRC32_MARKER,
    FIL_PAGE_COMPRESSED,
    FIL_PAGE_PAGE_COMPRESSED,
    FIL_PAGE_RTREE,
    SDI_INDEX_ID,
    Algorithm,
    Vendor,
    index_types,
    page_type_name,
)
from ibdtool.parsers.crc32c_fast import crc32c
from ibdtool.parsers.envelope import (
    MARIADB_FCRC32_PAYLOAD,
    Kind,
    fcrc32_payload_end,
    fcrc32_stored_size,
    read_envelope,
)
from ibdtool.parsers.fcrc32_native import NativeChunk, chunk_reader, enabled
from ibdtool.parsers.index_fill import index_fill_sum
from ibdtool.parsers.pagecolumns import (
    INDEX_FIELDS,
    PREFIX_BYTES,
    columns,
    compressed_sized,
    plain_verified,
    prefix_columns,
    scatter,
    verdict_fields,
)
from ibdtool.tablespace.reader import Tablespace

if TYPE_CHECKING:
    from ibdtool.tablespace.page_tally import PageTally

_COMPACT = 0x8000  # PAGE_N_HEAP bit 15: the page is in compact format (§5.1)


def tally_run(
    ts: Tablespace,
    first: int,
    end: int,
    tally: PageTally,
    per_page: Sequence[int],
    free: bytearray,
) -> None:
    """Tally pages [first, end) of ``ts`` into ``tally``; ``per_page[k]`` and ``free[k]`` are
    the allocated bytes and the free flag of page ``first + k``. Pages the inline path leaves
    to the decoder go to :meth:`PageTally.add`."""
    fmt = ts.format
    psize = ts.physical_size
    logical = ts.logical_size
    block = ts.fs_block_size
    fcrc32 = fmt.full_crc32
    crc32_plain = not fcrc32 and not fmt.zip
    vendor = fmt.vendor
    idx_types = index_types(vendor)
    algorithm = fmt.fcrc32_algorithm if fcrc32 else None
    partial: Callable[..., bytes] | None = None
    read_all: Callable[[Sequence[bytes | memoryview]], list[bytes]] | None = None
    if algorithm is not None and algorithm is not Algorithm.NONE:
        partial = codec_for(algorithm).prefix_reader(PREFIX_BYTES, logical)
        read_all = codec_for(algorithm).prefix_batch(PREFIX_BYTES, logical)
    algo_name = algorithm.value if algorithm is not None else ""
    # full_crc32 zlib images through the compiled chunk loop where it is built and allowed
    native = algorithm is Algorithm.ZLIB and enabled()
    dblwr = ts.doublewrite_pages
    zero = bytes(psize)
    names: dict[int, str] = {}
    head = FIL_HEADER_FAST.unpack_from
    types, comp, chk = tally.types, tally.comp, tally.chk
    stored_types = tally.stored_types
    none_name = Algorithm.NONE.value
    ok_name = ChecksumAlgo.FULL_CRC32.value if fcrc32 else ChecksumAlgo.CRC32.value
    fill_sum = 0.0
    n_plain = n_empty = n_comp = 0
    #: algorithm name -> images of :func:`classic_pages` tallied
    n_classic: Counter[str] = Counter()
    # images whose checksum is the inner page's: MariaDB classic page_compressed (§3.1) and
    # MySQL type 14 (§2.1), in a crc32 tablespace
    classic = crc32_plain
    fields = (*verdict_fields(fcrc32), *INDEX_FIELDS)
    # ROW_FORMAT=COMPRESSED pages (§7): their zip checksum, the stream of index pages inflated
    zip_plain = fmt.zip and not fcrc32
    n_zip = leaves_from = 0

    def take(got: CompressedHeaders, at: int, stored: Sequence[int]) -> float:
        """Tally a chunk's compressed images that gave their header (``got``; ``at``: the
        chunk's first page within the run, ``stored``: the chunk's stored types); returns the
        sum of the leaf pages' fill."""
        if not any(got.ok):
            return 0.0
        _count_types(tally, got.heads["page_type"], got.ok, names, vendor)
        stored_types.update(stored if all(got.ok) else compress(stored, got.ok))
        _tally_images(tally, got, at, per_page, block)
        return _tally_plain(tally, got.heads, got.ok, at, per_page, free, idx_types, logical)

    for n, mv in ts.read_chunks(first, end):
        count = len(mv) // psize
        rest: Iterable[int] = range(count)
        if fcrc32 or crc32_plain:
            # the plain pages of the chunk at once (ibdtool.parsers.pagecolumns), the rest page by
            # page; a chunk of full_crc32 compressed images alone (its first page says to look)
            # has no plain page: only the columns its images need
            # the compiled loop reads a chunk that starts with an image once (the stored types
            # with the rest): a chunk of images alone needs nothing more of Python
            fast = native_headers(mv, psize, n, dblwr) if native and mv[24] & 0x80 else None
            cols: Mapping[str, Sequence[int]] | None
            if fast is not None:
                cols = {"page_type": fast[1].stored} if fast[1].marked == count else None
            else:
                cols = images_only(mv, psize) if partial is not None and mv[24] & 0x80 else None
            if cols is not None:
                good = [False] * count
            else:
                cols = columns(mv, psize, fcrc32, fields)
                good = plain_verified(mv, psize, n, fcrc32, cols)
                if dblwr:
                    good = [g and n + k not in dblwr for k, g in enumerate(good)]
            passed = good.count(True)
            if passed:
                n_plain += passed
                fill_sum += _tally_plain(
                    tally, cols, good, n - first, per_page, free, idx_types, logical
                )
                _count_types(tally, cols["page_type"], good, names, vendor)
                stored_types.update(compress(cols["page_type"], good))
            if passed == count:
                continue
            # the compressed images of the chunk at once (full_crc32: their CRCs, then their
            # headers; classic: each inflated whole, its checksum being inside)
            got: CompressedHeaders | None = None
            if fast is not None:
                got = fast[0]
            elif partial is not None and algorithm is not None:
                got = compressed_headers(mv, psize, n, cols, partial, algorithm, dblwr, read_all)
            elif classic:
                got = classic_pages(ts, mv, n, cols, good, dblwr)
            if got is not None:
                n_got = got.ok.count(True)
                if got.algorithms is not None:
                    n_classic.update(compress(got.algorithms, got.ok))
                else:
                    n_comp += n_got
                fill_sum += take(got, n - first, cols["page_type"])
                good = list(map(or_, good, got.ok))
                if passed + n_got == count:
                    continue
            rest = compress(range(count), map(not_, good))
        elif zip_plain:
            leaves_from = len(tally.zip_leaves)
            cols = columns(mv, psize, False, _ZIP_FIELDS)
            good = zip_verified(ts, mv, n, cols, dblwr)
            passed = good.count(True)
            if passed:
                n_zip += passed
                fill_sum += _tally_plain(
                    tally, cols, good, n - first, per_page, free, idx_types, logical
                )
                _zip_leaves(tally, cols, good, n, n - first, free, idx_types)
                _count_types(tally, cols["page_type"], good, names, vendor)
                stored_types.update(compress(cols["page_type"], good))
            if passed == count:
                continue
            rest = compress(range(count), map(not_, good))
        for i in rest:
            page_no = n + i
            off = i * psize
            allocated = per_page[page_no - first]
            is_free = free[page_no - first]
            chk_word, stored_no = head(mv, off)[:2]
            if (
                (stored_no != page_no or (dblwr and page_no in dblwr))
                and not stored_no
                and not chk_word
                and mv[off : off + psize].tobytes() == zero  # a memcmp, not byte by byte
            ):
                n_empty += 1
                if is_free:
                    tally.free_pages += 1
                    tally.free_allocated += allocated
                continue
            info = ts._decode(mv[off : off + psize], page_no, None, True)
            tally.add(info, allocated, block, bool(is_free))
        if zip_plain and len(tally.zip_leaves) > leaves_from + 1:
            # the decoder's leaves came after the inline ones: page order, as a whole pass gives
            tail = sorted(tally.zip_leaves[leaves_from:])
            tally.zip_leaves[leaves_from:] = array("I", tail)
    tally.fill_sum += fill_sum
    if n_empty:
        types["ALLOCATED"] = types.get("ALLOCATED", 0) + n_empty
        comp[none_name] = comp.get(none_name, 0) + n_empty
        chk[ChecksumAlgo.EMPTY.value] = chk.get(ChecksumAlgo.EMPTY.value, 0) + n_empty
        stored_types.add(0)
    if n_plain:
        comp[none_name] = comp.get(none_name, 0) + n_plain
    if n_comp:
        comp[algo_name] = comp.get(algo_name, 0) + n_comp
    for name, c in n_classic.items():  # each image's algorithm, named as the decoder does
        comp[name] = comp.get(name, 0) + c
    n_inner = sum(n_classic.values())
    if n_plain or n_comp or n_inner:
        chk[ok_name] = chk.get(ok_name, 0) + n_plain + n_comp + n_inner
    if n_zip:
        comp[none_name] = comp.get(none_name, 0) + n_zip
        zip_name = ChecksumAlgo.ZIP_CRC32.value
        chk[zip_name] = chk.get(zip_name, 0) + n_zip


#: the columns :func:`zip_verified` and the index tally read of a zip page
_ZIP_FIELDS = ("checksum", "page_no", "page_type", *INDEX_FIELDS)


def zip_verified(
    ts: Tablespace,
    mv: memoryview,
    first_page: int,
    cols: dict[str, tuple[int, ...]],
    dblwr: frozenset[int] | set[int] | None = None,
) -> list[bool]:
    """Per page of the chunk ``mv`` of a ROW_FORMAT=COMPRESSED tablespace: is it exactly what
    :func:`ibdtool.parsers.page.decode_page` calls a valid, unencrypted zip page with this page
    number and no problem? Its envelope a plain zip slot, a non-zero stored checksum equal to
    the zip crc32 (§6.5), and, for an index page, a zlib stream that inflates
    (:func:`ibdtool.parsers.page.zip_stream_length`, as the decoder does). Every other page
    (zero, innodb or legacy checksums, damage, encryption, R-tree pages, a doublewrite copy)
    is for the decoder."""
    from ibdtool.parsers.page import zip_stream_length  # the decoder's module: zip files only

    psize, logical, fmt = ts.physical_size, ts.logical_size, ts.format
    idx_types = index_types(fmt.vendor)
    count = len(cols["page_no"])
    ok = [False] * count
    stored, page_no, ptype = cols["checksum"], cols["page_no"], cols["page_type"]
    for k in range(count):
        n = first_page + k
        if not stored[k] or page_no[k] != n or (dblwr and n in dblwr):
            continue
        off = k * psize
        page = mv[off : off + psize]
        if stored[k] != zip_crc32(page, psize):
            continue
        env = read_envelope(page, fmt)
        if env.kind is not Kind.ZIP or env.encrypted or env.problem is not None:
            continue
        t = ptype[k]
        if t == FIL_PAGE_RTREE:
            continue  # its stream's length decides whether it is a leaf kept: the decoder's
        if t in idx_types and zip_stream_length(page, psize, logical) is None:
            continue  # the decoder names the problem
        ok[k] = True
    return ok


def _zip_leaves(
    tally: PageTally,
    cols: dict[str, tuple[int, ...]],
    good: list[bool],
    first_page: int,
    at: int,
    free: bytearray,
    idx_types: frozenset[int],
) -> None:
    """The zip leaf pages of the table's indexes among a chunk's inline pages (``good``), for
    :func:`ibdtool.tablespace.zip_fill.zip_fill_summary`: as :meth:`PageTally.add` keeps them."""
    ptype, level, index_id = cols["page_type"], cols["level"], cols["index_id"]
    for k in compress(range(len(good)), good):
        if (
            ptype[k] in idx_types
            and not level[k]
            and index_id[k] != SDI_INDEX_ID
            and not free[at + k]
        ):
            tally.zip_leaves.append(first_page + k)


def compressed_header(
    mv: memoryview,
    off: int,
    psize: int,
    ptype: int,
    read_header: Callable[[memoryview], bytes],
    algorithm: Algorithm,
) -> tuple[bytes, int, int] | None:
    """For the full_crc32 page-compressed image at ``off`` of ``mv`` (stored type ``ptype``)
    whose CRC-32C verifies: the first bytes of the page inside (``read_header``: the codec's
    :meth:`~ibdtool.parsers.codecs.Codec.prefix_reader` for
    :data:`~ibdtool.parsers.page.HEADER_PREFIX`), the image's stored size and the end of its payload
    (§3.2, §6.6); None for the decoder to say what else it is."""
    if not ptype & FIL_PAGE_COMPRESS_FCRC32_MARKER:
        return None
    size = fcrc32_stored_size(ptype, psize)
    if size is None:
        return None
    stored = int.from_bytes(mv[off + size - 4 : off + size], "big")
    if not stored or stored != crc32c(mv[off : off + size - 4]):
        return None
    image = mv[off : off + psize]
    stop_at = fcrc32_payload_end(image, size, algorithm)
    try:
        return read_header(image[MARIADB_FCRC32_PAYLOAD:stop_at]), size, stop_at
    except CodecError:
        return None


class CompressedHeaders(NamedTuple):
    """The compressed images of one chunk, from :func:`compressed_headers` (full_crc32) or
    :func:`classic_pages`: per page of the chunk, whether its header came out, and columns of
    that header."""

    ok: list[bool]
    #: :data:`HEADER_FIELDS` of the page inside (zeros where not ``ok``)
    heads: Mapping[str, Sequence[int]]
    #: the image's stored size (0 where not ``ok``)
    sizes: Sequence[int]
    #: the length of its compressed payload, as the decoder's ``compressed_size`` gives it
    #: (0 where not ``ok``)
    payload: Sequence[int]
    #: :func:`classic_pages`: each image's algorithm name ("" where not ``ok``); None for
    #: full_crc32 images, all of the tablespace's one algorithm
    algorithms: list[str] | None = None


#: the columns of a stored page :func:`compressed_headers` reads
IMAGE_FIELDS = ("checksum", "page_no", "page_type")
_MARKER = FIL_PAGE_COMPRESS_FCRC32_MARKER


def images_only(mv: memoryview, psize: int) -> dict[str, tuple[int, ...]] | None:
    """The :data:`IMAGE_FIELDS` columns of the chunk ``mv`` of a full_crc32 tablespace when
    every page of it is page-compressed (its type has the marker: no plain page, which
    :func:`~ibdtool.parsers.pagecolumns.plain_verified` would see, is among them); None when
    one is not."""
    cols = columns(mv, psize, True, IMAGE_FIELDS)
    return cols if all(map(_MARKER.__and__, cols["page_type"])) else None


#: what :func:`compressed_headers` unpacks from the page inside
HEADER_FIELDS = ("page_type", *INDEX_FIELDS)
_NO_HEAD = bytes(PREFIX_BYTES)


def compressed_headers(
    mv: memoryview,
    psize: int,
    first_page: int,
    cols: Mapping[str, Sequence[int]],
    read_header: Callable[[memoryview], bytes],
    algorithm: Algorithm,
    dblwr: frozenset[int] | set[int] | None = None,
    read_all: Callable[[Sequence[bytes | memoryview]], list[bytes]] | None = None,
    *,
    native: bool = True,
) -> CompressedHeaders:
    """:func:`compressed_header` for every page of the chunk ``mv`` at once (``cols``: its
    :func:`~ibdtool.parsers.pagecolumns.columns` with the verdict fields): the CRC-32Cs in one
    :func:`~ibdtool.parsers.pagecolumns.compressed_sized` call, the headers inflated in one
    call of ``read_all`` (the codec's :meth:`~ibdtool.parsers.codecs.Codec.prefix_batch`; by
    default ``read_header`` mapped over them) and unpacked together
    (:func:`~ibdtool.parsers.pagecolumns.prefix_columns`): columns throughout, no Python step
    per page. A page whose header does not inflate, or that is in ``dblwr``, is not ``ok``: the
    decoder says what it is.

    zlib images go through the compiled chunk loop (:func:`native_headers`) where it is built
    and allowed, unless ``native`` is false: what follows is the reference it is tested
    against."""
    if native and algorithm is Algorithm.ZLIB and enabled():
        fast = native_headers(mv, psize, first_page, dblwr)
        if fast is not None:
            return fast[0]
    count = len(cols["page_no"])
    ok, type_sizes = compressed_sized(mv, psize, first_page, cols)
    if dblwr:
        ok = [g and first_page + k not in dblwr for k, g in enumerate(ok)]
    every = ok.count(True) == count
    where: Sequence[int] = range(count) if every else list(compress(range(count), ok))
    # compressed_sized took only the pages whose size is valid: never None here
    sizes: list[int] = type_sizes if every else list(compress(type_sizes, ok))  # type: ignore[assignment, arg-type]
    if algorithm in FCRC32_LENGTH_BYTE:
        pages = (mv[k * psize : (k + 1) * psize] for k in where)
        ends = list(map(fcrc32_payload_end, pages, sizes, repeat(algorithm)))
    else:
        ends = sizes  # the whole image: the codec stops at its end of stream (§3.2)
    starts = list(map(mul, where, repeat(psize)))
    spans = map(slice, map(add, starts, repeat(MARIADB_FCRC32_PAYLOAD)), map(add, starts, ends))
    payloads = list(map(mv.__getitem__, spans))
    try:
        got = read_all(payloads) if read_all is not None else list(map(read_header, payloads))
    except CodecError:  # one page that does not inflate: the chunk's again, page by page
        got = []
        for k, data in zip(where, payloads, strict=True):
            try:
                got.append(read_header(data))
            except CodecError:
                ok[k] = False
                got.append(_NO_HEAD)
        every = False
    payload_sizes = list(map(add, ends, repeat(-MARIADB_FCRC32_PAYLOAD)))
    if every:  # the common chunk: every header came out, each HEADER_PREFIX (PREFIX_BYTES) long
        heads, all_sizes, payload = got, sizes, payload_sizes
    else:
        taken = list(compress(where, map(ok.__getitem__, where)))
        kept = list(map(ok.__getitem__, where))
        heads = scatter(count, taken, compress(got, kept), _NO_HEAD)
        all_sizes = scatter(count, taken, compress(sizes, kept), 0)
        payload = scatter(count, taken, compress(payload_sizes, kept), 0)
    head_cols = prefix_columns(b"".join(heads), HEADER_FIELDS)
    return CompressedHeaders(ok, head_cols, all_sizes, payload)


@cache
def _native_reader(on: bool) -> Callable[[memoryview, int, int], NativeChunk | None] | None:
    return chunk_reader(HEADER_FIELDS, PREFIX_BYTES) if on else None


def native_headers(
    mv: memoryview,
    psize: int,
    first_page: int,
    dblwr: frozenset[int] | set[int] | None = None,
) -> tuple[CompressedHeaders, NativeChunk] | None:
    """:func:`compressed_headers` of a chunk of a full_crc32 zlib tablespace through the
    compiled chunk loop (:mod:`ibdtool.parsers.fcrc32_native`), with the loop's own answer
    (the stored types, how many pages are marked compressed); None without the library, or
    for a chunk holding a doublewrite page (the Python path leaves those to the decoder)."""
    read = _native_reader(enabled())
    if read is None:
        return None
    if dblwr and not dblwr.isdisjoint(range(first_page, first_page + len(mv) // psize)):
        return None
    got = read(mv, psize, first_page)
    if got is None:
        return None
    return CompressedHeaders(got.ok, got.heads, got.sizes, got.payload), got


def classic_pages(
    ts: Tablespace,
    mv: memoryview,
    first_page: int,
    cols: Mapping[str, Sequence[int]],
    good: list[bool],
    dblwr: frozenset[int] | set[int] | None = None,
) -> CompressedHeaders:
    """The page-compressed images of the chunk ``mv`` whose checksum is the inner page's
    (pages not already ``good``): MariaDB classic page_compressed images (§3.1) and MySQL
    type-14 images (§2.1), each inflated whole, once, through
    :func:`ibdtool.tablespace.checksum.classic_inner`, and the header of the page inside unpacked
    with the others'; each named by its own algorithm. Codecs not installed, damage, wrong page
    numbers and ``dblwr`` pages are not ``ok``: the decoder says what they are."""
    psize, logical, fmt = ts.physical_size, ts.logical_size, ts.format
    # the envelope's reading of the type word (ibdtool.parsers.envelope.read_envelope)
    mariadb = fmt.vendor is not Vendor.MYSQL
    count = len(good)
    ok = [False] * count
    heads = [_NO_HEAD] * count
    sizes = [0] * count
    payload = [0] * count
    algorithms = [""] * count
    ptype, page_no = cols["page_type"], cols["page_no"]
    # a type-14 image is MySQL's whatever the vendor, unless MariaDB encryption may claim it
    # (the envelope's order): then its common case straight from its bytes
    type14_fast = not fmt.crypt_encrypted
    zlib_name = Algorithm.ZLIB.value  # an enum's value is a descriptor call: once
    for k in compress(range(count), map(not_, good)):
        n = first_page + k
        t = ptype[k]
        if page_no[k] != n or (dblwr and n in dblwr):
            continue
        off = k * psize
        if t != FIL_PAGE_COMPRESSED and (t != FIL_PAGE_PAGE_COMPRESSED or not mariadb):
            continue
        # the checksum module (and its result classes) only for these images: a file
        # without them never loads it (tests/test_startup.py)
        from ibdtool.tablespace.checksum import classic_inner, mysql_zlib_inner

        if t == FIL_PAGE_COMPRESSED and type14_fast:
            fast = mysql_zlib_inner(mv[off : off + psize], logical, PREFIX_BYTES)
            if fast is not None:
                ok[k] = True
                heads[k], sizes[k], payload[k] = fast
                algorithms[k] = zlib_name
                continue
        got = classic_inner(mv[off : off + psize], fmt, logical)
        if got is not None:
            ok[k] = True
            heads[k] = got[0][:PREFIX_BYTES]
            sizes[k], payload[k], algorithms[k] = got[1], got[2], got[3]
    head_cols = prefix_columns(b"".join(heads), HEADER_FIELDS)
    return CompressedHeaders(ok, head_cols, sizes, payload, algorithms)


class _BlockSizes(dict[int, int]):
    """An image size -> that size rounded up to whole filesystem blocks, each worked out
    once."""

    def __init__(self, block: int) -> None:
        super().__init__()
        self.block = block

    def __missing__(self, size: int) -> int:
        rounded = self[size] = -(-size // self.block) * self.block
        return rounded


@cache
def _block_sizes(block: int) -> _BlockSizes:
    return _BlockSizes(block)


def _tally_images(
    tally: PageTally, got: CompressedHeaders, at: int, per_page: Sequence[int], block: int
) -> None:
    """The stored sizes of a chunk's compressed images (``got``): their sum, and the slots
    holding more than the image needs (not punched), column by column."""
    count = len(got.ok)
    tally.compressed_bytes += sum(got.sizes)
    sizes: Iterable[int] = got.sizes
    held: Iterable[int] = per_page[at : at + count]
    if got.ok.count(True) != count:
        sizes, held = compress(sizes, got.ok), compress(held, got.ok)
    # the image's size rounded up to whole blocks, looked up (a file's images take a few
    # dozen sizes)
    ideal = map(_block_sizes(block).__getitem__, sizes)
    over = list(filter((0).__lt__, map(sub, held, ideal)))
    tally.unpunched_pages += len(over)
    tally.unpunched_bytes += sum(over)


def _count_types(
    tally: PageTally,
    page_types: Sequence[int],
    mask: list[bool],
    names: dict[int, str],
    vendor: Vendor,
) -> None:
    """Count the types of the pages of ``mask`` by name into ``tally.types``."""
    types = tally.types
    for stype, c in Counter(page_types if all(mask) else compress(page_types, mask)).items():
        name = names.get(stype)
        if name is None:
            name = names[stype] = page_type_name(stype, vendor)
        types[name] = types.get(name, 0) + c


def _tally_plain(
    tally: PageTally,
    cols: Mapping[str, Sequence[int]],
    good: list[bool],
    at: int,
    per_page: Sequence[int],
    free: bytearray,
    idx_types: frozenset[int],
    logical: int,
) -> float:
    """Add the verified plain pages of one chunk (``good``; ``at``: the chunk's first page
    within the run) to ``tally``, all but their type counts; returns the sum of the leaf
    pages' fill (the caller sums it as the page loop sums the others). A chunk of good index
    pages alone (the common one) is taken column by column as it is, without selecting."""
    count = len(good)
    window = free[at : at + count]
    if any(window):
        free_good = list(map(and_, good, window))
        n_free = free_good.count(True)
        if n_free:
            tally.free_pages += n_free
            tally.free_with_data += n_free
            tally.free_allocated += sum(compress(per_page[at : at + count], free_good))
    is_index = list(map(idx_types.__contains__, cols["page_type"]))
    if good.count(True) == count and all(is_index):
        ids, levels, n_heap = cols["index_id"], cols["level"], cols["n_heap"]
        heap_top, garbage = cols["heap_top"], cols["garbage"]
    else:
        index_mask = list(map(and_, good, is_index))
        if not any(index_mask):
            return 0.0
        ids = tuple(compress(cols["index_id"], index_mask))
        levels = tuple(compress(cols["level"], index_mask))
        n_heap = tuple(compress(cols["n_heap"], index_mask))
        heap_top = tuple(compress(cols["heap_top"], index_mask))
        garbage = tuple(compress(cols["garbage"], index_mask))
    per_index = Counter(ids)
    tally.index_pages.update(per_index)
    if any(levels):
        tally.index_levels.update(zip(ids, levels, strict=True))
        leaves = list(map(not_, levels))
        leaf: list[bool] | None = leaves
        n_leaf = leaves.count(True)
    else:  # leaves alone: a count per index
        levels_of = tally.index_levels
        for index_id, c in per_index.items():
            levels_of[index_id, 0] += c
        leaf, n_leaf = None, len(levels)
    compact = sum(map(_COMPACT.__and__, n_heap)) // _COMPACT  # the compact bit (§5.1)
    redundant = len(n_heap) - compact
    if SDI_INDEX_ID in per_index:  # the SDI index counts in neither
        for index_id, nh in zip(ids, n_heap, strict=True):
            if index_id == SDI_INDEX_ID:
                compact -= bool(nh & _COMPACT)
                redundant -= not nh & _COMPACT
    tally.compact_pages += compact
    tally.redundant_pages += redundant
    tally.fill_n += n_leaf
    if leaf is not None:
        n_heap = tuple(compress(n_heap, leaf))
        heap_top = tuple(compress(heap_top, leaf))
        garbage = tuple(compress(garbage, leaf))
    return index_fill_sum(n_heap, heap_top, garbage, logical)
