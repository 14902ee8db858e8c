"""Fast scans (header-only inflation, inline tallies, envelope-only counts) agree with the decoder.

``header_only`` decoding (``inspect``, ``pages``, the TUI's scan) inflates the first bytes of a
full_crc32 compressed image; on every page of every sample and corpus file each verdict and
header field must be what inflating the whole page gives — only ``compressed_size`` may differ
(the envelope's payload bound instead of the bytes the stream took).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ibdtool.advise.simulate import _current_state, extent_tree_overhead
from ibdtool.errors import InputError
from ibdtool.parsers.codecs import codec_for
from ibdtool.parsers.crc32c_fast import crc32c
from ibdtool.parsers.envelope import (
    MARIADB_FCRC32_PAYLOAD,
    fcrc32_stored_size,
    may_have_stored_size,
    read_envelope,
    sized_pages,
)
from ibdtool.parsers.layout import allocated_for_image
from ibdtool.parsers.page import logical_image
from ibdtool.tablespace import pages_json as pagejson
from ibdtool.tablespace.checksum import check_file
from ibdtool.tablespace.header_pages import header_pages
from ibdtool.tablespace.inspect import InspectResult, inspect_tablespace
from ibdtool.tablespace.page_rows import read_page_rows
from ibdtool.tablespace.pages_json import json_lines
from ibdtool.tablespace.reader import Tablespace
from tests.catalog import load_catalog
from tests.conftest import SAMPLES

FILES = sorted(SAMPLES.rglob("*.ibd")) + [e.path for e in load_catalog() if e.path.is_file()]


def open_tablespaces() -> Iterator[Tablespace]:
    """Every file of :data:`FILES` that opens as a tablespace, open while the caller's loop
    body runs (the corpus keeps some files as bad input: those are skipped)."""
    for path in FILES:
        try:
            ts = Tablespace(path)
        except InputError:
            continue
        with ts:
            yield ts


def _same(path: Path) -> int:
    """Pages compared; asserts every field but compressed_size matches."""
    try:
        ts = Tablespace(path)
    except InputError:
        return 0  # files the corpus keeps as bad input
    n = 0
    with ts:
        for whole, head in zip(ts.pages(), ts.pages(header_only=True), strict=True):
            if whole.compression.value != "none" and not codec_for(whole.compression).available():
                continue
            assert dataclasses.replace(head, compressed_size=whole.compressed_size) == whole, (
                f"{path} page {whole.page_no}"
            )
            n += 1
    return n


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_header_only_scan_matches_whole_pages(path: Path) -> None:
    _same(path)


def test_header_only_covers_full_crc32_compressed_pages() -> None:
    """The comparison above does reach the pages the fast path changes."""
    compressed = 0
    for ts in open_tablespaces():
        if ts.format.full_crc32:
            compressed += sum(1 for i in ts.pages(header_only=True) if i.is_compressed)
    assert compressed > 100


def _tallies(path: Path) -> tuple[dict[str, object], dict[str, object]]:
    """inspect's result through the inline path, and through the decoder for every page.
    The file is flushed first: each pass reads the allocation map (a window at a time), and
    ext4 shows a block being written back as an unwritten extent until its write ends, so a
    file just written would change between the two passes."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    with Tablespace(path) as ts:
        inline = inspect_tablespace(ts, jobs=1, with_sdi=False).to_json()
        decoded = inspect_tablespace(
            ts, jobs=1, with_sdi=False, on_page=lambda _info: None
        ).to_json()
    return inline, decoded


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_inline_tally_matches_the_decoder(path: Path) -> None:
    try:
        inline, decoded = _tallies(path)
    except InputError:
        return  # the corpus keeps some bad input; test_bad_input covers it
    assert inline == decoded


