"""The codec registry against the servers' own files: ids, the trailing length byte, partial
and capped decompression.

The oracle is the samples the real servers wrote (``samples/MANIFEST.json`` says which codec
each table was created with) and each decompressed page's own checksum, computed by the
server: a codec that decompresses to a page whose checksum verifies has decoded it right.
"""

from __future__ import annotations

import tracemalloc
import zlib
from pathlib import Path

import pytest

from ibdtool.parsers import checksum, codecimpl, codecs, syslibs
from ibdtool.parsers.constants import Algorithm
from tests.samples_manifest import manifest, sample

PAGE = 16384
FIL_PAGE_COMPRESSED = 14  # MySQL transparent compression (FORMATS.md §2.1)
FIL_PAGE_PAGE_COMPRESSED = 34354  # MariaDB classic page_compressed (§3.1)
FCRC32_MARKER = 0x8000  # MariaDB full_crc32 compressed image (§3.2)
MARIADB = ("zlib", "lz4", "lzo", "lzma", "bzip2", "snappy")  # the servers' documentation
MYSQL = ("zlib", "lz4")


def pages(path: Path, size: int = PAGE) -> list[bytes]:
    data = path.read_bytes()
    return [data[i : i + size] for i in range(0, len(data) - size + 1, size)]


def typ(page: bytes) -> int:
    return int.from_bytes(page[24:26], "big")


def mariadb_classic(name: str) -> list[tuple[int, bytes]]:
    """(algorithm id, payload) of each compressed page of the classic-format sample."""
    out = []
    for p in pages(sample(f"mariadb/p16k-crc32_pc_{name}.ibd")):
        if typ(p) == FIL_PAGE_PAGE_COMPRESSED:
            n = int.from_bytes(p[38:40], "big")  # FIL_PAGE_COMP_SIZE; payload at 40 (§3.1)
            out.append((int.from_bytes(p[26:34], "big"), p[40 : 40 + n]))
    assert out, name
    return out


def mysql_compressed(rel: str) -> list[tuple[int, bytes, bytes]]:
    """(algorithm id, page header with its original type, payload) of each type-14 page."""
    out = []
    for p in pages(sample(rel)):
        if typ(p) == FIL_PAGE_COMPRESSED:
            algo, orig_type, orig_size, n = p[27], p[28:30], p[30:32], p[32:34]
            assert int.from_bytes(orig_size, "big") == PAGE - 38
            head = p[:24] + orig_type + p[26:38]
            out.append((algo, head, p[38 : 38 + int.from_bytes(n, "big")]))
    assert out, rel
    return out


def test_the_registry_lists_what_the_servers_offer() -> None:
    assert codecs.names("mariadb") == MARIADB
    assert codecs.names("mysql") == MYSQL
    assert codecs.names(codecs.WHAT_IF) == ("zstd",)
    assert {c.algorithm for c in codecs.CODECS if c.algorithm} == set(Algorithm) - {Algorithm.NONE}
    assert all(c.available() for c in codecs.CODECS)


@pytest.mark.parametrize("name", MARIADB)
def test_mariadb_ids_and_pages(name: str) -> None:
    """Every compressed page of a table created with ``name`` carries the registry's id and
    decompresses to a page whose checksum verifies; any prefix is the page's prefix."""
    assert manifest()[f"mariadb/p16k-crc32_pc_{name}.ibd"]["compression_at_create"] == name
    codec = codecs.codec(name)
    for algo_id, payload in mariadb_classic(name):
        assert algo_id == codec.mariadb_id
        page = codec.decompress(payload, PAGE)
        assert checksum.verify_page(page, PAGE)[0]
        for n in (1, 38, 99, PAGE):
            assert codec.partial_decompress(payload, n, PAGE) == page[:n]


