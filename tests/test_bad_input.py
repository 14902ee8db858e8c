"""Bad input through the real CLI: one-line errors, exit 2, no traceback, nothing written.

Every case runs ``python -m ibdtool.cli`` as a subprocess on files built in ``tmp_path`` from
real corpus tablespaces (../shared/corpus of the repo): an empty file, a page-0 fragment, random
bytes, PNGs, a directory, a missing path, an unreadable file. A damaged file that is still a
tablespace (corrupted page 0, a flipped byte in page 4, a truncated last page) must be reported
page by page, with its bad parts named. The inspected files must stay byte-for-byte and
timestamp-for-timestamp unchanged.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shlex
import shutil
import signal
import struct
import subprocess
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_runner import ibdtool_command, run_ibdtool
from tests.conftest import corpus_file

REPO = Path(__file__).resolve().parents[1]

ACTOR = "innodb_ruby/sakila/8.0/sakila/actor.ibd"  # MySQL 8.0.40, 8 pages of 16K, SDI root 3
PAGE = 16384
COMMANDS = (["inspect"], ["inspect", "--json"], ["pages"], ["checksum"], ["sdi"])
NOBODY = 65534


def ibdtool(*args: str | Path, as_nobody: bool = False) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(HOME="/tmp", NO_COLOR="1", PYTHONDONTWRITEBYTECODE="1")
    return run_ibdtool(*args, as_user=NOBODY if as_nobody else None, env=env, timeout=120)


def fingerprint(path: Path) -> tuple[int, int, int, str]:
    """What would change if ibdtool wrote to the file: size, mtime, ctime, content."""
    st = path.stat()
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, hashlib.sha256(path.read_bytes()).hexdigest()


def assert_no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    for stream in (proc.stdout, proc.stderr):
        assert "Traceback" not in stream, proc.stderr
        assert "Exception ignored" not in stream, proc.stderr


def assert_one_error(proc: subprocess.CompletedProcess[str], path: Path, problem: str) -> None:
    """Exactly one stderr line ``ibdtool: error: <path>: …<problem>…``."""
    assert_no_traceback(proc)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"ibdtool: error: {path}: "), lines[0]
    assert problem in lines[0], lines[0]


def copy_of(rel: str, dst: Path) -> Path:
    shutil.copyfile(corpus_file(rel), dst)
    dst.chmod(0o644)
    return dst


def png(width: int, height: int, rng: random.Random) -> bytes:
    """A valid RGB PNG of noise (zlib + struct, no imaging library)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\0" + rng.randbytes(3 * width) for _ in range(height))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


# --- inputs that are not a tablespace at all -------------------------------------------------


def _empty(d: Path) -> Path:
    p = d / "empty.ibd"
    p.write_bytes(b"")
    return p


def _page0_fragment(d: Path) -> Path:
    p = d / "fragment.ibd"
    p.write_bytes(corpus_file(ACTOR).read_bytes()[:10000])
    return p


def _random(d: Path) -> Path:
    p = d / "random.bin"
    p.write_bytes(random.Random(20240601).randbytes(1 << 20))
    return p


def _tiny_png(d: Path) -> Path:
    p = d / "tiny.png"
    p.write_bytes(png(1, 1, random.Random(1)))
    return p


def _big_png(d: Path) -> Path:
    p = d / "noise.png"
    p.write_bytes(png(160, 160, random.Random(2)))  # ~75 KiB: several "pages" of PNG
    return p


def _directory(d: Path) -> Path:
    p = d / "a_directory.ibd"
    p.mkdir()
    return p


def _missing(d: Path) -> Path:
    return d / "no_such_file.ibd"


