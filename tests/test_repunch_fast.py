"""The fast paths of re-punching against their references (issue 24 item 4).

- :func:`ibdtool.copy.repunch.page_keeps` (a chunk's candidate pages found by C loops, no
  Python step a page) against the reference scan :func:`ibdtool.copy.repunch.iter_needless`
  turned into a page array here: every sample and corpus file, densified, fragmented (one
  extent a page, as the server punched them) and damaged (stale bytes after an image, a zero
  type word over a page that is not zero), the counts too.
- ``--in-place --verify full`` verifies the pages from the scan's own bytes
  (:func:`ibdtool.copy.local._scanned_pages`): its verdict equals ``ibdtool checksum`` of the
  punched file (:func:`ibdtool.tablespace.checksum.check_file`, a read of its own), a broken
  page included, on files wholly and partly punched before.
- :func:`ibdtool.copy.agent.allocated_within` (FIEMAP read in bulk, a ``bisect`` a hole)
  against the SEEK_DATA map walked here, on a file of thousands of extents (several FIEMAP
  batches).
"""

from __future__ import annotations

import os
import random
from array import array
from pathlib import Path

import pytest

from ibdtool.copy import repunch
from ibdtool.errors import InputError
from ibdtool.fs.allocation import read_allocation
from ibdtool.tablespace.reader import Tablespace
from tests.samples_manifest import sample
from tests.test_copy_local import densify
from tests.test_copy_remote import seek_data_ranges, synced_sparse_copy
from tests.test_header_scan import FILES

COMPRESSED = [
    "mysql80/zlib.ibd",
    "mysql57/lz4.ibd",
    "mariadb/p16k-pc_zlib.ibd",
    "mariadb/p16k-crc32_pc_zlib.ibd",
    "mariadb/p16k-crc32_pc_lzma.ibd",
    "mariadb/p64k-pc_zlib.ibd",
]