def _damaged(src: Path, tmp_path: Path, flipped: tuple[int | None, ...]) -> tuple[Path, int]:
    """A copy of ``src`` with a byte flipped inside each page of ``flipped`` (None: the middle
    page), page 3 replaced by page n-3 (a wrong page number) and page n-2 zeroed; and n."""
    data = bytearray(src.read_bytes())
    with Tablespace(src) as ts:
        psize, n = ts.physical_size, ts.n_pages
    for victim in flipped:
        at = n // 2 if victim is None else victim
        data[at * psize + 60] ^= 0x5A  # inside every image, even a tiny compressed one
    data[3 * psize : 4 * psize] = data[(n - 3) * psize : (n - 2) * psize]
    data[(n - 2) * psize : (n - 1) * psize] = bytes(psize)
    path = tmp_path / "damaged.ibd"
    path.write_bytes(bytes(data))
    return path, n


@pytest.mark.parametrize(
    "rel",
    [
        "mariadb/p16k-plain.ibd",  # full_crc32 plain
        "mariadb/p16k-pc_zlib.ibd",  # full_crc32 compressed
        "mariadb/p16k-pc_lz4.ibd",
        "mariadb/p16k-crc32_plain.ibd",  # crc32
        "mariadb/p16k-crc32_pc_zlib.ibd",  # classic compressed (inspect_tally.classic_pages)
        "mariadb/p16k-crc32_pc_lz4.ibd",  # classic, another algorithm
        "mysql80/zlib.ibd",  # MySQL type 14 (classic_pages too)
        "mysql57/lz4.ibd",
        "mysql80/mixed_zlib_lz4.ibd",
        "mariadb/p16k-rc_kbs8.ibd",  # ROW_FORMAT=COMPRESSED (inspect_tally.zip_verified)
        "mysql80/kbs8.ibd",
        "mysql57/kbs4.ibd",
    ],
)
def test_inline_tally_sees_damage(rel: str, tmp_path: Path) -> None:
    """Flipped bytes, a page moved and a zeroed page: the inline path hands them on."""
    path, _n = _damaged(SAMPLES / rel, tmp_path, flipped=(1, None))
    inline, decoded = _tallies(path)
    assert inline == decoded
    assert len(inline["problems"]) >= 3  # type: ignore[arg-type]


def _sparse(src: Path, dst: Path) -> Path:
    """``src`` written to ``dst`` block by block, the all-zero blocks left as holes (what
    ``fallocate --dig-holes`` leaves): one data range a compressed page."""
    data = src.read_bytes()
    block = os.statvfs(dst.parent).f_bsize
    zero = bytes(block)
    with dst.open("wb") as f:
        for off in range(0, len(data), block):
            if data[off : off + block] != zero:
                f.seek(off)
                f.write(data[off : off + block])
        f.truncate(len(data))
        os.fsync(f.fileno())
    return dst


@pytest.mark.parametrize(
    "rel",
    ["mysql80/zlib.ibd", "mysql57/zlib.ibd", "mysql80/mixed_zlib_lz4.ibd", "mysql57/lz4.ibd"],
)
def test_inner_checksum_images_fragmented_match_the_decoder(rel: str, tmp_path: Path) -> None:
    """MySQL type-14 images (inflated whole by inspect_tally.classic_pages, their checksum
    being the inner page's) in a file of one extent a compressed page, whole and damaged: the
    inline tally is the decoder's, and those images did take the inline path."""
    path = _sparse(SAMPLES / rel, tmp_path / "sparse.ibd")
    damaged, _n = _damaged(path, tmp_path, flipped=(2, None))
    sparse_damaged = _sparse(damaged, tmp_path / "sparse-damaged.ibd")
    for p in (path, sparse_damaged):
        inline, decoded = _tallies(p)
        assert inline == decoded
        assert inline["data_ranges"] > inline["pages"] // 2  # type: ignore[operator]
    with Tablespace(path) as ts:
        decoded_pages = []
        real = ts._decode

        def counting(*args: object, **kw: object) -> object:
            decoded_pages.append(args[1])
            return real(*args, **kw)  # type: ignore[arg-type]

        ts._decode = counting  # type: ignore[method-assign]
        result = inspect_tablespace(ts, jobs=1, with_sdi=False)
    compressed = result.pages - result.compression.get("none", 0)
    assert compressed > 10
    assert len(decoded_pages) < result.pages - compressed  # the images were not decoded


