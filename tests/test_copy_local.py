"""``ibdtool copy`` on one host, on real sample tablespaces with real holes.

Oracles: the bytes of the files (sha256), ``st_blocks`` (``os.stat``), a SEEK_DATA walk written
here, ``cp --sparse=always`` (the sparse originals) and the allocation each server's own file
had while its export lock was held (``samples/MANIFEST.json`` ``live.allocated_size``).
"""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli_runner import run_ibdtool
from tests.samples_manifest import live_allocated, sample
from tests.test_copy_remote import (
    IBDTOOL,
    _make_sparse_file,
    _wait_for,
    allocated,
    seek_data_ranges,
    sha,
    spawn,
    synced_sparse_copy,
)

BLOCK = 4096
MARIADB_PC = [
    "mariadb/p16k-pc_zlib.ibd",
    "mariadb/p16k-pc_lz4.ibd",
    "mariadb/p16k-pc_lzo.ibd",
    "mariadb/p16k-pc_lzma.ibd",
    "mariadb/p16k-pc_bzip2.ibd",
    "mariadb/p16k-pc_snappy.ibd",
    "mariadb/p16k-crc32_pc_zlib.ibd",
    "mariadb/p16k-crc32_pc_lz4.ibd",
    "mariadb/p16k-crc32_pc_lzo.ibd",
    "mariadb/p16k-crc32_pc_lzma.ibd",
    "mariadb/p16k-crc32_pc_bzip2.ibd",
    "mariadb/p16k-crc32_pc_snappy.ibd",
    "mariadb/p64k-pc_zlib.ibd",
]
MYSQL_PC = ["mysql80/zlib.ibd", "mysql80/lz4.ibd", "mysql57/zlib.ibd", "mysql57/mixed_zlib_lz4.ibd"]


