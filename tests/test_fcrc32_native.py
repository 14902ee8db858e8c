"""The compiled chunk loop of full_crc32 scans (``native/fcrc32_chunk.c`` through
:mod:`ibdtool.parsers.fcrc32_native`) gives exactly the Python path's answers.

* the library was built (``scripts/setup.sh``), for this interface, from the source as it is
  now — unless ``IBDTOOL_NATIVE_OPTIONAL=1`` says a machine may go without it;
* its CRC-32C, both the SSE4.2 instruction and the table, is the crc32c package's;
* every chunk of real files — MariaDB's full_crc32 zlib, lz4 and snappy pages (samples and the
  corpus), plain full_crc32 pages, a file of one extent a page — and of hypothesis-damaged
  pages (flipped bytes, sizes cut short or past the page, zero pages, hostile zlib payloads
  under a valid CRC-32C) is answered column by column as the Python path answers it
  (:mod:`tests.fuzz.native_chunks`);
* the documents ``inspect --json``, ``pages --json``, ``checksum`` and ``report --format json``
  are byte for byte the same with the loop on and off (``IBDTOOL_NATIVE=0``).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ibdtool.parsers import fcrc32_native
from ibdtool.parsers.crc32c_fast import crc32c
from tests.catalog import CORPUS, REPO
from tests.cli_runner import cli_env, run_ibdtool
from tests.fuzz.native_chunks import compare_bytes, compare_chunk
from tests.samples_manifest import sample
from tests.test_fragmented_files import fragmented

OPTIONAL = os.environ.get("IBDTOOL_NATIVE_OPTIONAL") == "1"

#: full_crc32 page_compressed files MariaDB wrote (zlib: the loop's headers; others: its CRCs)
SAMPLES = ("mariadb/p4k-pc_zlib.ibd", "mariadb/p16k-pc_zlib.ibd", "mariadb/p64k-pc_zlib.ibd")
OTHER_SAMPLES = ("mariadb/p16k-pc_lz4.ibd", "mariadb/p16k-pc_lzma.ibd", "mariadb/p16k-plain.ibd")
CORPUS_FILES = (
    "mariadb-10.11/p16k-pc_zlib-1000rows.ibd",
    "mariadb-10.11/p64k-pc_zlib-1000rows.ibd",
    "mariadb-10.11/p16k-pc_lz4-1000rows.ibd",
    "mariadb-10.11/p16k-pc_snappy-1000rows.ibd",
    "mariadb-10.11/p4k-plain-1000rows.ibd",
    "mariadb-TDE-demo/mysql/transaction_registry.ibd",
)

needs_library = pytest.mark.skipif(
    fcrc32_native.library() is None, reason=f"compiled loop: {fcrc32_native.describe()}"
)


def _files() -> list[Path]:
    return [sample(rel) for rel in (*SAMPLES, *OTHER_SAMPLES)] + [
        CORPUS / rel for rel in CORPUS_FILES
    ]


# --- the build --------------------------------------------------------------------------------


def test_the_library_was_built_from_this_source() -> None:
    """setup.sh built the loop (CI proves the build), for this interface, from the source as
    it is (its SHA-256, recorded by the build); IBDTOOL_NATIVE_OPTIONAL=1 lets a machine
    without a compiler go without."""
    lib, why = fcrc32_native._load()
    if lib is None and OPTIONAL:
        pytest.skip(f"IBDTOOL_NATIVE_OPTIONAL=1: {why}")
    assert lib is not None, f"the compiled chunk loop: {why}"
    source = REPO / "native" / "fcrc32_chunk.c"
    assert source == fcrc32_native.SOURCE
    assert fcrc32_native.built_from() == hashlib.sha256(source.read_bytes()).hexdigest(), (
        "native/fcrc32_chunk.c changed after the library was built: run scripts/build_native.sh"
    )


def test_the_switch_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(fcrc32_native.SWITCH, "0")
    assert fcrc32_native.library() is None
    assert fcrc32_native.chunk_reader((), 0) is None
    assert fcrc32_native.describe() == "Python path (IBDTOOL_NATIVE=0)"


# --- CRC-32C ----------------------------------------------------------------------------------


@needs_library
@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.binary(max_size=5000), st.integers(0, 7))
def test_crc32c_is_the_packages(data: bytes, skip: int) -> None:
    """Both paths of the C CRC-32C (every length and alignment: the SSE4.2 path's three
    interleaved 256-byte streams, its 8-byte steps and tail) against the crc32c package."""
    data = data[skip:]
    expected = crc32c(data)
    assert fcrc32_native.crc32c(data, 1) == expected  # the table
    hw = fcrc32_native.crc32c(data, 2)  # the instruction, where the CPU has it
    assert hw is None or hw == expected
    assert fcrc32_native.crc32c(data) == expected


@needs_library
def test_crc32c_of_long_buffers() -> None:
    rng = random.Random(24)
    for n in (767, 768, 769, 2303, 2304, 16380, 65532, 1 << 20):
        data = rng.randbytes(n)
        assert fcrc32_native.crc32c(data, 1) == crc32c(data)
        assert fcrc32_native.crc32c(data, 2) in (None, crc32c(data))


# --- real files, chunk by chunk -----------------------------------------------------------------


@needs_library
@pytest.mark.parametrize("path", _files(), ids=lambda p: p.name)
def test_real_files_chunk_by_chunk(path: Path) -> None:
    """Every chunk (64 pages, and odd sizes) at every page size, as the Python path reads it."""
    data = path.read_bytes()
    assert compare_bytes(data) > 0
    assert compare_bytes(data, chunk_pages=7) > 0


@needs_library
def test_every_corpus_file() -> None:
    """Every real file of the corpus (under 4 MiB), whatever its format: pages the loop must
    leave to the decoder (plain, zip, MySQL, encrypted) are left alike."""
    files = [p for p in sorted(CORPUS.rglob("*.ibd")) if p.stat().st_size < 4 << 20]
    assert len(files) > 50
    assert sum(compare_bytes(p.read_bytes()) for p in files) > 10_000


@needs_library
def test_the_loop_reads_the_real_images() -> None:
    """Not vacuous: on MariaDB's zlib files nearly every page is an image the loop reads."""
    for rel in SAMPLES:
        data = bytearray(sample(rel).read_bytes())
        psize = {"p4k": 4096, "p16k": 16384, "p64k": 65536}[rel.split("/")[1].split("-")[0]]
        got = compare_chunk(memoryview(data), psize, 0)
        assert got is not None and sum(got.ok) >= len(got.ok) // 10 > 0, rel
        assert any(got.heads["index_id"]) and any(got.heads["n_heap"])