def _decoded(ts: Tablespace) -> tuple[InspectResult, list[int]]:
    """inspect's result of ``ts`` and the pages it handed to the decoder."""
    decoded_pages: list[int] = []
    real = ts._decode

    def counting(*args: object, **kw: object) -> object:
        decoded_pages.append(args[1])  # type: ignore[arg-type]
        return real(*args, **kw)  # type: ignore[arg-type]

    ts._decode = counting  # type: ignore[method-assign]
    return inspect_tablespace(ts, jobs=1), decoded_pages


@pytest.mark.parametrize(
    "rel", ["mariadb/p16k-rc_kbs8.ibd", "mariadb/p16k-rc_kbs1.ibd", "mysql80/kbs8.ibd"]
)
def test_zip_pages_inline_match_the_decoder(rel: str, tmp_path: Path) -> None:
    """ROW_FORMAT=COMPRESSED pages tallied inline (their zip crc32 and stream), written sparse
    and damaged, give the decoder's result, zip fill (the leaves, in page order) included;
    and the inline path did take the index pages."""
    path = _sparse(SAMPLES / rel, tmp_path / "sparse.ibd")
    damaged, _n = _damaged(path, tmp_path, flipped=(2, None))
    for p in (path, damaged):
        with Tablespace(p) as ts:
            inline = inspect_tablespace(ts, jobs=1).to_json()
            decoded = inspect_tablespace(ts, jobs=1, on_page=lambda _info: None).to_json()
        assert inline == decoded
        assert inline["zip_fill"]["leaf_pages"] > 0  # type: ignore[index]
    with Tablespace(path) as ts:
        result, decoded_pages = _decoded(ts)
    assert sum(result.index_pages.values()) > len(decoded_pages)


def _bad_streams_good_crcs(rel: str, tmp_path: Path) -> tuple[Path, int]:
    """A copy of the full_crc32 compressed sample ``rel`` in which two images have a broken
    deflate stream yet a CRC-32C that verifies (recomputed, as a buggy writer would store it),
    and one a stream cut short: only the header inflate can tell. Returns it and the page
    count."""
    src = SAMPLES / rel
    data = bytearray(src.read_bytes())
    with Tablespace(src) as ts:
        psize, n = ts.physical_size, ts.n_pages
    broken = 0
    for page in range(1, n):
        off = page * psize
        ptype = int.from_bytes(data[off + 24 : off + 26], "big")
        size = fcrc32_stored_size(ptype, psize) if ptype & 0x8000 else None
        if size is None or any(data[off : off + 4]):
            continue
        payload = off + MARIADB_FCRC32_PAYLOAD
        if broken == 0:
            data[payload] ^= 0xFF  # the zlib header: not a zlib stream
        elif broken == 1:
            data[payload + 2] = 0xFF  # block type 3: reserved, an error
        else:
            data[payload + 8 : off + size - 4] = bytes(off + size - 4 - payload - 8)
        crc = crc32c(bytes(data[off : off + size - 4]))
        data[off + size - 4 : off + size] = crc.to_bytes(4, "big")
        broken += 1
        if broken == 3:
            break
    assert broken == 3
    path = tmp_path / "bad-streams.ibd"
    path.write_bytes(bytes(data))
    return path, n