def ibdtool(*args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return run_ibdtool(*args, command=IBDTOOL, timeout=300, **kw)


def densify(src: Path, dst: Path) -> Path:
    """What scp or cat leave: every byte written, no holes."""
    with open(dst, "wb") as out:
        subprocess.run(["cat", str(src)], stdout=out, check=True)
    assert allocated(dst) >= dst.stat().st_size
    return dst


# --- sparse sources ------------------------------------------------------------------------------


@pytest.mark.parametrize("rel", MARIADB_PC + MYSQL_PC)
def test_sparse_copy_is_identical_and_as_small(rel: str, tmp_path: Path) -> None:
    src = synced_sparse_copy(sample(rel), tmp_path / "src.ibd")
    os.chmod(src, 0o600)
    os.utime(src, ns=(1_500_000_000_000_000_000, 1_500_000_000_987_654_321))
    out = tmp_path / "out"
    out.mkdir()
    res = ibdtool("copy", "--json", str(src), str(out))
    assert res.returncode == 0, res.stderr
    dst = out / "src.ibd"
    assert sha(dst) == sha(src)
    st = dst.stat()
    assert (st.st_size, st.st_mode & 0o7777, st.st_mtime_ns) == (
        src.stat().st_size,
        0o600,
        1_500_000_000_987_654_321,
    )
    ranges = seek_data_ranges(src)
    assert abs(allocated(dst) - allocated(src)) <= BLOCK * len(ranges)
    assert sorted(p.name for p in out.iterdir()) == ["src.ibd"]  # no part, no state file
    doc = json.loads(res.stdout)
    assert doc["logical_size"] == src.stat().st_size
    assert doc["source_allocated"] == allocated(src)
    assert doc["dest_allocated"] == allocated(dst)
    assert doc["data_ranges"] == len(ranges)
    assert doc["pages"]["invalid"] == 0
    assert doc["pages"]["pages"] == src.stat().st_size // _page_size(src)


def _page_size(path: Path) -> int:
    return 65536 if "p64k" in str(path) or path.stat().st_size == 786432 else 16384


@pytest.mark.parametrize("rel", MARIADB_PC + MYSQL_PC)
def test_densified_copy_regains_the_servers_holes(rel: str, tmp_path: Path) -> None:
    """cat loses the holes; --repunch (default for .ibd) brings back what the server made."""
    dense = densify(sample(rel), tmp_path / "dense.ibd")
    dst = tmp_path / "copy.ibd"
    res = ibdtool("copy", str(dense), str(dst))
    assert res.returncode == 0, res.stderr
    assert sha(dst) == sha(dense)
    live = live_allocated(rel)  # the server's own file, under FLUSH TABLES … FOR EXPORT
    assert allocated(dst) <= live + live // 100, (allocated(dst), live)
    assert allocated(dst) >= live - live // 10  # it is the server's layout, not something else


@pytest.mark.parametrize("rel", MARIADB_PC)
def test_dig_holes_reaches_the_sparse_original(rel: str, tmp_path: Path) -> None:
    """With --dig-holes the zero blocks inside pages go too: within 1% of cp --sparse=always."""
    original = synced_sparse_copy(sample(rel), tmp_path / "orig.ibd")
    dense = densify(original, tmp_path / "dense.ibd")
    dst = tmp_path / "copy.ibd"
    res = ibdtool("copy", "--dig-holes", str(dense), str(dst))
    assert res.returncode == 0, res.stderr
    assert sha(dst) == sha(original)
    assert abs(allocated(dst) - allocated(original)) <= allocated(original) // 100


def test_no_repunch_keeps_a_dense_copy_dense(tmp_path: Path) -> None:
    dense = densify(sample("mariadb/p16k-pc_zlib.ibd"), tmp_path / "dense.ibd")
    dst = tmp_path / "copy.ibd"
    res = ibdtool("copy", "--no-repunch", str(dense), str(dst))
    assert res.returncode == 0, res.stderr
    assert sha(dst) == sha(dense)
    assert allocated(dst) >= dense.stat().st_size


def test_plain_file_with_holes(tmp_path: Path) -> None:
    """Not a tablespace: a plain sparse copy, no page check, holes where the source has them."""
    src = tmp_path / "data.bin"
    _make_sparse_file(src, 16, seed=3)
    dst = tmp_path / "copy.bin"
    res = ibdtool("copy", "--json", str(src), str(dst))
    assert res.returncode == 0, res.stderr
    assert sha(dst) == sha(src)
    assert seek_data_ranges(dst) == seek_data_ranges(src)
    doc = json.loads(res.stdout)
    assert doc["pages"] is None and doc["repunch"] is None


def test_stale_bytes_beyond_a_compressed_image_are_kept(tmp_path: Path) -> None:
    """A slot tail that is not zero (a server that could not punch) is copied, not punched."""
    dense = densify(sample("mysql80/zlib.ibd"), tmp_path / "dense.ibd")
    data = bytearray(dense.read_bytes())
    page = 16384
    for n in range(1, len(data) // page):  # the first MySQL type-14 page
        slot = data[n * page : (n + 1) * page]
        if int.from_bytes(slot[24:26], "big") == 14:
            comp_len = struct.unpack_from(">H", slot, 32)[0]  # FIL_PAGE_COMPRESS_SIZE_V1
            image_end = 38 + comp_len
            assert not any(slot[image_end:])
            data[n * page + image_end + 5000] = 0xAB
            break
    else:
        raise AssertionError("no type-14 page")
    dense.write_bytes(bytes(data))
    dst = tmp_path / "copy.ibd"
    res = ibdtool("copy", "--json", str(dense), str(dst))
    assert res.returncode == 0, res.stderr
    assert sha(dst) == sha(dense)
    assert json.loads(res.stdout)["repunch"]["stale_tails"] == 1


# --- destination rules ---------------------------------------------------------------------------


def test_existing_destination_needs_force(tmp_path: Path) -> None:
    src = synced_sparse_copy(sample("mysql80/lz4.ibd"), tmp_path / "s.ibd")
    dst = tmp_path / "d.ibd"
    dst.write_bytes(b"precious")
    res = ibdtool("copy", str(src), str(dst))
    assert (res.returncode, res.stderr) == (
        2,
        f"ibdtool: error: {dst}: already exists (use --force to overwrite)\n",
    )
    assert dst.read_bytes() == b"precious"
    res = ibdtool("copy", "-f", str(src), str(dst))
    assert res.returncode == 0, res.stderr
    assert sha(dst) == sha(src)


def test_same_file_is_refused(tmp_path: Path) -> None:
    src = synced_sparse_copy(sample("mysql80/lz4.ibd"), tmp_path / "s.ibd")
    res = ibdtool("copy", "--force", str(src), str(tmp_path))
    assert res.returncode == 2
    assert "are the same file" in res.stderr
    assert sha(src) == sha(sample("mysql80/lz4.ibd"))


def test_several_sources_need_a_directory(tmp_path: Path) -> None:
    a = synced_sparse_copy(sample("mysql80/lz4.ibd"), tmp_path / "a.ibd")
    b = synced_sparse_copy(sample("mysql80/zlib.ibd"), tmp_path / "b.ibd")
    res = ibdtool("copy", str(a), str(b), str(tmp_path / "c.ibd"))
    assert (res.returncode, res.stderr) == (
        2,
        f"ibdtool: error: {tmp_path}/c.ibd: no such directory\n",
    )
    out = tmp_path / "out"
    out.mkdir()
    res = ibdtool("copy", "-q", str(a), str(b), str(out))
    assert (res.returncode, res.stdout) == (0, "")
    assert sha(out / "a.ibd") == sha(a) and sha(out / "b.ibd") == sha(b)


# --- interrupted, then resumed -------------------------------------------------------------------


def test_interrupt_keeps_the_verified_part_and_resume_finishes(tmp_path: Path) -> None:
    src = tmp_path / "big.bin"
    _make_sparse_file(src, 48, seed=11)
    out = tmp_path / "out"
    out.mkdir()
    state = out / ".big.bin.ibdtool-part.json"
    proc = spawn(["copy", "--bwlimit", "6M", str(src), str(out)])
    try:
        _wait_for(lambda: state.exists() and state.read_bytes().count(b",") > 8)
        os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert err.startswith("ibdtool: error: interrupted:") and "--resume" in err, err
    assert not (out / "big.bin").exists()
    assert (out / ".big.bin.ibdtool-part").exists()
    t0 = time.monotonic()
    res = ibdtool("copy", "--resume", "--json", str(src), str(out))
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert 0 < doc["resumed_bytes"] < doc["plan_bytes"]
    assert doc["bytes_read"] == doc["plan_bytes"] - doc["resumed_bytes"]
    assert time.monotonic() - t0 < 60
    assert sha(out / "big.bin") == sha(src)
    assert sorted(p.name for p in out.iterdir()) == ["big.bin"]


def test_resume_of_a_changed_source_starts_over(tmp_path: Path) -> None:
    src = tmp_path / "f.bin"
    _make_sparse_file(src, 8, seed=5)
    out = tmp_path / "out"
    out.mkdir()
    part = out / ".f.bin.ibdtool-part"
    part.write_bytes(b"left over by someone")
    (out / ".f.bin.ibdtool-part.json").write_text('{"protocol": 1, "windows": [1, 2]}')
    res = ibdtool("copy", "--resume", str(src), str(out))
    assert res.returncode == 0, res.stderr
    assert "starting over" in res.stderr
    assert sha(out / "f.bin") == sha(src)
    assert sorted(p.name for p in out.iterdir()) == ["f.bin"]


# --- in place ------------------------------------------------------------------------------------


@pytest.mark.parametrize("rel", ["mariadb/p16k-pc_zlib.ibd", "mysql57/zlib.ibd"])
def test_in_place_repunch_of_a_densified_file(rel: str, tmp_path: Path) -> None:
    dense = densify(sample(rel), tmp_path / "t.ibd")
    before = sha(dense)
    res = ibdtool("copy", "--in-place", "--repunch", "--yes", "--json", str(dense))
    assert res.returncode == 0, res.stderr
    assert sha(dense) == before
    live = live_allocated(rel)  # MySQL keeps its all-zero pages allocated; we punch them
    assert live - live // 10 <= allocated(dense) <= live + live // 100
    doc = json.loads(res.stdout)
    assert doc["allocated_after"] == allocated(dense)
    assert doc["pages"]["invalid"] == 0
    again = ibdtool("copy", "--in-place", "--yes", "--json", str(dense))
    assert json.loads(again.stdout)["punched_bytes"] == 0


def test_in_place_needs_confirmation(tmp_path: Path) -> None:
    dense = densify(sample("mariadb/p16k-pc_zlib.ibd"), tmp_path / "t.ibd")
    res = ibdtool("copy", "--in-place", "--repunch", str(dense), stdin=subprocess.DEVNULL)
    assert res.returncode == 2
    assert res.stderr == (
        "ibdtool: error: refusing to change files in place without a terminal to confirm on; "
        "pass --yes\n"
    )
    assert allocated(dense) >= dense.stat().st_size


def test_in_place_refused_while_another_process_writes_the_file(tmp_path: Path) -> None:
    """A writer could fill the ranges being punched; a reader (here too) sees no change."""
    dense = densify(sample("mariadb/p16k-pc_zlib.ibd"), tmp_path / "t.ibd")
    reader = subprocess.Popen(["sleep", "60"], stdin=open(dense, "rb"))  # noqa: SIM115
    writer = subprocess.Popen(["sleep", "60"], stdout=open(dense, "r+b"))  # noqa: SIM115
    holder = writer
    try:
        _wait_for(lambda: os.path.exists(f"/proc/{writer.pid}/fd/1"))
        _wait_for(lambda: os.path.exists(f"/proc/{reader.pid}/fd/0"))
        res = ibdtool("copy", "--in-place", "--yes", str(dense))
    finally:
        for p in (reader, writer):
            p.kill()
            p.wait()
    assert res.returncode == 2
    assert res.stderr == (
        f"ibdtool: error: {dense}: sleep (pid {holder.pid}) has it open for writing; stop it "
        "before re-punching in place\n"
    )
    assert allocated(dense) >= dense.stat().st_size


def test_in_place_dig_holes_on_any_file(tmp_path: Path) -> None:
    """--no-repunch --dig-holes: no tablespace needed; every all-zero block becomes a hole."""
    import random

    rng = random.Random(9)
    blocks = [rng.randbytes(BLOCK) if rng.random() < 0.3 else bytes(BLOCK) for _ in range(512)]
    path = tmp_path / "data.bin"
    path.write_bytes(b"".join(blocks))
    before = sha(path)
    res = ibdtool("copy", "--in-place", "--no-repunch", "--dig-holes", "--yes", str(path))
    assert res.returncode == 0, res.stderr
    assert sha(path) == before
    data = BLOCK * sum(1 for b in blocks if any(b))
    assert data <= allocated(path) <= data + 2 * BLOCK  # + ext4's extent-tree block


# --- the checks behind --in-place and the hole punching, on a real file -------------------------


def _zero_hole_data(path: Path) -> None:
    """Blocks: 0 data (random), 1 a hole, 2 data (zeros written), 3 data (random), 4 a hole."""
    with open(path, "wb") as f:
        f.truncate(5 * BLOCK)
        f.write(os.urandom(BLOCK))
        f.seek(2 * BLOCK)
        f.write(bytes(BLOCK) + b"\1" + os.urandom(BLOCK - 1))
        f.flush()
        os.fsync(f.fileno())
    assert seek_data_ranges(path) == [(0, BLOCK), (2 * BLOCK, 4 * BLOCK)]


def test_zero_check_after_punching_reads_what_is_not_a_hole(tmp_path: Path) -> None:
    """``--in-place``'s check after each punch skips holes (SEEK_DATA) but still reads data
    blocks: written zeros pass, one non-zero byte fails."""
    from ibdtool.copy.local import VerifyFailed, _verify_zeros

    path = tmp_path / "f.bin"
    _zero_hole_data(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        _verify_zeros(str(path), fd, [(BLOCK, 3 * BLOCK), (4 * BLOCK, 5 * BLOCK)])
        with pytest.raises(VerifyFailed, match="do not read as zeros"):
            _verify_zeros(str(path), fd, [(BLOCK, 4 * BLOCK)])
        with pytest.raises(VerifyFailed):
            _verify_zeros(str(path), fd, [(BLOCK // 2, BLOCK + 10)])
    finally:
        os.close(fd)


def test_allocated_within_finds_the_blocks_a_punch_would_free(tmp_path: Path) -> None:
    """FIEMAP (``copy.agent.allocated_within``) against the SEEK_DATA map walked here: whole
    blocks only, clipped to the ranges asked about."""
    from ibdtool.copy.agent import allocated_within

    path = tmp_path / "f.bin"
    _zero_hole_data(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        everything = [(0, 5 * BLOCK)]
        assert allocated_within(fd, everything, BLOCK) == seek_data_ranges(path)
        assert allocated_within(fd, [(BLOCK, 2 * BLOCK), (4 * BLOCK, 5 * BLOCK)], BLOCK) == []
        assert allocated_within(fd, [(100, 3 * BLOCK + 5)], BLOCK) == [(2 * BLOCK, 3 * BLOCK)]
        assert allocated_within(fd, [(0, BLOCK), (3 * BLOCK, 5 * BLOCK)], BLOCK) == [
            (0, BLOCK),
            (3 * BLOCK, 4 * BLOCK),
        ]
    finally:
        os.close(fd)