@needs_library
def test_a_fragmented_file(tmp_path: Path) -> None:
    """One extent a page (MariaDB's pages renumbered, each with its CRC-32C)."""
    path = fragmented(tmp_path / "frag.ibd", 700)
    assert compare_bytes(path.read_bytes()) >= 700


# --- damaged pages ------------------------------------------------------------------------------


@st.composite
def damaged_chunk(draw: st.DrawFn) -> tuple[bytes, int, int]:
    """A chunk of a real zlib file's pages with hypothesis' damage: the bytes, the page size and
    the first page's number."""
    rel = draw(st.sampled_from(SAMPLES))
    psize = {"p4k": 4096, "p16k": 16384, "p64k": 65536}[rel.split("/")[1].split("-")[0]]
    src = _bytes_of(rel)
    pages = len(src) // psize
    first = draw(st.integers(0, pages - 1))
    count = draw(st.integers(1, min(6, pages - first)))
    data = bytearray(src[first * psize : (first + count) * psize])
    for _ in range(draw(st.integers(1, 4))):
        k = draw(st.integers(0, count - 1))
        base = k * psize
        kind = draw(
            st.sampled_from(
                ["flip", "size", "zero", "payload", "header", "number", "key", "truncate"]
            )
        )
        if kind == "flip":  # bytes flipped anywhere in the page
            for _ in range(draw(st.integers(1, 8))):
                at = base + draw(st.integers(0, psize - 1))
                data[at] ^= draw(st.integers(1, 255))
        elif kind == "size":  # any marked type: sizes 0, short, past the page, the largest
            data[base + 24 : base + 26] = (0x8000 | draw(st.integers(0, 0x7FFF))).to_bytes(2, "big")
        elif kind == "zero":
            data[base : base + psize] = bytes(psize)
        elif kind == "payload":  # hostile zlib bytes after the header
            at = base + 26 + draw(st.integers(0, 300))
            junk = draw(st.binary(min_size=1, max_size=64))
            data[at : at + len(junk)] = junk[: max(0, base + psize - at)]
        elif kind == "header":  # the zlib header itself: window sizes, dictionaries, methods
            data[base + 26] = draw(st.integers(0, 255))
            data[base + 27] = draw(st.integers(0, 255))
        elif kind == "number":
            data[base + 4 : base + 8] = draw(st.integers(0, 2**32 - 1)).to_bytes(4, "big")
        elif kind == "key":  # a key version: encrypted
            data[base : base + 4] = draw(st.integers(1, 2**32 - 1)).to_bytes(4, "big")
        else:  # the image cut short: a smaller size, its CRC made to match
            t = int.from_bytes(data[base + 24 : base + 26], "big")
            if t & 0x8000 and (t & 0x7FFF) > 1:
                units = draw(st.integers(1, (t & 0x7FFF) - 1))
                data[base + 24 : base + 26] = (0x8000 | units).to_bytes(2, "big")
        if draw(st.booleans()):  # the damage under a valid CRC-32C: the inflate sees it
            t = int.from_bytes(data[base + 24 : base + 26], "big")
            size = (t & 0x7FFF) << 8
            if t & 0x8000 and 256 <= size < psize:
                crc = crc32c(bytes(data[base : base + size - 4]))
                data[base + size - 4 : base + size] = crc.to_bytes(4, "big")
    return bytes(data), psize, first