@pytest.mark.parametrize("rel", ["mysql80/zlib.ibd", "mysql80/lz4.ibd", "mysql57/lz4.ibd"])
def test_mysql_ids_and_pages(rel: str) -> None:
    name = manifest()[rel]["compression_at_create"]
    codec = codecs.codec(name)
    for algo_id, head, payload in mysql_compressed(rel):
        assert algo_id == codec.mysql_id
        body = codec.decompress(payload, PAGE - 38)
        assert checksum.verify_page(head + body, PAGE)[0]
        for n in (1, 38, PAGE - 38):
            assert codec.partial_decompress(payload, n, PAGE - 38) == body[:n]


def test_lz4_partial_without_the_system_library_gives_the_same_bytes() -> None:
    """LZ4_decompress_safe_partial (system liblz4) and the fallback (whole page, then cut)."""
    assert syslibs.liblz4() is not None  # scripts/setup.sh installs liblz4-1
    impl = codecs.codec("lz4").impl
    for _, payload in mariadb_classic("lz4")[:20]:
        for n in (1, 38, 500):
            assert impl.prefix(payload, n, PAGE) == codecimpl.Impl.prefix(impl, payload, n, PAGE)


@pytest.mark.parametrize("name", MARIADB)
def test_trailing_length_byte_is_the_files_rule(name: str) -> None:
    """§3.2: in a full_crc32 image, lz4/lzo/snappy keep the payload's low length byte before
    the CRC (they cannot skip padding); zlib/lzma/bzip2 read to the CRC. The registry's rule
    must decode every compressed page of MariaDB's own file to a verifying page."""
    rel = f"mariadb/p16k-pc_{name}.ibd"
    assert manifest()[rel]["compression_at_create"] == name
    codec = codecs.codec(name)
    seen = 0
    for page_no, p in enumerate(pages(sample(rel))):
        if not typ(p) & FCRC32_MARKER or typ(p) == 0xFFFF:
            continue
        size = (typ(p) & 0x7FFF) << 8
        assert checksum.verify_full_crc32(p, size, check_lsn=False)[0]  # the stored image
        end = size - 4
        if codec.length_byte:
            lsb = p[size - 5]
            end = size - 5 - (256 - lsb if lsb else 0)
        page = codec.decompress(p[26:end], PAGE)
        # the page inside has no checksum of its own (§3.2), but the server wrote its number
        # and its LSN twice: in the header and in the trailer
        assert int.from_bytes(page[4:8], "big") == page_no
        assert page[20:24] == page[PAGE - 8 : PAGE - 4]
        if codec.length_byte:
            with pytest.raises(codecs.CodecError):
                codec.decompress(p[26 : size - 4], PAGE)  # the padding breaks the stream
        seen += 1
    assert seen


@pytest.mark.parametrize("name", [c.name for c in codecs.CODECS])
def test_decompression_stops_at_the_size(name: str) -> None:
    """A payload of 8 MiB of zeros asked for one page: CodecError, and no more than a page or
    two is ever allocated (tracemalloc counts every bytes object a library returns, and the
    buffers of liblzma, whose dictionary the stream's header sizes: 8 MiB at preset 6, capped
    by LZMA_MEMLIMIT). A partial decompress either stops early or fails the same way."""
    codec = codecs.codec(name)
    payload = codec.compress(bytes(8 << 20))
    tracemalloc.start()
    try:
        with pytest.raises(codecs.CodecError):
            codec.decompress(payload, PAGE)
        try:
            assert codec.partial_decompress(payload, 100, PAGE) == bytes(100)
        except codecs.CodecError:
            assert name in ("lzo", "snappy")  # no early stop: the whole stream is over a page
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    dictionary = codecimpl.LZMA_MEMLIMIT if name == "lzma" else 0
    assert peak < 4 * PAGE + len(payload) + dictionary, peak


def test_partial_asks_for_more_than_there_is() -> None:
    for codec in codecs.CODECS:
        payload = codec.compress(bytes(1000))
        with pytest.raises(codecs.CodecError):
            codec.partial_decompress(payload, 1001, PAGE)


