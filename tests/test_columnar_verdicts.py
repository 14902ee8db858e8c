"""The columnar verdicts of a chunk (``ibdtool.parsers.pagecolumns``, ``Codec.prefix_batch``,
``inspect_tally.compressed_headers``) against a page-by-page computation of the same rules.

The scans decide a whole chunk's cheap checks with one tuple comparison per column when every
page passes them, and page by page when one does not; they scatter the CRC verdicts and
inflate the zlib headers of a chunk in one call. Here each chunk's verdicts are worked out
again one page at a time, straight from FORMATS.md (§3.2, §6.1, §6.6), on every sample and
corpus file (chunks with zero, system and damaged pages: the page-by-page path) and on files
of a sample's pages repeated, renumbered and re-checksummed (whole chunks that pass: the
columnar path), once more with a page damaged in the middle of such a chunk.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from ibdtool.errors import InputError
from ibdtool.parsers.codecs import CODECS, CodecError, codec_for, decompress
from ibdtool.parsers.constants import Algorithm
from ibdtool.parsers.crc32c_fast import crc32c
from ibdtool.parsers.envelope import (
    MARIADB_FCRC32_PAYLOAD,
    fcrc32_payload_end,
    fcrc32_stored_size,
)
from ibdtool.parsers.page import HEADER_PREFIX
from ibdtool.parsers.pagecolumns import (
    INDEX_FIELDS,
    SPECIAL_TYPES,
    columns,
    compressed_sized,
    plain_verified,
    scatter,
    stored_sizes,
    verdict_fields,
)
from ibdtool.tablespace.inspect_tally import compressed_header, compressed_headers
from ibdtool.tablespace.reader import Tablespace
from tests.samples_manifest import sample
from tests.test_header_scan import FILES

PSIZE = 16384


def _u32(page: bytes, at: int) -> int:
    return int.from_bytes(page[at : at + 4], "big")


def _plain_ok(page: bytes, n: int, full_crc32: bool) -> bool:
    """§3.2 / §6.6 (full_crc32) and §6.1 (crc32), one page at a time."""
    psize = len(page)
    chk, page_no = _u32(page, 0), _u32(page, 4)
    lsn_low, ptype = _u32(page, 20), int.from_bytes(page[24:26], "big")
    if page_no != n:
        return False
    if full_crc32:
        stored = _u32(page, psize - 4)
        return (
            chk == 0  # key version: not encrypted
            and not ptype & 0x8000  # not page-compressed
            and _u32(page, psize - 8) == lsn_low
            and stored != 0
            and crc32c(page[: psize - 4]) == stored
        )
    return (
        chk != 0
        and ptype not in SPECIAL_TYPES
        and _u32(page, psize - 8) == chk
        and _u32(page, psize - 4) == lsn_low
        and crc32c(page[4:26]) ^ crc32c(page[38 : psize - 8]) == chk
    )


def _compressed_ok(page: bytes, n: int) -> tuple[bool, int | None]:
    """A full_crc32 page-compressed image at its own number whose CRC-32C verifies; and the
    image size its type gives."""
    psize = len(page)
    ptype = int.from_bytes(page[24:26], "big")
    size = fcrc32_stored_size(ptype, psize)
    if _u32(page, 4) != n or _u32(page, 0) or not ptype & 0x8000 or size is None:
        return False, size
    stored = _u32(page, size - 4)
    return stored != 0 and crc32c(page[: size - 4]) == stored, size


def repeated(src: Path, dst: Path, pages: int, damaged: int | None = None) -> Path:
    """A file of ``pages`` pages: ``src``'s first four, then its other written pages over and
    over, each renumbered with its checksum made again (so whole chunks verify); the page
    ``damaged`` gets a byte flipped after its checksum is made, the page 300 after it another
    page's number (its checksum made with it: a page at the wrong place)."""
    raw = src.read_bytes()
    with Tablespace(src) as ts:
        full_crc32 = ts.format.full_crc32
    slots = [raw[i : i + PSIZE] for i in range(0, len(raw), PSIZE)]
    body = [p for p in slots[4:] if any(p)]
    out = bytearray()
    for n in range(pages):
        page = bytearray(slots[n] if n < 4 else body[(n - 4) % len(body)])
        if n == 0:
            page[38 + 8 : 38 + 12] = pages.to_bytes(4, "big")  # FSP_SIZE
        page[4:8] = n.to_bytes(4, "big")
        if damaged is not None and n == damaged + 300:  # a page at the wrong place, intact
            page[4:8] = (n + 7).to_bytes(4, "big")
        ptype = int.from_bytes(page[24:26], "big")
        if full_crc32:
            size = fcrc32_stored_size(ptype, PSIZE) if ptype & 0x8000 else PSIZE
            assert size is not None
            page[size - 4 : size] = crc32c(bytes(page[: size - 4])).to_bytes(4, "big")
        elif ptype not in SPECIAL_TYPES:
            chk = (crc32c(bytes(page[4:26])) ^ crc32c(bytes(page[38 : PSIZE - 8]))).to_bytes(
                4, "big"
            )
            page[0:4] = page[PSIZE - 8 : PSIZE - 4] = chk
        if damaged is not None and n == damaged:
            page[200] ^= 0x5A  # a CRC that fails, the chunk's cheap checks all pass
        out += page
    dst.write_bytes(bytes(out))
    return dst