@pytest.mark.parametrize("rel", ["mariadb/p16k-pc_zlib.ibd", "mariadb/p16k-pc_lz4.ibd"])
def test_fast_paths_hand_streams_that_do_not_inflate_to_the_decoder(
    rel: str, tmp_path: Path
) -> None:
    """A verified image whose header does not inflate goes to the decoder (which reports it)
    in inspect's chunk tally, pages --json and the TUI's records, like every other page."""
    path, _n = _bad_streams_good_crcs(rel, tmp_path)
    inline, decoded = _tallies(path)
    assert inline == decoded
    # zlib fails on both broken headers; an lz4 block has no block type, only the first breaks
    assert len(inline["problems"]) >= (2 if "zlib" in rel else 1)  # type: ignore[arg-type]
    assert "".join(json_lines(str(path), jobs=1)) == _rows_by_decoder(path)
    with Tablespace(path) as ts:
        assert list(header_pages(ts)) == list(ts.pages(header_only=True))


def _current_by_decoder(ts: Tablespace) -> dict[str, object]:
    """simulate's current-state figures computed from every decoded page (the old way)."""
    block = ts.allocation.fs_block_size
    per_page = ts.allocation.per_page_allocated(ts.physical_size, ts.n_pages)
    ideal = compressed = unpunched = 0
    algos: dict[str, int] = {}
    for info in ts.pages():
        if info.empty:
            continue
        if info.is_compressed and info.stored_size:
            compressed += 1
            algos[info.compression.value] = algos.get(info.compression.value, 0) + 1
            need = allocated_for_image(info.stored_size, ts.physical_size, block)
            ideal += need
            unpunched += per_page[info.page_no] > need
        else:
            ideal += ts.physical_size
    return {
        "compressed_pages": compressed,
        "algorithms": algos,
        "ideal_allocated": ideal + extent_tree_overhead(compressed + 1, block),
        "actual_allocated": ts.allocation.allocated,
        "unpunched_pages": unpunched,
    }


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_logical_images_are_the_decoders(path: Path) -> None:
    """``logical_image`` (simulate's pages: no checks, a view of the stored page where
    nothing is decompressed) gives every page of every sample and corpus file the bytes
    ``decode_page`` keeps; ``sized_pages`` picks, chunk by chunk, exactly the pages
    ``may_have_stored_size`` picks one by one."""
    try:
        ts = Tablespace(path)
    except InputError:
        return
    psize = ts.physical_size
    with ts:
        decoded = iter(ts.logical_pages())
        for n, chunk in ts.read_chunks(0, ts.n_pages, 64 * psize):
            views = [chunk[i : i + psize] for i in range(0, len(chunk), psize)]
            want = [
                i
                for i, v in enumerate(views)
                if may_have_stored_size(v[24:26], ts.format.full_crc32)
            ]
            assert sized_pages(chunk, psize, ts.format.full_crc32) == want, f"{path} page {n}"
            for i, view in enumerate(views):
                info, kept = next(decoded)
                assert info.page_no == n + i
                assert bytes(logical_image(view, ts.format)) == kept, f"{path} page {n + i}"
        assert next(decoded, None) is None


def test_logical_images_cover_every_compressed_kind() -> None:
    """The comparison above reaches pages that ``logical_image`` decompresses, of each
    page-compressed kind: MariaDB full_crc32 and classic, MySQL type 14."""
    kinds: dict[str, int] = {}
    for ts in open_tablespaces():
        for _n, chunk in ts.read_chunks(0, ts.n_pages):
            for i in range(0, len(chunk), ts.physical_size):
                view = chunk[i : i + ts.physical_size]
                if not isinstance(logical_image(view, ts.format), memoryview):
                    kind = read_envelope(view, ts.format).kind.value
                    kinds[kind] = kinds.get(kind, 0) + 1
    assert set(kinds) == {"fcrc32_compressed", "mariadb_compressed", "mysql_compressed"}, kinds
    assert min(kinds.values()) > 10, kinds


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_simulate_current_state_reads_envelopes_like_the_decoder(path: Path) -> None:
    try:
        ts = Tablespace(path)
    except InputError:
        return
    with ts:
        assert _current_state(ts) == _current_by_decoder(ts)


