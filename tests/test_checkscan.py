"""`ibdtool checksum`'s fast path and its process split agree with the full page decoder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ibdtool.tablespace.checksum import check_file
from ibdtool.tablespace.reader import Tablespace
from tests.samples_manifest import sample
from tests.test_parallel import force_windows

FILES = [
    "mariadb/p4k-plain.ibd",  # full_crc32 fast path
    "mariadb/p16k-crc32_plain.ibd",  # crc32 fast path
    "mariadb/p16k-pc_zlib.ibd",  # full_crc32 compressed: the image's CRC
    "mariadb/p16k-crc32_pc_zlib.ibd",  # classic compressed: inflated, the inner page's crc32
    "mariadb/p16k-crc32_pc_lz4.ibd",
    "mysql57/mixed_zlib_lz4.ibd",
    "mysql80/kbs8.ibd",  # zip
]


def _decoder_verdicts(path: Path) -> tuple[dict[str, int], list[int]]:
    counts: dict[str, int] = {}
    invalid: list[int] = []
    with Tablespace(path) as ts:
        for info in ts.pages():
            key = "invalid" if info.checksum_valid is False else info.checksum_algo.value
            counts[key] = counts.get(key, 0) + 1
            if info.checksum_valid is False:
                invalid.append(info.page_no)
    return counts, invalid


def _corrupt(src: Path, dst: Path, pages: list[int], page_size: int) -> None:
    shutil.copyfile(src, dst)
    with dst.open("r+b") as f:
        for n in pages:
            f.seek(n * page_size + 60)  # inside every image, even a tiny compressed one
            byte = f.read(1)
            f.seek(n * page_size + 60)  # inside every image, even a tiny compressed one
            f.write(bytes([byte[0] ^ 0x5A]))


@pytest.mark.parametrize("rel", FILES)
@pytest.mark.parametrize(("jobs", "windows"), [(1, 1), (3, 2), (3, 7), (2, 30), (3, "pages")])
def test_fast_path_and_workers_match_the_decoder(
    rel: str, jobs: int, windows: int | str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Split over processes a window at a time (any number of windows, a page each too),
    the verdicts are the decoder's, invalid pages in page order."""
    force_windows(monkeypatch, windows)
    with Tablespace(sample(rel)) as ts:
        psize, n = ts.physical_size, ts.n_pages
    victims = sorted({1, n // 3, n // 2 + 1, n - 2})
    path = tmp_path / "damaged.ibd"
    _corrupt(sample(rel), path, victims, psize)
    expected_counts, expected_invalid = _decoder_verdicts(path)
    assert expected_invalid == victims  # the decoder itself sees every flipped byte
    got = check_file(str(path), jobs=jobs, parallel_min=1)
    assert got.invalid_pages == victims
    assert dict(got.by_algorithm) == expected_counts
    assert got.pages == n


@pytest.mark.parametrize("rel", FILES)
def test_inspect_split_over_processes_equals_one_pass(
    rel: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The document of a split scan is the one of a single pass (lists in page order),
    whatever the windows (a page each too) and the processes taking them. (The order of keys
    of equal count in a JSON object follows the windows' merge where a window edge cuts the
    first pages' chunk: tests/test_fragmented_files.py compares the bytes of real splits.)"""
    import ibdtool.tablespace.inspect as inspect_mod

    with Tablespace(sample(rel)) as ts:
        psize, n = ts.physical_size, ts.n_pages
    path = tmp_path / "damaged.ibd"
    _corrupt(sample(rel), path, [2, n // 2], psize)
    one = inspect_mod.inspect_path(path, jobs=1).to_json()
    assert one["checksum"]["invalid_pages"] == [2, n // 2]
    monkeypatch.setattr(inspect_mod, "PARALLEL_MIN_PAGES", 1)
    for jobs, windows in ((3, 2), (3, 3), (2, 7), (3, 31), (2, "pages")):
        force_windows(monkeypatch, windows)
        split = inspect_mod.inspect_path(path, jobs=jobs).to_json()
        assert split == one, (jobs, windows)
