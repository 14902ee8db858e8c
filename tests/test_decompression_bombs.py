"""Decompression bombs inside real page envelopes are cut off at the page, not inflated.

Each case takes a real sample, replaces one page's compressed stream with a stream of zeros
that inflates far beyond the page (a gigabyte where the format lets one fit), and runs
``python -m ibdtool.cli`` in a subprocess that reports its own peak RSS
(``resource.getrusage``) and CPU time (its own and its workers': on a loaded machine the wall
clock also counts the waits for a core). The oracle is the same command on the untouched sample:
the bomb may cost no more than a few MiB over it. The child's address space is limited, so
code that does inflate the bomb fails with MemoryError instead of taking the machine's memory.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

from tests import bombs
from tests.catalog import REPO
from tests.samples_manifest import sample

MIB = 1 << 20
ADDRESS_SPACE = 1536 * MIB  # the child's RLIMIT_AS: enough for ibdtool, far less than a bomb

_CHILD = r"""
import json, resource, runpy, sys
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]),) * 2)
sys.argv = ["ibdtool", *sys.argv[2:]]
def cpu():
    return sum(
        r.ru_utime + r.ru_stime
        for r in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    )
start = cpu()
code = 0
try:
    runpy.run_module("ibdtool.cli", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
sys.stderr.write("\nMEASURED " + json.dumps({
    "code": code,
    "seconds": cpu() - start,
    "maxrss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
}) + "\n")
"""


def measured(*args: str | Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run ``ibdtool ARGS`` in a child; its output and ``{"code", "seconds", "maxrss"}``
    (``seconds``: CPU seconds)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(HOME="/tmp", NO_COLOR="1", PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(ADDRESS_SPACE), *map(str, args)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    tail = proc.stderr.rsplit("MEASURED ", 1)
    assert len(tail) == 2, proc.stderr[-3000:]
    return proc, json.loads(tail[1])


def with_page(src: Path, dst: Path, page_no: int, page_size: int, patch: dict[int, bytes]) -> Path:
    """A copy of ``src`` whose page ``page_no`` has ``patch`` (offset → bytes) written in."""
    shutil.copyfile(src, dst)
    with dst.open("r+b") as f:
        f.seek(page_no * page_size)
        page = bytearray(f.read(page_size))
        for off, data in patch.items():
            assert off + len(data) <= page_size, "the bomb must fit in the page"
            page[off : off + len(data)] = data
        f.seek(page_no * page_size)
        f.write(page)
    return dst


def page_type(path: Path, page_no: int, page_size: int) -> int:
    with path.open("rb") as f:
        f.seek(page_no * page_size + 24)  # FIL_PAGE_TYPE (FORMATS.md §1.1)
        return int.from_bytes(f.read(2), "big")


def assert_bounded(bomb: dict[str, Any], clean: dict[str, Any], margin: int) -> None:
    assert bomb["code"] in (0, 1, 2), bomb
    assert bomb["maxrss"] <= clean["maxrss"] + margin, (bomb, clean)
    assert bomb["seconds"] <= clean["seconds"] + 10, (bomb, clean)


# --- ROW_FORMAT=COMPRESSED: the SDI page's stream, and the records inside it -------------------

ZIP_SAMPLE = "mysql80/kbs8.ibd"  # KEY_BLOCK_SIZE=8: 8K physical pages (MANIFEST.json)
ZIP_PHYSICAL = 8192
FIL_PAGE_SDI, FIL_PAGE_INDEX, PAGE_DATA = 17853, 17855, 94


def test_zip_sdi_record_inflating_to_a_gigabyte(tmp_path: Path) -> None:
    """§7.1/§8.3: the SDI page's zlib stream holds a record (type, id, uncompressed length,
    compressed length, zlib data) whose own stream inflates to 1 GiB though it says 1,000
    bytes. Both streams nest inside 8K: the outer one inflates to 1 MiB."""
    src = sample(ZIP_SAMPLE)
    assert page_type(src, 3, ZIP_PHYSICAL) == FIL_PAGE_SDI
    inner = bombs.zlib_zeros(1024)
    record = (1).to_bytes(4, "big") + (7).to_bytes(8, "big")  # SDI type 1 (table), id 7
    record += (1000).to_bytes(4, "big") + len(inner).to_bytes(4, "big") + inner
    outer = zlib.compress(record, 9)
    bomb = with_page(src, tmp_path / "bomb.ibd", 3, ZIP_PHYSICAL, {PAGE_DATA: outer})
    _, clean = measured("sdi", src)
    proc, got = measured("sdi", bomb)
    assert_bounded(got, clean, 32 * MIB)
    assert "dd_object" not in proc.stdout  # the real records went with the replaced stream


def test_zip_index_page_stream_larger_than_two_pages(tmp_path: Path) -> None:
    """§7.2: an index page's stream inflates to 7 MiB, about the most an 8K page can carry;
    the stream length is measured without inflating more than two logical pages."""
    src = sample(ZIP_SAMPLE)
    assert page_type(src, 4, ZIP_PHYSICAL) == FIL_PAGE_INDEX
    stream = zlib.compress(bytes(7 * MIB), 9)
    bomb = with_page(src, tmp_path / "bomb.ibd", 4, ZIP_PHYSICAL, {PAGE_DATA: stream})
    _, clean = measured("pages", "--json", src)
    proc, got = measured("pages", "--json", bomb)
    assert_bounded(got, clean, 4 * MIB)
    page4 = json.loads(proc.stdout.splitlines()[4])
    assert page4["zip_stream"] is None and page4["problem"], page4


# --- MariaDB PAGE_COMPRESSED (classic layout, §3.1) --------------------------------------------

FIL_PAGE_PAGE_COMPRESSED = 34354
MARIADB_IDS = {"zlib": 1, "lzma": 4, "bzip2": 5}  # innodb_compression_algorithm (§3)


@pytest.mark.parametrize(
    ("codec", "make", "inflates_to"),
    [
        ("bzip2", lambda: bombs.bzip2_zeros(26), "1 GiB"),
        ("lzma", lambda: bombs.xz_zeros(64), "64 MiB"),
        ("zlib", lambda: zlib.compress(bytes(15 * MIB), 9), "15 MiB"),
    ],
)
def test_mariadb_page_inflating_far_beyond_the_page(
    tmp_path: Path, codec: str, make: Any, inflates_to: str
) -> None:
    """A page_compressed page whose payload (as large as fits in 16K) inflates to
    ``inflates_to``: decompression stops at the page size, and the page is reported."""
    src = sample(f"mariadb/p16k-crc32_pc_{codec}.ibd")
    page_no = next(n for n in range(3, 28) if page_type(src, n, 16384) == FIL_PAGE_PAGE_COMPRESSED)
    payload = make()
    patch = {
        26: MARIADB_IDS[codec].to_bytes(8, "big"),  # algorithm, in FIL_PAGE_FILE_FLUSH_LSN
        38: len(payload).to_bytes(2, "big"),  # FIL_PAGE_COMP_SIZE, then the payload
        40: payload,
    }
    bomb = with_page(src, tmp_path / "bomb.ibd", page_no, 16384, patch)
    _, clean = measured("pages", "--json", src)
    proc, got = measured("pages", "--json", bomb)
    assert_bounded(got, clean, 4 * MIB)
    row = json.loads(proc.stdout.splitlines()[page_no])
    assert row["problem"].startswith(f"cannot decompress {codec} page"), row


# --- the copy stream (``ibdtool copy``'s D frames) -----------------------------------------------


@pytest.mark.parametrize("name", ["zlib", "zstd"])
def test_copy_batch_inflating_past_its_length(name: str) -> None:
    """A D frame whose payload inflates to 64 MiB though its header says 1,000 raw bytes is a
    corrupt stream, found without inflating it (tracemalloc: every bytes object counted)."""
    import tracemalloc

    from ibdtool.copy import agent as copy_agent

    codec = copy_agent.Codec(name)
    cid, payload = codec.encode(bytes(64 * MIB))
    assert cid == copy_agent.CODEC_IDS[name]
    tracemalloc.start()
    try:
        with pytest.raises(copy_agent.AgentError, match="corrupt stream"):
            codec.decode(cid, payload, 1000)
        with pytest.raises(copy_agent.AgentError, match="corrupt stream"):
            codec.decode(cid, payload, 64 * MIB)  # more than any batch holds
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < MIB, peak
