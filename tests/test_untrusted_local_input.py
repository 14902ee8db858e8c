"""Local state and option text are input (issue 20, items 5 and 6).

A ``--journal`` line, the copy state file, option and login-path files, key files, ``--compare``
reports and ``--schema`` text can be damaged, truncated, planted or hostile. Each must give one
line on stderr naming the file (and the journal's line) and exit 2 — never a traceback, never
minutes of work or gigabytes of memory. Oracles: the exit status and the stderr line count (what
a script reads), the server's own ``SHOW CREATE TABLE`` (a refused journal converts nothing),
the kernel's peak memory of the child (``ru_maxrss``) against the input's size, and the server
itself for which column lengths are real (a throwaway MariaDB refuses what ibdtool refuses).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pymysql
import pytest

from samples.servers import ThrowawayServer
from tests.cli_runner import IBDTOOL, cli_env, run_ibdtool
from tests.samples_manifest import manifest, sample
from tests.server_fixtures import conn_args, ibdtool


def one_line_exit_2(r: subprocess.CompletedProcess[str], *names: str) -> str:
    assert r.returncode == 2, (r.returncode, r.stderr[-3000:])
    assert "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ibdtool: error: "), r.stderr
    for n in names:
        assert n in lines[0], (n, lines[0])
    return lines[0]


# --- the migrate journal -------------------------------------------------------------------------

GOOD = '{"ts": "2026-01-01T00:00:00+0000", "event": "batch_start", "target": "page:zlib"}'
BAD_LINES = {
    "truncated": b'{"event": "table_done", "tab',
    "not-utf8": b'{"event": "table_done", "table": "\xff\xfe"}',
    "a-list": b'["event", "table_done"]',
    "nested-100000": b"[" * 100_000 + b"]" * 100_000,
    "event-a-number": b'{"event": 5}',
    "table-a-list": b'{"event": "table_done", "target": "page:zlib", "table": ["t"]}',
    "change-a-number": b'{"event": "global_set", "change": 5}',
    "change-missing-fields": b'{"event": "global_set", "change": {"kind": "variable"}}',
    "change-unknown-kind": (
        b'{"event": "global_set", "change": {"kind": "plugin", "name": "x", "previous": "1",'
        b' "value": "2"}}'
    ),
    "variable-injection": (
        b'{"event": "global_set", "change": {"kind": "variable", "name": '
        b'"version, (SELECT SLEEP(30))", "previous": "1", "value": "2"}}'
    ),
}


@pytest.fixture
def journal_table(mariadb: ThrowawayServer) -> ThrowawayServer:
    mariadb.query("CREATE DATABASE IF NOT EXISTS jr")
    mariadb.query("DROP TABLE IF EXISTS jr.t")
    mariadb.query("CREATE TABLE jr.t (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB")
    mariadb.query("INSERT INTO jr.t VALUES (1, 'a'), (2, 'b')")
    return mariadb


@pytest.mark.xdist_group("mariadb")
@pytest.mark.parametrize("case", sorted(BAD_LINES))
def test_a_bad_journal_line_is_one_line_and_nothing_runs(
    journal_table: ThrowawayServer, tmp_path: Path, case: str
) -> None:
    before = journal_table.query("SHOW CREATE TABLE jr.t")[0][1]
    journal = tmp_path / "j.jsonl"
    journal.write_bytes(GOOD.encode() + b"\n" + BAD_LINES[case] + b"\n" + GOOD.encode() + b"\n")
    os.chmod(journal, 0o600)
    r = ibdtool(
        "migrate", "jr.t", "--to", "page:zlib", "--execute", "--yes", "--journal", str(journal),
        *conn_args(journal_table),
    )  # fmt: skip
    one_line_exit_2(r, f"{journal}:2")
    assert journal_table.query("SHOW CREATE TABLE jr.t")[0][1] == before


@pytest.mark.xdist_group("mariadb")
def test_a_journal_another_user_owns_is_not_read(
    journal_table: ThrowawayServer, tmp_path: Path
) -> None:
    """Its global_set lines would decide what is SET GLOBAL on the server: refused unread."""
    if os.geteuid() != 0:
        pytest.skip("needs root to give the file away")
    journal = tmp_path / "j.jsonl"
    journal.write_text(GOOD + "\n")
    os.chown(journal, 4242, 4242)
    r = ibdtool(
        "migrate", "jr.t", "--to", "page:zlib", "--execute", "--yes", "--journal", str(journal),
        *conn_args(journal_table),
    )  # fmt: skip
    one_line_exit_2(r, str(journal), "uid 4242")


# --- the copy state file -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "state",
    [b"[" * 100_000 + b"]" * 100_000, b"\xff\xfe{", b'{"protocol": 1, "windows": {"a": 1}}'],
    ids=["nested-100000", "not-utf8", "wrong-types"],
)
def test_a_damaged_copy_state_file_starts_over(tmp_path: Path, state: bytes) -> None:
    src = tmp_path / "f.bin"
    src.write_bytes(os.urandom(1 << 20))
    out = tmp_path / "out"
    out.mkdir()
    (out / ".f.bin.ibdtool-part").write_bytes(b"left over")
    (out / ".f.bin.ibdtool-part.json").write_bytes(state)
    r = run_ibdtool("copy", "--resume", str(src), str(out))
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert "starting over" in r.stderr
    assert (out / "f.bin").read_bytes() == src.read_bytes()


# --- files named by options: regular files only, read with a cap ---------------------------------

TABLESPACE = "mariadb/p16k-plain.ibd"


def peak_child_mb(
    args: list[str], timeout: float = 120
) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run ibdtool in a child; its result and the peak memory the kernel saw it use (MB)."""
    code = (
        "import resource, subprocess, sys\n"
        "r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "sys.stdout.write(r.stdout); sys.stderr.write(r.stderr)\n"
        "print('PEAK', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024, "
        "file=sys.stderr)\n"
        "sys.exit(r.returncode)\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, *IBDTOOL, *args],
        capture_output=True, text=True, env=cli_env(), timeout=timeout,
    )  # fmt: skip
    *rest, peak = r.stderr.rstrip("\n").split("\n")
    assert peak.startswith("PEAK "), r.stderr
    return subprocess.CompletedProcess(r.args, r.returncode, r.stdout, "\n".join(rest)), int(
        peak.split()[1]
    )


