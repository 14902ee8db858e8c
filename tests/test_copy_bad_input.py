"""``ibdtool copy`` on bad input: one clear line on stderr, a non-zero exit, nothing left behind.

No space is tested on a real 1 MiB tmpfs when the tests run as root (and on a file-size limit,
``RLIMIT_FSIZE``, always); the remote host without python3 is in ``test_copy_remote.py``.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.samples_manifest import sample
from tests.test_copy_local import ibdtool
from tests.test_copy_remote import _make_sparse_file, spawn, synced_sparse_copy


def test_missing_source(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    res = ibdtool("copy", str(tmp_path / "nope.ibd"), str(out))
    assert (res.returncode, res.stdout, res.stderr) == (
        2,
        "",
        f"ibdtool: error: {tmp_path}/nope.ibd: no such file or directory\n",
    )
    assert list(out.iterdir()) == []


def test_source_is_a_directory(tmp_path: Path) -> None:
    res = ibdtool("copy", str(tmp_path), str(tmp_path / "x"))
    assert (res.returncode, res.stderr) == (2, f"ibdtool: error: {tmp_path}: is a directory\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_destination_directory_does_not_exist(tmp_path: Path) -> None:
    src = synced_sparse_copy(sample("mysql80/zlib.ibd"), tmp_path / "s.ibd")
    res = ibdtool("copy", str(src), str(tmp_path / "no" / "such" / "t.ibd"))
    assert (res.returncode, res.stderr) == (
        2,
        f"ibdtool: error: {tmp_path}/no/such: no such directory\n",
    )
    res = ibdtool("copy", str(src), str(tmp_path / "nodir") + "/")
    assert (res.returncode, res.stderr) == (
        2,
        f"ibdtool: error: {tmp_path}/nodir/: no such directory\n",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.ibd"]


def test_explicit_repunch_of_something_that_is_not_a_tablespace(tmp_path: Path) -> None:
    src = tmp_path / "notes.txt"
    src.write_text("hello\n" * 1000)
    out = tmp_path / "out"
    out.mkdir()
    res = ibdtool("copy", "--repunch", str(src), str(out))
    assert res.returncode == 2
    assert res.stderr.startswith(f"ibdtool: error: {src}: ") and res.stderr.count("\n") == 1
    assert list(out.iterdir()) == []


@contextlib.contextmanager
def tiny_tmpfs(where: Path, size: str = "1m") -> Iterator[Path | None]:
    """A real 1 MiB tmpfs, or None where mounting is not allowed."""
    where.mkdir()
    if os.geteuid() != 0:
        yield None
        return
    res = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "ibdtool-test", str(where)],
        capture_output=True,
    )
    if res.returncode != 0:
        yield None
        return
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


def test_no_space_left_on_a_small_filesystem(tmp_path: Path) -> None:
    src = tmp_path / "big.bin"
    _make_sparse_file(src, 8, seed=2)  # about 4 MiB of data for a 1 MiB filesystem
    with tiny_tmpfs(tmp_path / "small") as small:
        if small is None:
            assert os.geteuid() != 0, "root could not mount a tmpfs"
            return  # the file-size limit test below covers this machine
        res = ibdtool("copy", str(src), str(small))
        assert res.returncode == 2
        lines = res.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"ibdtool: error: {small}: "), lines
        assert "not enough free space" in lines[0] or "no space left" in lines[0]
        assert list(small.iterdir()) == []


def test_no_space_left_while_writing(tmp_path: Path) -> None:
    """The free-space check passes, then another writer fills the filesystem mid-copy."""
    src = tmp_path / "big.bin"
    _make_sparse_file(src, 16, seed=4)
    with tiny_tmpfs(tmp_path / "small", size="16m") as small:
        if small is None:
            assert os.geteuid() != 0, "root could not mount a tmpfs"
            return
        data = sum(end - start for start, end in _ranges(src))
        assert 4 << 20 < data < 12 << 20, data
        filler = small / "filler"
        proc = spawn(["copy", "--bwlimit", "2M", str(src), str(small)])
        try:
            from tests.test_copy_remote import _wait_for

            _wait_for(lambda: (small / ".big.bin.ibdtool-part.json").exists())
            fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\1" * (1 << 20))
            os.close(fd)
            _, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 2, err
        assert err == f"ibdtool: error: {small}/big.bin: no space left on device\n"
        assert sorted(p.name for p in small.iterdir()) == ["filler"]


def _ranges(path: Path) -> list[tuple[int, int]]:
    from tests.test_copy_remote import seek_data_ranges

    return seek_data_ranges(path)


def _limit_file_size() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() then fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (256 << 10, 256 << 10))


def test_file_size_limit(tmp_path: Path) -> None:
    src = synced_sparse_copy(sample("mariadb/p16k-plain.ibd"), tmp_path / "s.ibd")
    out = tmp_path / "out"
    out.mkdir()
    res = ibdtool("copy", str(src), str(out), preexec_fn=_limit_file_size)
    assert (res.returncode, res.stderr) == (
        2,
        f"ibdtool: error: {out}/s.ibd: file too large (the file size limit was reached)\n",
    )
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("args", [["--bwlimit", "fast"], ["--verify", "maybe"]])
def test_bad_options_are_usage_errors(args: list[str], tmp_path: Path) -> None:
    res = ibdtool("copy", *args, "a", str(tmp_path))
    assert res.returncode == 2
    assert "Usage:" in res.stderr or "Error:" in res.stderr