_CACHE: dict[str, bytes] = {}


def _bytes_of(rel: str) -> bytes:
    if rel not in _CACHE:
        _CACHE[rel] = sample(rel).read_bytes()
    return _CACHE[rel]


@needs_library
@settings(
    max_examples=400,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(damaged_chunk())
def test_damaged_pages_answer_as_the_python_path(case: tuple[bytes, int, int]) -> None:
    data, psize, first = case
    compare_chunk(memoryview(bytearray(data)), psize, first)


def _image(payload: bytes, page_no: int, psize: int = 16384) -> bytes:
    """A full_crc32 page_compressed image holding ``payload`` (cut to fit), with its CRC-32C."""
    units = min((26 + len(payload) + 4 + 255) // 256, psize // 256 - 1)
    size = units * 256
    page = bytearray(psize)
    page[4:8] = page_no.to_bytes(4, "big")
    page[24:26] = (0x8000 | units).to_bytes(2, "big")
    body = payload[: size - 30]
    page[26 : 26 + len(body)] = body
    page[size - 4 : size] = crc32c(bytes(page[: size - 4])).to_bytes(4, "big")
    return bytes(page)


@needs_library
def test_made_zlib_streams_under_a_valid_crc() -> None:
    """The streams made so that zlib's verdict turns on its last steps (tests/test_prefix_inflate:
    empty and stored blocks, an invalid block right after the header's bytes, a stream that
    ends with the header or before it), and each with a byte made wrong every 7, in images
    whose CRC-32C verifies: the loop's verdict is zlib's."""
    from tests.test_prefix_inflate import _made_streams

    pages = []
    for data in _made_streams().values():
        pages.append(data)
        for at in range(0, min(len(data), 1536), 7):
            bad = bytearray(data)
            bad[at] ^= 0xFF
            pages.append(bytes(bad))
    chunk = bytearray(b"".join(_image(p, 100 + k) for k, p in enumerate(pages)))
    got = compare_chunk(memoryview(chunk), 16384, 100)
    assert got is not None
    assert 0 < sum(got.ok) < len(got.ok)  # headers out, and zlib errors or short streams


@needs_library
@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(
    st.binary(min_size=1024, max_size=3 * 4096),
    st.sampled_from([1024, 2048, 4096]),
    st.integers(0, 2**40),
)
def test_any_bytes_any_geometry(data: bytes, psize: int, first: int) -> None:
    """Raw bytes as pages of any size the loop takes (1K and 2K too), numbered anywhere: no
    crash, the Python path's answer."""
    compare_chunk(memoryview(bytearray(data)), psize, first)


@needs_library
def test_arguments_out_of_range_are_refused() -> None:
    """A page size outside 1K–64K, or a prefix past the loop's buffer: no answer (the caller's
    Python path), nothing read."""
    from ibdtool.tablespace.inspect_tally import HEADER_FIELDS

    read = fcrc32_native.chunk_reader(HEADER_FIELDS, 94)
    assert read is not None
    page = memoryview(bytearray(512))
    assert read(page, 512, 0) is None
    assert fcrc32_native.chunk_reader(HEADER_FIELDS, fcrc32_native.MAX_PREFIX + 1) is None
    assert fcrc32_native.chunk_reader(HEADER_FIELDS, 20) is None  # the fields lie past 20 bytes


# --- whole documents, on and off --------------------------------------------------------------

COMMANDS = (("inspect", "--json"), ("pages", "--json"), ("checksum",))


def _damaged_file(tmp_path: Path) -> Path:
    """The 16K zlib sample with a few images damaged, some under a valid CRC-32C."""
    data = bytearray(sample("mariadb/p16k-pc_zlib.ibd").read_bytes())
    psize = 16384
    rng = random.Random(2411)
    for n in (5, 9, 12, 17, 20):
        base = n * psize
        t = int.from_bytes(data[base + 24 : base + 26], "big")
        size = (t & 0x7FFF) << 8
        if not t & 0x8000:
            continue
        at = base + 26 + rng.randrange(0, 200)
        data[at : at + 8] = rng.randbytes(8)
        if n % 2:
            crc = crc32c(bytes(data[base : base + size - 4]))
            data[base + size - 4 : base + size] = crc.to_bytes(4, "big")
    path = tmp_path / "damaged.ibd"
    path.write_bytes(data)
    return path


@needs_library
def test_documents_are_the_same_with_the_loop_on_and_off(tmp_path: Path) -> None:
    """inspect --json, pages --json, checksum and report --format json, byte for byte."""
    paths = [sample(rel) for rel in (*SAMPLES, "mariadb/p16k-pc_lz4.ibd")]
    paths += [CORPUS / CORPUS_FILES[0], CORPUS / CORPUS_FILES[2]]
    paths += [fragmented(tmp_path / "frag.ibd", 600), _damaged_file(tmp_path)]
    on, off = cli_env(IBDTOOL_NATIVE="1"), cli_env(IBDTOOL_NATIVE="0")
    for path in paths:
        for command in COMMANDS:
            a = run_ibdtool(*command, path, env=on)
            b = run_ibdtool(*command, path, env=off)
            assert a.returncode == b.returncode and a.stderr == b.stderr, (path, command)
            assert a.stdout == b.stdout, (path, command)
    tree = tmp_path / "tree"
    tree.mkdir()
    for path in paths:
        (tree / f"{path.parent.name}-{path.name}").write_bytes(path.read_bytes())
    docs = []
    for env in (on, off):
        done = run_ibdtool("report", "--format", "json", tree, env=env)
        assert done.returncode in (0, 1), done.stderr
        doc = json.loads(done.stdout)
        doc.pop("generated_at")
        docs.append(json.dumps(doc, sort_keys=True))
    assert docs[0] == docs[1]