def test_tui_colours_follow_the_registry() -> None:
    from ibdtool.present import palette
    from ibdtool.present.pagemap import PageMap
    from ibdtool.tui import pagemodel

    names = [c.label for c in pagemodel.COMPRESSION_CATEGORIES[1:-1]]
    assert names == [a.value for a in codecs.on_disk()]
    colours = {palette.compression_color(n) for n in names}
    assert len(colours) == len(names) and palette.FALLBACK_ALGO_COLOR not in colours
    assert palette.compression_color("brotli") == palette.FALLBACK_ALGO_COLOR
    # the TUI's map and the static map (inspect --map, --map-svg) draw a codec alike
    tui_colours = {c.label: c.color for c in pagemodel.COMPRESSION_CATEGORIES[1:-1]}
    static = PageMap("compression", labels=[*names, "brotli"])
    static_colours = {c.label: c.color for c in static.legend()}
    assert static_colours == {**tui_colours, "brotli": palette.FALLBACK_ALGO_COLOR}


def _zlib_reference(data: bytes, size: int) -> tuple[bytes, int] | str:
    """zlib_page_inflate as it was before libdeflate: zlib alone (the error's words, or the
    page and the bytes the stream took)."""
    d = zlib.decompressobj()
    try:
        out = d.decompress(data, size + 1)
    except zlib.error as exc:
        return f"zlib: {exc}"
    if len(out) > size:
        return f"zlib stream inflates to more than {size} bytes"
    if len(out) != size:
        return f"zlib gave {len(out)} bytes, expected {size}"
    return out, len(data) - len(d.unused_data) if d.eof else len(data)


def _ours(data: bytes, size: int) -> tuple[bytes, int] | str:
    try:
        return codecs.zlib_page_inflate(data, size)
    except codecs.CodecError as exc:
        return str(exc)


def _zlib_payloads() -> list[tuple[bytes, int]]:
    """(payload, page size) of every zlib page payload the samples and the corpus hold:
    MariaDB classic (payload at 40), full_crc32 (26, to the image end) and MySQL type 14 (38,
    the body only), found from the stored headers."""
    from ibdtool.errors import InputError
    from ibdtool.parsers.envelope import MARIADB_FCRC32_PAYLOAD, fcrc32_stored_size
    from ibdtool.tablespace.reader import Tablespace
    from tests.catalog import load_catalog
    from tests.conftest import SAMPLES

    files = sorted(SAMPLES.rglob("*.ibd")) + [e.path for e in load_catalog() if e.path.is_file()]
    out: list[tuple[bytes, int]] = []
    for path in files:
        try:
            with Tablespace(path) as ts:
                psize, logical, fcrc32 = ts.physical_size, ts.logical_size, ts.format.full_crc32
        except InputError:
            continue
        data = path.read_bytes()
        for off in range(0, len(data) - psize + 1, psize):
            p = data[off : off + psize]
            t = typ(p)
            if fcrc32 and t & FCRC32_MARKER and not any(p[:4]):
                size = fcrc32_stored_size(t, psize)
                if size and p[MARIADB_FCRC32_PAYLOAD] == 0x78:
                    out.append((p[MARIADB_FCRC32_PAYLOAD:size], logical))
            elif not fcrc32 and t == FIL_PAGE_PAGE_COMPRESSED and p[26:34] == bytes(7) + b"\1":
                out.append((p[40 : 40 + int.from_bytes(p[38:40], "big")], logical))
            elif not fcrc32 and t == FIL_PAGE_COMPRESSED and p[27] == 1:
                out.append((p[38 : 38 + int.from_bytes(p[32:34], "big")], logical - 38))
    return out