def _chunks(path: Path) -> Iterator[tuple[Tablespace, int, memoryview]]:
    try:
        ts = Tablespace(path)
    except InputError:
        return  # files the corpus keeps as bad input
    with ts:
        if ts.format.zip or ts.format.physical_size != ts.format.logical_size:
            return
        for n, mv in ts.read_chunks(0, ts.n_pages):
            yield ts, n, mv


def _check_file(path: Path) -> tuple[int, int]:
    """Compare every chunk's columnar verdicts with the page-by-page ones; returns (pages
    that verified plainly, compressed pages that verified)."""
    plain = compressed = 0
    for ts, first, mv in _chunks(path):
        psize, fcrc32 = ts.physical_size, ts.format.full_crc32
        cols = columns(mv, psize, fcrc32, (*verdict_fields(fcrc32), *INDEX_FIELDS))
        pages = [bytes(mv[k * psize : (k + 1) * psize]) for k in range(len(mv) // psize)]
        want = [_plain_ok(p, first + k, fcrc32) for k, p in enumerate(pages)]
        assert plain_verified(mv, psize, first, fcrc32, cols) == want, (path, first)
        plain += sum(want)
        if not fcrc32:
            continue
        ok, sizes = compressed_sized(mv, psize, first, cols)
        want_c = [_compressed_ok(p, first + k) for k, p in enumerate(pages)]
        assert (ok, sizes) == ([w for w, _ in want_c], [s for _, s in want_c]), (path, first)
        compressed += sum(ok)
        algorithm = ts.format.fcrc32_algorithm
        if algorithm is None or algorithm is Algorithm.NONE:
            continue
        codec = codec_for(algorithm)
        if not codec.available():
            continue
        one = codec.prefix_reader(HEADER_PREFIX, ts.logical_size)
        batch = codec.prefix_batch(HEADER_PREFIX, ts.logical_size)
        got = compressed_headers(mv, psize, first, cols, one, algorithm, None, batch)
        assert got == compressed_headers(mv, psize, first, cols, one, algorithm), (path, first)
        for k, page in enumerate(pages):
            ptype = int.from_bytes(page[24:26], "big")
            single = compressed_header(memoryview(page), 0, psize, ptype, one, algorithm)
            if not want_c[k][0] or single is None:
                assert not got.ok[k], (path, first + k)
                continue
            head, size, stop = single
            assert got.ok[k], (path, first + k)
            assert (got.sizes[k], got.payload[k]) == (size, stop - MARIADB_FCRC32_PAYLOAD)
            assert got.heads["page_type"][k] == int.from_bytes(head[24:26], "big")
            assert got.heads["index_id"][k] == int.from_bytes(head[66:74], "big")
    return plain, compressed


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_chunk_verdicts_are_the_page_by_page_ones(path: Path) -> None:
    _check_file(path)


@pytest.mark.parametrize(
    "rel",
    [
        "mariadb/p16k-plain.ibd",  # full_crc32 plain
        "mariadb/p16k-pc_zlib.ibd",  # full_crc32 compressed
        "mariadb/p16k-pc_lz4.ibd",  # full_crc32 compressed, a length byte
        "mariadb/p16k-crc32_plain.ibd",  # crc32
    ],
)
@pytest.mark.parametrize("damaged", [None, 300])
def test_whole_chunks_that_verify_and_one_that_does_not(
    rel: str, damaged: int | None, tmp_path: Path
) -> None:
    """Chunks of 256 renumbered pages: every page passes the cheap checks (the columnar
    path); with ``damaged``, one chunk's CRC fails on a page and another chunk has a page at
    the wrong number (page by page)."""
    path = repeated(sample(rel), tmp_path / "r.ibd", 700, damaged)
    plain, compressed = _check_file(path)
    assert plain + compressed >= 700 - 4 - 2 * (damaged is not None)


def test_stored_sizes_are_the_envelopes() -> None:
    for psize in (4096, 8192, 16384, 32768, 65536):
        types = range(1 << 16)
        assert stored_sizes(types, psize) == [fcrc32_stored_size(t, psize) for t in types]


def test_scatter() -> None:
    assert scatter(5, [1, 3], iter("ab"), "-") == ["-", "a", "-", "b", "-"]
    assert scatter(0, [], [], 0) == []


def _payloads(rel: str) -> list[memoryview]:
    out = []
    for ts, _first, mv in _chunks(sample(rel)):
        psize = ts.physical_size
        for k in range(len(mv) // psize):
            page = bytes(mv[k * psize : (k + 1) * psize])
            ptype = int.from_bytes(page[24:26], "big")
            size = fcrc32_stored_size(ptype, psize) if ptype & 0x8000 else None
            algorithm = ts.format.fcrc32_algorithm
            if size is not None and algorithm is not None:
                end = fcrc32_payload_end(page, size, algorithm)
                out.append(memoryview(page)[MARIADB_FCRC32_PAYLOAD:end])
    return out


@pytest.mark.parametrize("codec", [c for c in CODECS if c.algorithm], ids=lambda c: c.name)
def test_prefix_batch_is_prefix_reader_mapped(codec: object) -> None:
    """The same headers as one call per payload; an error where one payload fails."""
    from ibdtool.parsers.codecs import Codec

    assert isinstance(codec, Codec)
    if not codec.available():
        pytest.skip(f"{codec.name} not installed")
    rel = f"mariadb/p16k-pc_{codec.name}.ibd"
    if not (sample("mariadb/p16k-plain.ibd").parent / Path(rel).name).is_file():
        pytest.skip(f"no {rel}")
    payloads = _payloads(rel)
    assert len(payloads) > 10
    one = codec.prefix_reader(HEADER_PREFIX, PSIZE)
    batch = codec.prefix_batch(HEADER_PREFIX, PSIZE)
    assert batch(payloads) == list(map(one, payloads))
    broken = [*payloads[:3], memoryview(b"\x78\x9c\xff\xff\xff"), *payloads[3:]]
    with pytest.raises(CodecError):
        one(broken[3])
    with pytest.raises(CodecError):
        batch(broken)
    short = zlib.compress(b"x" * 10) if codec.name == "zlib" else None
    if short is not None:  # a stream that ends before the header does
        with pytest.raises(CodecError):
            batch([*payloads[:2], memoryview(short)])


def _plain_inside(image: bytes, algorithm: Algorithm) -> bytes:
    """The page inside a full_crc32 compressed ``image``, stored plain: its full_crc32
    trailer (LSN low word, CRC-32C) made for it (§3.2, §6.6)."""
    ptype = int.from_bytes(image[24:26], "big")
    size = fcrc32_stored_size(ptype, PSIZE)
    assert size is not None
    end = fcrc32_payload_end(image, size, algorithm)
    page = bytearray(decompress(algorithm, image[MARIADB_FCRC32_PAYLOAD:end], PSIZE))
    assert not int.from_bytes(page[24:26], "big") & 0x8000
    page[PSIZE - 8 : PSIZE - 4] = page[20:24]
    page[PSIZE - 4 :] = crc32c(bytes(page[: PSIZE - 4])).to_bytes(4, "big")
    return bytes(page)


@pytest.mark.parametrize(
    ("rel", "variant"),
    [
        *(
            (rel, variant)
            for rel in ("mariadb/p16k-pc_zlib.ibd", "mariadb/p16k-pc_lz4.ibd")
            for variant in ("clean", "damaged", "mixed")
        ),
        # chunks of plain index pages alone (taken column by column without selecting)
        ("mariadb/p16k-plain.ibd", "damaged"),
        ("mariadb/p16k-crc32_plain.ibd", "damaged"),
    ],
)
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "one-extent-a-page"])
@pytest.mark.parametrize("way", ["python", "native"])
def test_image_chunks_inline_match_the_decoder(
    rel: str,
    variant: str,
    sparse: bool,
    way: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Chunks of full_crc32 compressed images alone (``inspect_tally.images_only``: only the
    columns images need, no plain-page verdict) give inspect the decoder's result, whole and
    damaged (a CRC that fails, a page at the wrong number, in chunks that start with an
    image), with a plain page and an all-zero page among the images of a chunk that starts
    with one (the chunk then goes the way of mixed chunks), dense and one extent a page; and
    they did take that path. Chunks of plain index pages with a damaged one, too. The Python
    path (``IBDTOOL_NATIVE=0``) and the compiled chunk loop (zlib, where it is built: the
    chunks it reads wholly marked are its chunks of images alone)."""
    from ibdtool.parsers import fcrc32_native
    from ibdtool.tablespace import inspect_tally
    from tests.test_header_scan import _sparse, _tallies

    path = repeated(sample(rel), tmp_path / "r.ibd", 1100, 300 if variant == "damaged" else None)
    if variant == "mixed":
        data = bytearray(path.read_bytes())
        with Tablespace(path) as ts:
            algorithm = ts.format.fcrc32_algorithm
        assert algorithm is not None
        at = 520 * PSIZE
        plain = bytearray(_plain_inside(bytes(data[at : at + PSIZE]), algorithm))
        plain[4:8] = (520).to_bytes(4, "big")  # (the image's page number is 520 already)
        data[at : at + PSIZE] = plain
        data[530 * PSIZE : 531 * PSIZE] = bytes(PSIZE)
        path.write_bytes(bytes(data))
    if sparse:
        path = _sparse(path, tmp_path / "sparse.ibd")
    if way == "python":
        monkeypatch.setenv(fcrc32_native.SWITCH, "0")
    elif fcrc32_native.library() is None:
        pytest.skip(fcrc32_native.describe())
    taken: list[bool] = []
    real = inspect_tally.images_only
    real_native = inspect_tally.native_headers

    def counting(mv: memoryview, psize: int) -> dict[str, tuple[int, ...]] | None:
        cols = real(mv, psize)
        taken.append(cols is not None)
        return cols

    def counting_native(mv: memoryview, psize: int, first: int, dblwr: object = None) -> object:
        got = real_native(mv, psize, first, dblwr)
        if got is not None:
            taken.append(got[1].marked == len(mv) // psize)
        return got

    monkeypatch.setattr(inspect_tally, "images_only", counting)
    monkeypatch.setattr(inspect_tally, "native_headers", counting_native)
    inline, decoded = _tallies(path)
    assert inline == decoded
    if variant == "damaged":
        assert len(inline["problems"]) >= 2
    if "pc_" not in rel:
        return
    assert taken.count(True) >= 2  # chunks of images alone took the path
    if variant == "mixed":
        assert taken.count(False) >= 1  # the chunk with a plain page did not
        assert inline["compression"]["none"] >= 3  # page 0, the plain page, the zero page


def test_index_fill_sum_is_the_decoders_fills_summed() -> None:
    """``index_fill_sum`` (integers summed, one division) against the decoder's fill of each
    page (``index_fill``) summed page by page: every plain index page of the samples and the
    corpus chunk by chunk, and made headers that need clamping or mix record formats."""
    import math
    import random

    from ibdtool.parsers.index_fill import index_fill, index_fill_sum

    def check(n_heap: list[int], heap_top: list[int], garbage: list[int], logical: int) -> None:
        want = 0.0
        for h in zip(n_heap, heap_top, garbage, strict=True):
            want += index_fill(*h, logical)[1]
        got = index_fill_sum(n_heap, heap_top, garbage, logical)
        assert math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-12), (got, want)

    chunks = 0
    for ts, _first, mv in _chunks(sample("mariadb/p16k-plain.ibd")):
        cols = columns(mv, ts.physical_size, True, INDEX_FIELDS)
        check(list(cols["n_heap"]), list(cols["heap_top"]), list(cols["garbage"]), 16384)
        chunks += 1
    for path in FILES[:40]:
        for ts, _first, mv in _chunks(path):
            cols = columns(mv, ts.physical_size, ts.format.full_crc32, INDEX_FIELDS)
            args = [list(cols[f]) for f in ("n_heap", "heap_top", "garbage")]
            check(*args, ts.logical_size)
            chunks += 1
    assert chunks > 20
    rng = random.Random(7)
    for _ in range(300):
        k = rng.randrange(1, 40)
        compact = rng.choice([0x8000, 0, None])
        n_heap = [(compact if compact is not None else rng.choice([0x8000, 0])) | 5] * k
        heap_top = [rng.randrange(0, 20000) for _ in range(k)]  # under the supremum, past a page
        garbage = [rng.randrange(0, 3000) for _ in range(k)]
        check(n_heap, heap_top, garbage, rng.choice([4096, 16384, 65536]))
