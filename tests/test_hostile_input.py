"""Hostile input and faults, as met by scripts that run ibdtool as root on data directories.

Every file is made here: a FIFO, a socket and a character device named like a tablespace; huge
sparse files (``truncate``) with and without a real page 0; a file truncated while ``checksum``
reads it. The CLI runs as a subprocess under a time limit and an address-space limit
(``RLIMIT_AS``), so a command that blocks, or that builds per-page lists for a 15 TiB file,
fails the test instead of hanging it. Expected values come from ``stat``, from the same
tablespace scanned small and dense, and from the corpus file itself.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import socket
import stat
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ibdtool.errors import InputError
from ibdtool.tablespace.checksum import check_file
from tests.cli_runner import run_ibdtool
from tests.conftest import corpus_file
from tests.test_bad_input import ACTOR, PAGE, assert_no_traceback, assert_one_error

#: more than a healthy scan needs, far less than a per-page list of a 15 TiB file (9 GiB)
MEMORY_LIMIT = 1 << 30
TIME_LIMIT = 60


def run_cli(
    *args: str | Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m ibdtool.cli ARGS`` with a memory cap; a hang is a failed test."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))

    base = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    base.update(HOME="/tmp", NO_COLOR="1", PYTHONDONTWRITEBYTECODE="1", **(env or {}))
    return run_ibdtool(*args, env=base, timeout=TIME_LIMIT, preexec_fn=limit)


# --- 2. only regular files are read ----------------------------------------------------------


@pytest.fixture
def unix_socket(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "socket.ibd"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    yield path
    sock.close()


def _fifo(d: Path) -> Path:
    path = d / "fifo.ibd"
    os.mkfifo(path)
    return path


def _char_device(d: Path) -> Path:
    path = d / "zero.ibd"
    os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # what /dev/zero is
    return path


FILE_COMMANDS = (
    ["inspect"],
    ["inspect", "--json"],
    ["pages"],
    ["pages", "--csv"],
    ["checksum"],
    ["checksum", "-j", "2"],
    ["sdi"],
    ["simulate"],
    ["simulate", "--json"],
    ["tui"],
)


@pytest.mark.parametrize("command", FILE_COMMANDS, ids=" ".join)
@pytest.mark.parametrize("kind", ["fifo", "char-device", "socket"])
def test_non_regular_file_is_one_line_exit_2(
    tmp_path: Path, unix_socket: Path, kind: str, command: list[str]
) -> None:
    """A FIFO blocked every command on open until a writer came; now each says what it is."""
    path = (
        {"fifo": _fifo, "char-device": _char_device}[kind](tmp_path)
        if kind != "socket"
        else unix_socket
    )
    proc = run_cli(*command, path)
    assert proc.returncode == 2, proc
    assert_one_error(proc, path, "not a regular file")
    assert proc.stdout == ""


@pytest.mark.parametrize("kind", ["fifo", "char-device"])
def test_copy_refuses_a_non_regular_source(tmp_path: Path, kind: str) -> None:
    path = {"fifo": _fifo, "char-device": _char_device}[kind](tmp_path)
    dest = tmp_path / "out"
    dest.mkdir()
    proc = run_cli("copy", path, f"{dest}/")
    assert proc.returncode == 2, proc
    assert_one_error(proc, path, "not a regular file")
    assert list(dest.iterdir()) == []


# --- 3. no false OK: a file that shrinks while checksum reads it -------------------------------


def actor_then(path: Path, fill: Callable[[int], None]) -> Path:
    """The corpus's actor.ibd (8 pages) as ``path``, then ``fill(fd)`` adds to it."""
    shutil.copyfile(corpus_file(ACTOR), path)
    fd = os.open(path, os.O_RDWR)
    try:
        fill(fd)
    finally:
        os.close(fd)
    return path