def reference_keeps(ts: Tablespace, counts: repunch.Needless) -> array[int]:
    """What each page keeps, from the ranges of the reference scan (``iter_needless``): a
    range's first page keeps up to its start, the pages after it in the range nothing; the
    array ends with the last page that keeps less than all."""
    psize = ts.physical_size
    keeps = array("H" if psize <= 0xFFFF else "I")
    for start, end in repunch.iter_needless(ts, read_allocation(str(ts.path)), counts):
        first = start // psize
        keeps.extend([psize] * (max(end // psize, first + 1) - len(keeps)))
        keeps[first] = start - first * psize
        for page in range(first + 1, end // psize):
            keeps[page] = 0
    return keeps


def same_as_reference(path: Path) -> repunch.Needless:
    with Tablespace(path) as ts:
        fast, slow = repunch.Needless(), repunch.Needless()
        keeps = repunch.page_keeps(ts, read_allocation(str(path)), fast)
        assert keeps == reference_keeps(ts, slow)
        assert fast == slow
    return fast


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_page_keeps_equals_the_reference_scan(path: Path, tmp_path: Path) -> None:
    """Every sample and corpus file as checked out (written whole) and as its holes would be
    (one extent a page where the server punched: only the wholly allocated slots are read)."""
    try:
        Tablespace(path).close()
    except InputError:
        return  # the corpus keeps some bad input; test_bad_input covers it
    same_as_reference(densify(path, tmp_path / "dense.ibd"))
    same_as_reference(synced_sparse_copy(path, tmp_path / "sparse.ibd"))


@pytest.mark.parametrize("rel", COMPRESSED)
def test_page_keeps_keeps_stale_bytes_as_the_reference(rel: str, tmp_path: Path) -> None:
    """Pages damaged the ways the scan must notice: a non-zero byte after the image (at its
    last byte, mid-tail, right after the image), a page of zeros but one byte (its type word
    zero), an impossible stored size; each is kept as the reference keeps it, and the file
    has enough of them that they fall in several chunks."""
    data = bytearray(sample(rel).read_bytes())
    with Tablespace(sample(rel)) as ts:
        psize = ts.physical_size
    pages = [bytes(data[i : i + psize]) for i in range(0, len(data), psize)]
    body = [p for p in pages[4:] if any(p)]
    rng = random.Random(rel)
    out = bytearray()
    n_pages = max(len(pages), 2 * (4 << 20) // psize + 40)  # over two 4 MiB chunks
    for n in range(n_pages):
        page = bytearray(pages[n] if n < 4 else body[n % len(body)])
        roll = rng.random()
        if n >= 4 and roll < 0.08:
            page[-1] = 1  # the slot's last byte
        elif n >= 4 and roll < 0.16:
            page[rng.randrange(psize // 2, psize)] = 7  # somewhere in the (likely) tail
        elif n >= 4 and roll < 0.2:
            page = bytearray(psize)
            page[rng.randrange(100, psize)] = 3  # type word zero, one byte set
        elif n >= 4 and roll < 0.3:
            page = bytearray(psize)  # an all-zero page
        elif n >= 4 and roll < 0.33:
            page[24:26] = b"\xff\xff"  # full_crc32: an impossible size; classic: not sized
        out += page
    path = tmp_path / "damaged.ibd"
    path.write_bytes(bytes(out))
    counts = same_as_reference(path)
    assert counts.stale_tails and counts.zero_pages and counts.compressed_slots


def _partly_punched(rel: str, tmp_path: Path) -> Path:
    """``rel`` written whole, then its second half copied sparse over itself (server holes
    there): the scan reads the first half, the check after it the rest."""
    dense = densify(sample(rel), tmp_path / "partly.ibd")
    sparse = synced_sparse_copy(sample(rel), tmp_path / "sparse.ibd")
    size = dense.stat().st_size
    with Tablespace(dense) as ts:
        half = ts.n_pages // 2 * ts.physical_size
    from ibdtool.copy.agent import punch_hole

    fd = os.open(dense, os.O_RDWR)
    try:
        assert punch_hole(fd, half, size - half)
        for start, end in seek_data_ranges(sparse):
            if end > half:
                start = max(start, half)
                os.pwrite(fd, sparse.read_bytes()[start:end], start)
        os.fsync(fd)
    finally:
        os.close(fd)
    assert dense.read_bytes() == sample(rel).read_bytes()
    return dense


@pytest.mark.parametrize("kind", ["dense", "partly", "broken"])
@pytest.mark.parametrize("rel", COMPRESSED)
def test_in_place_page_check_from_the_scan_is_checksums(
    rel: str, kind: str, tmp_path: Path
) -> None:
    """``--in-place --verify full`` reports exactly what ``ibdtool checksum`` of the punched
    file says (read again here), and the file reads back the same."""
    from ibdtool.copy.local import pages_verdict, repunch_in_place
    from ibdtool.tablespace.checksum import check_file

    if kind == "partly":
        path = _partly_punched(rel, tmp_path)
    else:
        path = densify(sample(rel), tmp_path / "dense.ibd")
    if kind == "broken":  # one byte of a page's image changed: that page fails
        with Tablespace(path) as ts:
            psize = ts.physical_size
        with path.open("r+b") as f:
            f.seek(4 * psize + 200)
            byte = f.read(1)
            f.seek(4 * psize + 200)
            f.write(bytes([byte[0] ^ 0x5A]))
    data = path.read_bytes()
    res = repunch_in_place(str(path), verify="full", confirm=None)
    assert path.read_bytes() == data
    assert res.punched_bytes
    expected = pages_verdict(str(path), check_file(str(path), jobs=1), None)
    expected["where"] = "file"
    assert res.pages == expected
    assert (res.pages["invalid"] > 0) == (kind == "broken")


def test_allocated_within_on_thousands_of_extents(tmp_path: Path) -> None:
    """A file of ~3,000 extents (data blocks here and there): the allocated blocks of many
    holes, some aligned, some not, some across several extents, are those the SEEK_DATA map
    holds in them, whole blocks only."""
    from ibdtool.copy.agent import allocated_within

    path = tmp_path / "frag.bin"
    block = os.statvfs(tmp_path).f_bsize
    rng = random.Random(3)
    blocks = 9000
    with path.open("wb") as f:
        f.truncate(blocks * block)
        for b in range(blocks):
            if rng.random() < 0.4:
                f.seek(b * block)
                f.write(b"\1" * block)
        f.flush()
        os.fsync(f.fileno())
    data = seek_data_ranges(path)
    assert len(data) > 1000
    holes, pos = [], rng.randrange(block)
    while pos < blocks * block:
        end = pos + rng.randrange(1, 20 * block)
        holes.append((pos, min(end, blocks * block)))
        pos = end + rng.randrange(1, 5 * block)
    expected = []
    for start, end in holes:
        lo, hi = -(-start // block) * block, end // block * block
        for s, e in data:
            s, e = max(s, lo), min(e, hi)
            if e > s:
                expected.append((s, e))
    fd = os.open(path, os.O_RDONLY)
    try:
        got = allocated_within(fd, holes, block)
    finally:
        os.close(fd)
    assert list(got) == expected
    assert len(expected) > 500


def test_the_copy_crc32_is_zlibs() -> None:
    """The CRC-32 a copy's windows are checked and recorded with (ISA-L's where installed) is
    zlib's, chained over pieces of any length, from bytes and from views: a state file
    written by one still resumes with the other, and a remote agent without it agrees."""
    import zlib

    from ibdtool.copy.agent import crc32

    rng = random.Random(32)
    data = rng.randbytes(1 << 20)
    view = memoryview(data)
    mine = theirs = 0
    pos = 0
    while pos < len(data):
        end = min(len(data), pos + rng.choice((1, 7, 512, 4096, 8191, 16384, 100_000)))
        mine = crc32(view[pos:end], mine)
        theirs = zlib.crc32(data[pos:end], theirs)
        assert mine == theirs
        pos = end
    assert crc32(b"") == zlib.crc32(b"") and crc32(b"", 12345) == zlib.crc32(b"", 12345)