BAD_INPUTS = {
    "empty": (_empty, "empty file"),
    "page0-fragment": (_page0_fragment, "truncated"),
    "random-1MiB": (_random, "not an InnoDB tablespace"),
    "tiny-png": (_tiny_png, "too small"),
    "noise-png": (_big_png, "not an InnoDB tablespace"),
    "directory": (_directory, "is a directory"),
    "missing": (_missing, "no such file"),
}


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
@pytest.mark.parametrize("kind", sorted(BAD_INPUTS))
def test_bad_input_is_one_line_exit_2(tmp_path: Path, kind: str, command: list[str]) -> None:
    make, problem = BAD_INPUTS[kind]
    path = make(tmp_path)
    before = fingerprint(path) if path.is_file() else None
    proc = ibdtool(*command, path)
    assert proc.returncode == 2, proc
    assert_one_error(proc, path, problem)
    assert proc.stdout == ""
    if before is not None:
        assert fingerprint(path) == before


@pytest.fixture
def unreadable() -> Iterator[Path]:
    """A chmod 000 copy of a good tablespace in a directory anyone may traverse."""
    d = Path(tempfile.mkdtemp(prefix="ibdtool-unreadable-"))
    try:
        d.chmod(0o755)
        path = copy_of(ACTOR, d / "unreadable.ibd")
        path.chmod(0)
        yield path
    finally:
        shutil.rmtree(d)


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_unreadable_file(unreadable: Path, command: list[str]) -> None:
    as_nobody = os.geteuid() == 0  # root reads anything: drop to an unprivileged user
    if as_nobody and shutil.which("setpriv") is None:
        pytest.fail("setpriv (util-linux) is needed to run ibdtool unprivileged as root")
    before = fingerprint(unreadable)
    proc = ibdtool(*command, unreadable, as_nobody=as_nobody)
    assert proc.returncode == 2, proc
    assert_one_error(proc, unreadable, "permission denied")
    assert proc.stdout == ""
    assert fingerprint(unreadable) == before


# --- damaged tablespaces: report what is readable, name what is not ---------------------------


@pytest.fixture
def truncated(tmp_path: Path) -> Path:
    """actor.ibd cut in the middle of page 5: pages 0..4 whole, 5000 bytes of page 5."""
    path = tmp_path / "truncated.ibd"
    path.write_bytes(corpus_file(ACTOR).read_bytes()[: 5 * PAGE + 5000])
    return path


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_truncated_last_page(truncated: Path, command: list[str]) -> None:
    before = fingerprint(truncated)
    proc = ibdtool(*command, truncated)
    assert proc.returncode == 2, proc
    assert_one_error(proc, truncated, f"truncated: last page has 5000 of {PAGE} bytes")
    assert fingerprint(truncated) == before
    out = proc.stdout
    if command == ["inspect", "--json"]:
        doc = json.loads(out)
        assert doc["pages"] == 5
        assert doc["trailing_bytes"] == 5000
        assert doc["checksum"]["invalid"] == 0
        assert doc["sdi"]["table"] == "actor"
    elif command == ["pages"]:
        rows = [line.split() for line in out.splitlines()[1:]]
        assert [int(r[0]) for r in rows] == [0, 1, 2, 3, 4]
    elif command == ["checksum"]:
        assert "5 pages" in out and "0 invalid" in out
    elif command == ["sdi"]:
        doc = json.loads(out)
        assert doc[0] == "ibd2sdi"
        assert any(e["object"]["dd_object"].get("name") == "actor" for e in doc[1:])
    else:
        assert "Pages        5" in out


def test_truncated_pages_json(truncated: Path) -> None:
    proc = ibdtool("pages", "--json", truncated)
    assert proc.returncode == 2, proc
    assert_one_error(proc, truncated, "truncated")
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["page"] for r in rows] == [0, 1, 2, 3, 4]
    assert all(r["valid"] for r in rows)


@pytest.fixture
def bad_page0(tmp_path: Path) -> Path:
    """actor.ibd with bytes 0..200 of page 0 (FIL header, FSP header, flags) overwritten."""
    path = copy_of(ACTOR, tmp_path / "bad_page0.ibd")
    with path.open("r+b") as f:
        f.write(random.Random(7).randbytes(200))
    return path


