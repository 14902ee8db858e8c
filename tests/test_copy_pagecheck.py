"""The page check of a local copy, done on each window's read-back (:mod:`ibdtool.copy.readback`).

It must give exactly the verdicts of ``ibdtool checksum``
(:func:`ibdtool.tablespace.checksum.check_file`, which reads the file itself) on every sample and
corpus file, whatever windows cut the pages, and a CRC-32 per window equal to that of the bytes read
directly; a damaged source page is reported as the pass after the copy reported it, and a page
broken in the destination alone still fails the copy.
"""

from __future__ import annotations

import json
import os
import zlib
from pathlib import Path

import pytest

from ibdtool.copy import agent
from ibdtool.copy.local import VerifyFailed, pages_verdict
from ibdtool.copy.readback import WindowPages
from ibdtool.errors import InputError
from ibdtool.tablespace.checksum import check_file
from ibdtool.tablespace.reader import Tablespace
from tests.test_copy_local import ibdtool
from tests.test_copy_remote import synced_sparse_copy
from tests.test_header_scan import FILES

# window sizes: a few bytes over three 4K blocks (pages cut anywhere), one page, 1 MiB, all
WINDOWS = [3 * 4096 + 100, 16384, 1 << 20, 1 << 40]


def _read_back(path: Path, window: int) -> tuple[WindowPages, list[int], list[int]]:
    """WindowPages over ``path`` itself, and the CRC of each window: its own, read directly."""
    ts = Tablespace(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        pages = WindowPages(ts, str(path))
        got, want = [], []
        for pieces in agent.iter_windows(agent.seek_data_ranges(fd, size), window):
            got.append(pages(fd, pieces))
            crc = 0
            for start, end in pieces:
                crc = zlib.crc32(os.pread(fd, end - start, start), crc)
            want.append(crc)
    finally:
        os.close(fd)
    return pages, got, want


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_window_read_back_gives_the_verdicts_of_checksum(path: Path, window: int) -> None:
    try:
        expected = check_file(path, jobs=1)
    except InputError:
        return  # the corpus keeps some bad input; test_bad_input covers it
    pages, got, want = _read_back(path, window)
    try:
        result = pages.finish()
    finally:
        pages.ts.close()
    assert got == want
    assert result == expected


def _damage(path: Path, page: int, psize: int = 16384) -> None:
    fd = os.open(path, os.O_RDWR)
    try:
        at = page * psize + 200
        os.pwrite(fd, bytes([os.pread(fd, 1, at)[0] ^ 0x10]), at)
    finally:
        os.close(fd)


@pytest.mark.parametrize(
    "rel", ["mariadb/p16k-plain.ibd", "mariadb/p16k-crc32_pc_zlib.ibd", "mariadb/p16k-pc_lz4.ibd"]
)
def test_a_page_damaged_in_the_source_is_reported_not_failed(rel: str, tmp_path: Path) -> None:
    """The copy holds the source's bytes, damaged page and all: it succeeds and says which
    page does not verify, there and in the source (as the pass after the copy did)."""
    from tests.samples_manifest import sample

    clean = check_file(sample(rel), jobs=1)
    src = synced_sparse_copy(sample(rel), tmp_path / "src.ibd")
    _damage(src, 3)
    (tmp_path / "out").mkdir()
    res = ibdtool("copy", "--json", str(src), str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "out" / "src.ibd").read_bytes() == src.read_bytes()
    assert json.loads(res.stdout)["pages"] == {
        "pages": clean.pages,
        "valid": clean.valid - 1,
        "empty": clean.empty,
        "invalid": 1,
        "unverifiable": 0,
        "invalid_pages": [3],
        "invalid_in_source_too": 1,
        "where": "destination",
    }
    text = ibdtool("copy", "--force", str(src), str(tmp_path / "out"))
    assert text.returncode == 0, text.stderr
    assert "1 invalid (invalid in the source too)" in text.stdout


def test_a_page_damaged_in_the_destination_alone_fails(tmp_path: Path) -> None:
    """A page that does not verify in the copy but does in the source fails the copy, in one
    line naming the page."""
    from tests.samples_manifest import sample

    src = sample("mariadb/p16k-crc32_pc_zlib.ibd")
    bad = synced_sparse_copy(src, tmp_path / "bad.ibd")
    _damage(bad, 5)
    ts = Tablespace(src)
    fd = os.open(bad, os.O_RDONLY)
    try:
        pages = WindowPages(ts, str(bad))
        for pieces in agent.iter_windows(agent.seek_data_ranges(fd, bad.stat().st_size), 40000):
            assert pages(fd, pieces) is not None
        result = pages.finish()
    finally:
        os.close(fd)
        ts.close()
    assert result.invalid_pages == [5]
    with pytest.raises(VerifyFailed, match=r"pages 5 no longer verify after the copy$"):
        pages_verdict(str(bad), result, str(src))


def test_a_destination_shorter_than_its_pieces_does_not_read_back(tmp_path: Path) -> None:
    from tests.samples_manifest import sample

    src = sample("mariadb/p16k-plain.ibd")
    short = tmp_path / "short.ibd"
    short.write_bytes(src.read_bytes()[:40000])
    ts = Tablespace(src)
    fd = os.open(short, os.O_RDONLY)
    try:
        assert WindowPages(ts, str(short))(fd, [(0, 65536)]) is None
    finally:
        os.close(fd)
        ts.close()