def dense_junk(pages: int) -> Callable[[int], None]:
    """``pages`` more pages of non-zero bytes (damaged pages: read and decoded, not skipped)."""

    def fill(fd: int) -> None:
        os.pwrite(fd, bytes(range(1, 256)) * (pages * PAGE // 255 + 1), 8 * PAGE)
        os.ftruncate(fd, (8 + pages) * PAGE)

    return fill


def hole_then_page(pages: int) -> Callable[[int], None]:
    """A hole of ``pages`` pages, then one page of data at the end."""

    def fill(fd: int) -> None:
        os.pwrite(fd, b"\x01" * PAGE, (8 + pages) * PAGE)

    return fill


def hole(pages: int) -> Callable[[int], None]:
    """A hole of ``pages`` pages at the end (never read: the scan counts it)."""

    def fill(fd: int) -> None:
        os.ftruncate(fd, (8 + pages) * PAGE)

    return fill


SHRINKING = {
    "dense": dense_junk(1024),  # 16 MiB: four reads; the second comes back short
    "hole-then-data": hole_then_page(1 << 16),
    "hole-at-end": hole(1 << 16),
}


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("layout", sorted(SHRINKING))
def test_checksum_of_a_file_that_shrinks_is_an_error(
    tmp_path: Path, layout: str, jobs: int
) -> None:
    """The file is cut to its first two pages after the first read: the old scan printed
    "OK" with the pages it was asked for; now it is an error, wherever the pages were lost."""
    path = actor_then(tmp_path / "shrinking.ibd", SHRINKING[layout])
    size = path.stat().st_size

    def truncate_once(done: int) -> None:
        # in whichever process reads first: with workers, a child may be the one
        if os.stat(path).st_size == size:
            os.truncate(path, 2 * PAGE)

    with pytest.raises(InputError, match="file shrank while reading"):
        check_file(str(path), jobs=jobs, parallel_min=1, progress=truncate_once)
    assert path.stat().st_size == 2 * PAGE, "the scan never read the file"


def test_checksum_counts_the_pages_it_verified(tmp_path: Path) -> None:
    """Nothing shrinks: every page is counted, the hole's as empty (stat gives the count)."""
    path = actor_then(tmp_path / "holey.ibd", hole_then_page(5000))
    small = check_file(str(corpus_file(ACTOR)), jobs=1)
    result = check_file(str(path), jobs=2, parallel_min=1)
    assert result.pages == path.stat().st_size // PAGE
    assert result.empty == small.empty + 5000
    assert result.invalid_pages == [*small.invalid_pages, 8 + 5000]


# --- 5. huge sparse and all-zero files ---------------------------------------------------------

#: ``tui`` shows the error in its tablespace view (tests/test_tui_faults.py)
ZERO_FILE_COMMANDS = (
    *(c for c in FILE_COMMANDS if c != ["tui"]),
    ["report"],
    ["report", "--format", "json"],
)


@pytest.fixture(scope="module")
def terabyte_of_zeros(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("zeros") / "x.ibd"
    with open(path, "wb") as f:
        f.truncate(1 << 40)
    return path


@pytest.mark.parametrize("command", ZERO_FILE_COMMANDS, ids=" ".join)
def test_all_zero_terabyte_is_not_a_tablespace(terabyte_of_zeros: Path, command: list[str]) -> None:
    """``truncate -s 1T x.ibd``: not 67 million empty pages scanned, but one plain sentence."""
    proc = run_cli(*command, terabyte_of_zeros)
    assert proc.returncode == 2, proc
    assert_no_traceback(proc)
    assert "page 0 is all zeros" in proc.stderr
    if command[0] != "report":  # a report lists the file as a row in error, by design
        assert_one_error(proc, terabyte_of_zeros, "not a tablespace")
        assert proc.stdout == ""


@pytest.fixture(scope="module")
def actor_in_15_tib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """actor.ibd extended to 15 TiB of holes: a billion pages, 128 KiB of data."""
    path = tmp_path_factory.mktemp("huge") / "actor.ibd"
    shutil.copyfile(corpus_file(ACTOR), path)
    os.truncate(path, 15 << 40)
    return path


@pytest.fixture(scope="module")
def actor_inspected() -> dict[str, object]:
    proc = run_cli("inspect", "--json", corpus_file(ACTOR))
    assert proc.returncode == 0, proc
    doc: dict[str, object] = json.loads(proc.stdout)
    return doc


def test_huge_sparse_inspect_counts_holes_without_reading_them(
    actor_in_15_tib: Path, actor_inspected: dict[str, object]
) -> None:
    """The same 8 pages as the small file, and every other page an empty one."""
    proc = run_cli("inspect", "--json", actor_in_15_tib)
    assert proc.returncode == 0, proc
    doc = json.loads(proc.stdout)
    n_pages = actor_in_15_tib.stat().st_size // PAGE
    extra = n_pages - 8
    small: dict[str, dict[str, int]] = actor_inspected  # type: ignore[assignment]
    assert doc["pages"] == n_pages
    assert doc["checksum"]["valid"] == small["checksum"]["valid"]
    assert doc["checksum"]["empty"] == small["checksum"]["empty"] + extra
    assert doc["page_types"]["ALLOCATED"] == small["page_types"].get("ALLOCATED", 0) + extra
    assert doc["allocated_size"] == actor_in_15_tib.stat().st_blocks * 512


def test_huge_sparse_checksum_and_report(actor_in_15_tib: Path) -> None:
    n_pages = actor_in_15_tib.stat().st_size // PAGE
    proc = run_cli("checksum", actor_in_15_tib)
    assert proc.returncode == 0, proc
    assert f"OK {n_pages} pages" in proc.stdout
    proc = run_cli("report", "--format", "json", actor_in_15_tib)
    assert proc.returncode == 0, proc
    (row,) = json.loads(proc.stdout)["tablespaces"]
    assert row["pages"] == n_pages and row["error"] is None


def test_huge_sparse_pages_and_simulate(actor_in_15_tib: Path) -> None:
    proc = run_cli("pages", "--json", "--from", "0", "--to", "9", actor_in_15_tib)
    assert proc.returncode == 0, proc
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["page"] for r in rows] == list(range(10))
    assert rows[9]["checksum"] == "empty" and rows[9]["allocated"] == 0
    # as it is: every page of the 15 TiB (its holes counted, not read)
    proc = run_cli("simulate", "--json", "--as-is", "-a", "mariadb:lz4", actor_in_15_tib)
    assert proc.returncode == 0, proc
    doc = json.loads(proc.stdout)
    assert doc["pages"] == actor_in_15_tib.stat().st_size // PAGE
    # as rebuilt (the default): the few pages with data repacked, the holes never read
    proc = run_cli("simulate", "--json", "-a", "mariadb:lz4", actor_in_15_tib)
    assert proc.returncode == 0, proc
    doc = json.loads(proc.stdout)
    assert doc["as_rebuilt"] and 0 < doc["rebuild_alone"]["pages_written"] < 1024


def test_simulate_with_no_written_page_sampled_says_so(tmp_path: Path) -> None:
    """Page 0 of a real tablespace, then written zeros: nothing to time. The advice used to
    die on ``min()`` of no timings (the TUI's ``s`` too); now a note says why."""
    path = tmp_path / "flushed_header_only.ibd"
    path.write_bytes(corpus_file(ACTOR).read_bytes()[:PAGE] + bytes(63 * PAGE))
    proc = run_cli("simulate", path)
    assert_no_traceback(proc)
    assert proc.returncode == 0, proc
    assert "no page with data was simulated" in proc.stdout


# --- 10. errors never land on stdout ---------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["inspect", "--json"],
        ["pages", "--json"],
        ["pages", "--csv"],
        ["simulate", "--json"],
        ["simulate", "--csv"],
        ["sdi"],
        ["checksum"],
    ],
    ids=" ".join,
)
def test_a_file_that_cannot_be_read_leaves_stdout_empty(tmp_path: Path, command: list[str]) -> None:
    missing = tmp_path / "missing.ibd"
    proc = run_cli(*command, missing)
    assert proc.returncode == 2, proc
    assert_one_error(proc, missing, "no such file")
    assert proc.stdout == ""