def test_corrupted_page0_inspect_votes_page_size(bad_page0: Path) -> None:
    before = fingerprint(bad_page0)
    proc = ibdtool("inspect", "--json", bad_page0)
    assert_no_traceback(proc)
    assert proc.returncode == 0, proc
    assert proc.stderr == ""
    doc = json.loads(proc.stdout)
    assert (doc["page_size"], doc["physical_page_size"]) == (PAGE, PAGE)
    assert doc["pages"] == 8
    assert any("checksum vote" in w and "16384/16384" in w for w in doc["warnings"]), doc
    # only page 0 is damaged: the other pages are read with the voted size and verify
    assert doc["checksum"]["invalid_pages"] == [0]
    assert doc["checksum"]["valid"] == 5 and doc["checksum"]["empty"] == 2
    assert doc["page_types"]["INDEX"] == 2 and doc["page_types"]["SDI"] == 1
    assert doc["problems"][0]["page"] == 0
    assert doc["sdi"]["table"] == "actor"  # the SDI root on page 0 lies past the damage

    text = ibdtool("inspect", bad_page0)
    assert text.returncode == 0, text
    assert "found by checksum vote" in text.stdout.replace("\n", " ")
    assert "Problem      page 0" in text.stdout
    assert fingerprint(bad_page0) == before


def test_corrupted_page0_other_commands(bad_page0: Path) -> None:
    before = fingerprint(bad_page0)
    chk = ibdtool("checksum", bad_page0)
    assert_no_traceback(chk)
    assert chk.returncode == 1, chk
    assert "invalid pages: 0\n" in chk.stdout
    assert "5 valid" in chk.stdout

    pages = ibdtool("pages", "--json", bad_page0)
    assert_no_traceback(pages)
    assert pages.returncode == 0, pages
    rows = [json.loads(line) for line in pages.stdout.splitlines()]
    assert [r["page"] for r in rows] == list(range(8))
    assert rows[0]["valid"] is False and rows[0]["problem"]
    assert all(r["valid"] for r in rows[1:])

    sdi = ibdtool("sdi", bad_page0)
    assert_no_traceback(sdi)
    assert sdi.returncode == 0, sdi
    assert json.loads(sdi.stdout) == json.loads(ibdtool("sdi", corpus_file(ACTOR)).stdout)
    assert fingerprint(bad_page0) == before