def _rows_by_decoder(path: Path, types: tuple[str, ...] = ()) -> str:
    """``pages --json`` the old way: every page decoded, each row encoded by json."""
    encode = json.JSONEncoder().encode
    return "".join(encode(row) + "\n" for row in read_page_rows(str(path), types=types))


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_json_lines_match_the_decoder(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Byte for byte, in one process and split over forked workers in small blocks."""
    try:
        expected = _rows_by_decoder(path)
    except InputError:
        return
    assert "".join(json_lines(str(path), jobs=1)) == expected
    monkeypatch.setattr(pagejson, "BLOCK_PAGES", 3)
    monkeypatch.setattr(pagejson, "PARALLEL_MIN_PAGES", 1)
    assert "".join(json_lines(str(path), jobs=3)) == expected


@pytest.mark.parametrize(
    "rel",
    [
        "mariadb/p16k-plain.ibd",
        "mariadb/p16k-pc_zlib.ibd",
        "mariadb/p16k-crc32_plain.ibd",
        "mariadb/p16k-crc32_pc_zlib.ibd",  # classic compressed (inspect_tally.classic_pages)
    ],
)
def test_json_lines_see_damage_and_filters(rel: str, tmp_path: Path) -> None:
    """Damaged pages leave the template to the decoder, and --type filters both the same."""
    path, n = _damaged(SAMPLES / rel, tmp_path, flipped=(2,))
    got = "".join(json_lines(str(path), jobs=2))
    assert got == _rows_by_decoder(path)
    assert got.count('"problem": null') <= n - 2  # the flipped byte, the page moved
    for types in (("INDEX",), ("ALLOCATED", "3")):
        assert "".join(json_lines(str(path), types=types)) == _rows_by_decoder(path, types)


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_header_pages_are_the_decoders_records(path: Path) -> None:
    """The TUI's per-page records built from the stored bytes equal the decoder's, field by
    field (and over a range that starts and ends inside the file)."""
    try:
        ts = Tablespace(path)
    except InputError:
        return
    with ts:
        assert list(header_pages(ts)) == list(ts.pages(header_only=True)), path
        n = ts.n_pages
        assert list(header_pages(ts, 1, n - 1)) == list(ts.pages(1, n - 1, header_only=True))


def test_header_pages_see_damage(tmp_path: Path) -> None:
    for rel in (
        "mariadb/p16k-plain.ibd",
        "mariadb/p16k-pc_zlib.ibd",
        "mariadb/p16k-crc32_plain.ibd",
    ):
        data = bytearray((SAMPLES / rel).read_bytes())
        with Tablespace(SAMPLES / rel) as ts:
            psize, n = ts.physical_size, ts.n_pages
        data[2 * psize + 60] ^= 0x5A
        data[3 * psize : 4 * psize] = data[(n - 3) * psize : (n - 2) * psize]
        path = tmp_path / rel.replace("/", "-")
        path.write_bytes(bytes(data))
        with Tablespace(path) as ts:
            records = list(header_pages(ts))
            assert records == list(ts.pages(header_only=True))
        assert sum(r.problem is not None for r in records) >= 2


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_checksum_fast_path_matches_the_decoder(path: Path) -> None:
    """``checksum``'s chunk verdicts (plain and page-compressed pages at once) against the
    decoder's, page for page, on every sample and corpus file."""
    try:
        with Tablespace(path) as ts:
            infos = list(ts.pages())
    except InputError:
        return
    counts: dict[str, int] = {}
    for info in infos:
        key = "invalid" if info.checksum_valid is False else info.checksum_algo.value
        counts[key] = counts.get(key, 0) + 1
    got = check_file(str(path), jobs=1)
    assert dict(got.by_algorithm) == counts
    assert got.invalid_pages == [i.page_no for i in infos if i.checksum_valid is False]