@pytest.mark.parametrize(
    "args",
    [
        ("inspect", "{ibd}", "--keyring", "/dev/zero"),
        ("inspect", "{ibd}", "--schema", "@/dev/zero"),
        ("report", "{dir}", "--compare", "/dev/zero"),
        ("server", "status", "--defaults-file=/dev/zero"),
        ("inspect", "{ibd}", "--keyring", "{fifo}"),
        ("inspect", "{ibd}", "--schema", "@{fifo}"),
        ("report", "{dir}", "--compare", "{fifo}"),
    ],
    ids=[
        "keyring-zero",
        "schema-zero",
        "compare-zero",
        "defaults-zero",
        "keyring-fifo",
        "schema-fifo",
        "compare-fifo",
    ],
)
def test_an_option_naming_a_device_or_fifo_is_refused(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    d = tmp_path / "d"
    d.mkdir()
    ibd = d / "t.ibd"
    ibd.write_bytes(sample(TABLESPACE).read_bytes())
    argv = [a.format(ibd=ibd, dir=d, fifo=fifo) for a in args]
    r, peak = peak_child_mb(argv, timeout=60)
    line = one_line_exit_2(r)
    assert "/dev/zero" in line or str(fifo) in line, line
    assert peak < 300, peak


def test_an_option_file_too_large_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "my.cnf"
    with open(big, "wb") as f:
        f.truncate(64 << 20)  # sparse: 64 MiB of NULs, no disk
    r = run_ibdtool("server", "status", f"--defaults-file={big}")
    one_line_exit_2(r, str(big))


# --- --schema text --------------------------------------------------------------------------------


def schema_with(column: str) -> str:
    return f"CREATE TABLE t_p16k_plain (id INT NOT NULL PRIMARY KEY, {column})"


@pytest.mark.parametrize(
    "column",
    [
        "v VARCHAR(1" + "0" * 5000 + ")",
        "v VARCHAR(99999999999999999999999)",
        "v DECIMAL(1000,2)",
        "v CHAR(256)",
        "v DATETIME(7)",
        "v BIT(65)",
    ],
    ids=["10^5000", "10^22", "decimal-1000", "char-256", "datetime-7", "bit-65"],
)
def test_impossible_lengths_are_one_line(column: str, mariadb: ThrowawayServer) -> None:
    """ibdtool refuses what the server refuses (the oracle: MariaDB's own CREATE TABLE)."""
    with pytest.raises(pymysql.err.MySQLError):
        mariadb.query("CREATE DATABASE IF NOT EXISTS sx")
        mariadb.query("DROP TABLE IF EXISTS sx.t_p16k_plain")
        mariadb.query(schema_with(column).replace("TABLE t_", "TABLE sx.t_"))
    r = run_ibdtool("records", str(sample(TABLESPACE)), "--schema", schema_with(column))
    one_line_exit_2(r, "--schema")


@pytest.mark.parametrize(
    "what",
    ["literal-20M", "unclosed-quote", "nested-1M", "columns-10000", "insert-data-50M"],
)
def test_schema_text_costs_memory_in_proportion(tmp_path: Path, what: str) -> None:
    """A 20 MB string literal took 3.9 GB and an unclosed quote quadratic time: each of these
    must finish within the memory of a few times its size and one line or a table."""
    ddl = manifest()[TABLESPACE]["ddl"]
    text = {
        "literal-20M": ddl.replace(
            "NOT NULL,\n  `created`", "NOT NULL DEFAULT '" + "x" * (20 << 20) + "',\n  `created`", 1
        ),
        "unclosed-quote": ddl + ";\nSELECT '" + "\\'" * (5 << 20),
        "nested-1M": ddl.replace(
            "NOT NULL,\n  `created`",
            "DEFAULT " + "(" * (1 << 20) + "1" + ")" * (1 << 20) + ",\n  `created`",
            1,
        ),
        "columns-10000": "CREATE TABLE t_p16k_plain ("
        + ", ".join(f"c{i} INT" for i in range(10_000))
        + ")",
        "insert-data-50M": ddl
        + ";\nINSERT INTO t VALUES "
        + ",".join(["(1,'a')"] * (7 << 20))
        + ";",
    }[what]
    f = tmp_path / "schema.sql"
    f.write_text(text)
    r, peak = peak_child_mb(["records", str(sample(TABLESPACE)), "--schema", f"@{f}"], timeout=120)
    assert "Traceback" not in r.stderr, r.stderr
    if what in ("literal-20M", "insert-data-50M"):
        assert r.returncode == 0, r.stderr
    else:
        one_line_exit_2(r, "--schema")
    assert peak < 100 + 4 * len(text) // (1 << 20), (peak, len(text))


def test_an_include_with_a_nul_is_no_traceback(tmp_path: Path) -> None:
    """Found by the long run (``bench/fuzz_long.py --text``): ``!include`` of a path holding a
    NUL raised ValueError from pathlib; it is a file that cannot exist, as a missing one."""
    from ibdtool.server.clientopts import read_option_file

    cnf = tmp_path / "my.cnf"
    cnf.write_bytes(b"[client]\nuser=a\n!include /tmp/x\x00y\n!includedir /tmp/\x00\nport=3307\n")
    got = {s.key: s.value for s in read_option_file(cnf)}
    assert got == {"user": "a", "port": "3307"}