@pytest.fixture
def bad_page4(tmp_path: Path) -> Path:
    """actor.ibd with one byte in the middle of page 4 (the PRIMARY index root) flipped."""
    path = copy_of(ACTOR, tmp_path / "bad_page4.ibd")
    with path.open("r+b") as f:
        f.seek(4 * PAGE + PAGE // 2)
        byte = f.read(1)[0]
        f.seek(4 * PAGE + PAGE // 2)
        f.write(bytes([byte ^ 0xFF]))
    return path


def test_corrupted_page_checksum(bad_page4: Path) -> None:
    before = fingerprint(bad_page4)
    proc = ibdtool("checksum", bad_page4)
    assert_no_traceback(proc)
    assert proc.returncode == 1, proc
    assert proc.stderr == ""
    assert "8 pages: 5 valid, 2 empty, 1 invalid" in proc.stdout
    assert "invalid pages: 4\n" in proc.stdout
    assert fingerprint(bad_page4) == before


def test_corrupted_page_inspect_and_pages(bad_page4: Path) -> None:
    before = fingerprint(bad_page4)
    proc = ibdtool("inspect", "--json", bad_page4)
    assert_no_traceback(proc)
    assert proc.returncode == 0, proc
    doc = json.loads(proc.stdout)
    assert doc["checksum"]["invalid_pages"] == [4]
    assert doc["checksum"]["valid"] == 5
    assert doc["problems"] == [{"page": 4, "problem": "checksum mismatch"}]
    assert doc["sdi"]["table"] == "actor"

    text = ibdtool("inspect", bad_page4)
    assert text.returncode == 0, text
    assert "Problem      page 4: checksum mismatch" in text.stdout

    pages = ibdtool("pages", "--json", bad_page4)
    assert pages.returncode == 0, pages
    rows = [json.loads(line) for line in pages.stdout.splitlines()]
    assert [r["page"] for r in rows] == list(range(8))  # the scan went on past page 4
    assert [r["page"] for r in rows if r["valid"] is False] == [4]
    assert rows[4]["problem"] == "checksum mismatch"
    assert fingerprint(bad_page4) == before


# --- several paths at once ---------------------------------------------------------------------


def test_several_paths_one_bad(tmp_path: Path) -> None:
    good1 = copy_of(ACTOR, tmp_path / "good1.ibd")
    good2 = copy_of("mysql-made/mysql5722-t_zlib_1k.ibd", tmp_path / "good2.ibd")
    bad = _random(tmp_path)
    missing = _missing(tmp_path)
    before = [fingerprint(p) for p in (good1, good2, bad)]

    proc = ibdtool("inspect", good1, bad, good2, missing)
    assert proc.returncode == 2, proc
    assert_no_traceback(proc)
    errors = proc.stderr.splitlines()
    assert len(errors) == 2, proc.stderr
    assert errors[0].startswith(f"ibdtool: error: {bad}: not an InnoDB tablespace")
    assert errors[1] == f"ibdtool: error: {missing}: no such file"
    assert str(good1) in proc.stdout and str(good2) in proc.stdout

    proc = ibdtool("inspect", "--json", good1, bad, good2)
    assert proc.returncode == 2, proc
    assert_one_error(proc, bad, "not an InnoDB tablespace")
    docs = json.loads(proc.stdout)
    # one JSON convention (README "Machine output"): the failed file is an error object in place
    assert [d["path"] for d in docs] == [str(good1), str(bad), str(good2)]
    assert docs[1]["error"].startswith(f"{bad}: not an InnoDB tablespace")

    proc = ibdtool("checksum", good1, missing, good2)
    assert proc.returncode == 2, proc
    assert_one_error(proc, missing, "no such file")
    assert f"{good1}: OK" in proc.stdout and f"{good2}: OK" in proc.stdout
    assert [fingerprint(p) for p in (good1, good2, bad)] == before


def test_several_paths_bad_input_outranks_bad_pages(tmp_path: Path, bad_page4: Path) -> None:
    missing = _missing(tmp_path)
    proc = ibdtool("checksum", bad_page4, missing)
    assert proc.returncode == 2, proc
    assert_one_error(proc, missing, "no such file")
    assert "invalid pages: 4" in proc.stdout


# --- output to a closed pipe --------------------------------------------------------------------


@pytest.fixture
def many_pages(tmp_path: Path) -> Path:
    """actor.ibd followed by 6000 empty pages (sparse): far more rows than a pipe buffer."""
    path = copy_of(ACTOR, tmp_path / "many.ibd")
    os.truncate(path, 6008 * PAGE)
    return path


@pytest.mark.parametrize("fmt", ["", "--json", "--csv"])
def test_broken_pipe_is_quiet(many_pages: Path, fmt: str) -> None:
    cmd = shlex.join(ibdtool_command("pages", *fmt.split(), many_pages))
    proc = subprocess.run(
        ["bash", "-o", "pipefail", "-c", f"{cmd} | head -1"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert_no_traceback(proc)
    assert proc.stderr == ""
    assert proc.returncode == 0, proc  # pipefail: ibdtool itself exited 0 too
    assert len(proc.stdout.splitlines()) == 1


def test_corpus_file_never_written() -> None:
    path = corpus_file(ACTOR)
    before = fingerprint(path)
    for command in COMMANDS:
        proc = ibdtool(*command, path)
        assert proc.returncode == 0, proc
        assert proc.stderr == ""
    assert fingerprint(path) == before


def test_interrupt_is_one_line(tmp_path: Path) -> None:
    """Ctrl-C in the middle of a long scan: ``ibdtool: interrupted``, exit 130, no traceback."""
    path = copy_of(ACTOR, tmp_path / "huge.ibd")
    os.truncate(path, 2_000_000 * PAGE)  # sparse: 30 GiB of empty pages
    proc = subprocess.Popen(
        ibdtool_command("pages", path),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        for _ in range(20):  # well inside the scan
            assert proc.stdout.readline()
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert "Traceback" not in err
    assert err == "ibdtool: interrupted\n"
    assert proc.returncode == 130