def test_libdeflate_inflates_every_zlib_page_as_zlib_does() -> None:
    """Every zlib page payload of the samples and the corpus, whole and damaged (cut, flipped,
    trailing bytes, a wrong Adler-32, a smaller window, asked for less or more): the same page,
    the same bytes taken, or the same error in the same words as zlib alone."""
    assert syslibs.libdeflate() is not None  # Debian: libdeflate0 (scripts/setup.sh)
    payloads = _zlib_payloads()
    assert len(payloads) > 300
    fast = 0
    for k, (payload, size) in enumerate(payloads):
        fast += syslibs.deflate_zlib_page(payload, size) is not None
        variants = [
            (payload, size),
            (payload + bytes(300), size),  # padding after the stream, as on disk
            (payload[:-4] + bytes(4 ^ x for x in payload[-4:]), size),  # bad Adler-32
            (payload[: len(payload) // 2], size),  # cut short
            (payload[:-2], size),  # cut inside the Adler-32
            (payload, size - 1),  # more than the page
            (payload, size + 1),  # less than the page
            (b"\x28" + payload[1:], size),  # CINFO 2: a 1 KiB window
        ]
        if k % 7 == 0:
            flipped = bytearray(payload)
            flipped[len(payload) // 3] ^= 0x10
            variants.append((bytes(flipped), size))
        for data, want in variants:
            assert _ours(data, want) == _zlib_reference(data, want), (k, len(data), want)
    assert fast == len(payloads)  # libdeflate took every clean page


def test_libdeflate_view_is_the_page_copy() -> None:
    """``deflate_zlib_page_view`` (classic pages checked where libdeflate inflated them) gives
    what ``deflate_zlib_page`` gives, read-only, for every zlib page of the samples and the
    corpus and their damaged copies; the view of one page holds it only until the next."""
    payloads = _zlib_payloads()
    assert len(payloads) > 300
    for payload, size in payloads[::3]:
        for data in (payload, payload[: len(payload) // 2], b"\x28" + payload[1:]):
            copy = syslibs.deflate_zlib_page(data, size)
            view = syslibs.deflate_zlib_page_view(data, size)
            assert (view is None) == (copy is None)
            if view is not None and copy is not None:
                assert view[0].readonly and len(view[0]) == size
                assert (bytes(view[0]), view[1]) == copy
    first = payloads[0]
    second = next(p for p in payloads if p[1] == first[1] and p[0] != first[0])
    a = syslibs.deflate_zlib_page_view(*first)
    assert a is not None
    kept = bytes(a[0])
    syslibs.deflate_zlib_page_view(*second)
    assert bytes(a[0]) == syslibs.deflate_zlib_page(*second)[0]  # type: ignore[index]
    assert kept == syslibs.deflate_zlib_page(*first)[0]  # type: ignore[index]


@pytest.mark.parametrize("name", [c.name for c in codecs.CODECS])
def test_a_sizer_gives_the_length_compress_gives(name: str) -> None:
    """``Codec.sizer`` (what simulate's workers compress with) against ``Codec.compress`` on
    the plain sample's real pages, for each vendor and level: the same number whether a
    page comes as bytes, as a view of a writable buffer (handed to liblz4 in place) or of a
    read-only one, and the same again when one sizer runs page after page, out of order (a
    reused context or output buffer keeps nothing from one page to the next)."""
    codec = codecs.codec(name)
    real = [p for p in pages(sample("mariadb/p16k-plain.ibd")) if any(p)][:12]
    inputs = [*real, bytes(PAGE), bytes(range(256)) * 8, b"x"]
    levels = sorted({codec.levels[0], codec.default_level}) if codec.levels else [None]
    for vendor in (None, "mariadb", "mysql"):
        for level in levels:
            size = codec.sizer(level, vendor)
            want = [len(codec.compress(d, level, vendor)) for d in inputs]
            buf = bytearray(b"".join(inputs))
            views, at = [], 0
            for d in inputs:
                views.append(memoryview(buf)[at : at + len(d)])
                at += len(d)
            for form in (inputs, views, [v.toreadonly() for v in views]):
                assert [size(d) for d in form] == want, (vendor, level)
                assert [size(d) for d in reversed(form)] == want[::-1], (vendor, level)
            # MySQL compresses the page after its 38-byte header: a view of it, in place
            tails = [v[38:] for v in views if len(v) == PAGE]
            assert [size(t) for t in tails] == [
                len(codec.compress(bytes(t), level, vendor)) for t in tails
            ]


def test_mariadb_lz4_sizer_is_the_system_library() -> None:
    """MariaDB's lz4 is the system liblz4, whose output differs from python-lz4's by a few
    hundred bytes a page: the sizer must follow the vendor (the simulate tests hold it to
    the server's own files)."""
    assert syslibs.liblz4() is not None
    lz4 = codecs.codec("lz4")
    real = [p for p in pages(sample("mariadb/p16k-plain.ibd")) if any(p)][:12]
    server, package = lz4.sizer(None, "mariadb"), lz4.sizer(None, "mysql")
    assert [server(p) for p in real] == [len(syslibs.lz4_compress_default(p) or b"") for p in real]
    assert [server(p) for p in real] != [package(p) for p in real]


def test_mysql_zlib_pages_inflate_as_the_codec_does() -> None:
    """MySQL type-14 zlib pages (inflated through libdeflate when clean): the page the codec
    alone gives (header with its type put back, body through ``codecs.decompress``), or its
    error in the same words, for every such page of the samples and the corpus, whole and
    with a byte flipped in the stream."""
    from ibdtool.parsers.envelope import read_envelope
    from ibdtool.parsers.inflate import inflate
    from ibdtool.tablespace.reader import Tablespace
    from tests.conftest import SAMPLES

    def reference(page: bytes, fmt: object, logical: int) -> bytes | str:
        env = read_envelope(page, fmt)  # type: ignore[arg-type]
        try:
            if env.problem is not None:
                raise codecs.CodecError(env.problem)
            assert env.payload_end is not None
            body = codecs.decompress(env.algorithm, page[38 : env.payload_end], logical - 38)
        except codecs.CodecError as exc:
            return str(exc)
        return page[:24] + (env.original_type or 0).to_bytes(2, "big") + page[26:38] + body

    def ours(page: bytes, fmt: object, logical: int) -> bytes | str:
        try:
            return inflate(page, read_envelope(page, fmt), logical)[0]  # type: ignore[arg-type]
        except codecs.CodecError as exc:
            return str(exc)

    seen = errors = 0
    for path in sorted(SAMPLES.rglob("mysql*/*.ibd")):
        with Tablespace(path) as ts:
            fmt, logical = ts.format, ts.logical_size
            if fmt.zip:
                continue
            for n in range(ts.n_pages):
                page = ts.raw_page(n)
                if typ(page) != FIL_PAGE_COMPRESSED or page[27] != 1:
                    continue
                flipped = bytearray(page)
                flipped[38 + int.from_bytes(page[32:34], "big") // 2] ^= 0x10
                for p in (page, bytes(flipped)):
                    want = reference(p, fmt, logical)
                    assert ours(p, fmt, logical) == want, (path, n)
                    errors += isinstance(want, str)
                seen += 1
    assert seen > 50 and errors > 5


def _zlib_stream_reference(data: bytes, limit: int) -> tuple[bytes, int | None] | str:
    """``codecs.zlib_inflate`` as it was before libdeflate: zlib alone."""
    d = zlib.decompressobj()
    try:
        out = d.decompress(data, limit + 1)
    except zlib.error as exc:
        return f"zlib: {exc}"
    if len(out) > limit:
        return f"zlib stream inflates to more than {limit} bytes"
    return out, len(data) - len(d.unused_data) if d.eof else None


def _stream_ours(data: bytes, limit: int) -> tuple[bytes, int | None] | str:
    try:
        return codecs.zlib_inflate(data, limit)
    except codecs.CodecError as exc:
        return str(exc)


def _zip_streams() -> list[tuple[bytes, int]]:
    """(the bytes from PAGE_DATA to the page end, 2 × the logical page) of every
    ROW_FORMAT=COMPRESSED index page of the samples and the corpus: what
    ``zip_stream_length`` inflates."""
    from ibdtool.errors import InputError
    from ibdtool.tablespace.reader import Tablespace
    from tests.catalog import load_catalog
    from tests.conftest import SAMPLES

    files = sorted(SAMPLES.rglob("*.ibd")) + [e.path for e in load_catalog() if e.path.is_file()]
    out: list[tuple[bytes, int]] = []
    for path in files:
        try:
            with Tablespace(path) as ts:
                if not ts.format.zip or ts.format.full_crc32:
                    continue
                psize, logical = ts.physical_size, ts.logical_size
        except InputError:
            continue
        data = path.read_bytes()
        for off in range(0, len(data) - psize + 1, psize):
            p = data[off : off + psize]
            if typ(p) in (17855, 17853) and any(p[94:]):  # INDEX, SDI
                out.append((p[94:], 2 * logical))
    return out


def test_libdeflate_inflates_every_zip_stream_as_zlib_does() -> None:
    """Every zip page stream of the samples and the corpus, whole and damaged (cut, a byte
    flipped, a wrong Adler-32, a 32 KiB or a 1 KiB window declared, a preset dictionary asked
    for, a limit below its length): the same output and bytes taken, or the same error in
    the same words, as zlib alone; and libdeflate took the clean ones."""
    streams = _zip_streams()
    assert len(streams) > 100
    fast = 0
    for k, (body, limit) in enumerate(streams):
        fast += syslibs.deflate_zlib_stream(body, limit) is not None
        whole = _zlib_stream_reference(body, limit)
        assert not isinstance(whole, str) and whole[1] is not None, k
        used = whole[1]
        flipped = bytearray(body)
        flipped[used // 2] ^= 0x10
        adler = bytearray(body)
        adler[used - 1] ^= 0x01
        variants = [
            (body, limit),
            (body[:used], limit),  # nothing after the stream
            (body[: used // 2], limit),  # cut short
            (bytes(flipped), limit),
            (bytes(adler), limit),
            (bytes([0x78, 0x9C]) + body[2:], limit),  # 32 KiB window: another FCHECK too
            (bytes([0x28]) + body[1:], limit),  # CINFO 2: a 1 KiB window
            (bytes([body[0], body[1] | 0x20]) + body[2:], limit),  # FDICT
            (body, max(1, len(whole[0]) - 1)),  # more than the limit
            (body, len(whole[0])),  # exactly the limit
        ]
        for data, want in variants:
            assert _stream_ours(data, want) == _zlib_stream_reference(data, want), (k, want)
    assert fast == len(streams)


def test_libdeflate_inflates_sdi_records_as_zlib_does() -> None:
    """The SDI records of MySQL 8 samples (zlib streams of their JSON) come out of
    ``zlib_stream`` as zlib alone gives them."""
    from ibdtool.parsers import sdi
    from tests.conftest import SAMPLES

    seen: list[tuple[bytes, int]] = []
    real = sdi.zlib_stream

    def spy(data: bytes | memoryview, limit: int) -> tuple[bytes, int]:
        seen.append((bytes(data), limit))
        return real(data, limit)

    from ibdtool.tablespace.reader import Tablespace

    sdi.zlib_stream = spy  # type: ignore[assignment]
    try:
        for path in sorted(SAMPLES.glob("mysql80/*.ibd")):
            with Tablespace(path) as ts:
                ts.sdi()
    finally:
        sdi.zlib_stream = real
    assert len(seen) > 10
    for data, limit in seen:
        assert _stream_ours(data, limit) == _zlib_stream_reference(data, limit)
        assert syslibs.deflate_zlib_stream(data, limit) is not None


def test_libdeflate_streams_keep_no_buffer_for_a_claimed_length() -> None:
    """A stream whose caller allows more than ``STREAM_LIMIT_MAX`` (an SDI record's length
    comes from the file) goes to zlib, which allocates only what it inflates: the thread's
    libdeflate buffer never grows to what a hostile header claims."""
    body = zlib.compress(b"x" * 1000)
    big = syslibs.STREAM_LIMIT_MAX + 1
    assert syslibs.deflate_zlib_stream(body, big) is None
    assert codecs.zlib_inflate(body, big) == (b"x" * 1000, len(body))
    tracemalloc.start()
    try:
        codecs.zlib_inflate(body, 1 << 30)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
    assert syslibs.deflate_zlib_stream(body, 4096) == (b"x" * 1000, len(body))
