"""The mysql clients' options, option files and login-path file, against the clients themselves.

Oracles: MariaDB's ``my_print_defaults`` and ``mariadb`` client, MySQL 8.0.33's
``my_print_defaults``, ``mysql_config_editor`` and ``mysql`` (:mod:`tests.mysql_client_tools`),
``openssl enc`` for a second construction of the login-path file, and the users a real
MariaDB 10.11 / MySQL 8.0.15 says a session logged in as (``CURRENT_USER()``).
"""

from __future__ import annotations

import json
import os
import pty
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from ibdtool.server import loginfile
from ibdtool.server.clientopts import read_login_path_file, read_option_file
from samples.servers import ThrowawayServer
from tests import mysql_client_tools as mysqlc
from tests.catalog import REPO
from tests.cli_runner import IBDTOOL
from tests.server_fixtures import (
    clean_env,
    ibdtool,
)

SECRET = "Cl1-pw_#with space"
MARIADB_CLIENT = shutil.which("mariadb") or "/usr/bin/mariadb"
MARIADB_PRINT_DEFAULTS = shutil.which("my_print_defaults") or "/usr/bin/my_print_defaults"


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = clean_env(HOME=str(home), **extra)
    env.pop("MYSQL_TEST_LOGIN_FILE", None)
    return env


def _as_args(settings: list) -> list[str]:
    return [f"--{s.key}" + ("" if s.value is None else f"={s.value}") for s in settings]


# --- option files, as my_print_defaults reads them --------------------------------------------


def _tricky_file(tmp_path: Path) -> Path:
    inc = tmp_path / "inc.cnf"
    inc.write_text("[client]\nconnect-timeout = 5\n")
    folder = tmp_path / "conf.d"
    folder.mkdir()
    (folder / "b.cnf").write_text("[mysql]\nhost = from-b\n")
    (folder / "a.cnf").write_text("[client]\nhost = from-a\n")
    (folder / "c.txt").write_text("[client]\nhost = never\n")
    f = tmp_path / "my.cnf"
    f.write_text(
        "# a comment\n; another\n[client]\nuser = app   # trailing comment\n"
        'host="quoted # not a comment"\n'
        "socket='single quoted'\n"
        "database = a\\sb\n"
        "skip-ssl\n"
        "[mysqld]\nport = 1\n"
        "[mysql]\nport = 3307\n"
        "  [client]  \n  user=second  \n"
        f"!include {inc}\n!includedir {folder}\n"
    )
    return f


def test_option_files_read_as_mysql_reads_them(tmp_path: Path) -> None:
    f = _tricky_file(tmp_path)
    mine = _as_args(list(read_option_file(f, ("client", "mysql"))))
    env = _env(tmp_path)
    res = mysqlc.run("my_print_defaults", f"--defaults-file={f}", "client", "mysql", env=env)
    assert res.returncode == 0, res.stderr
    assert mine == res.stdout.splitlines()
    assert "--host=from-a" in mine and mine.index("--host=from-a") < mine.index("--host=from-b")


def test_option_files_read_as_mariadb_reads_them(tmp_path: Path) -> None:
    f = _tricky_file(tmp_path)
    (tmp_path / "my.cnf").open("a").write("[client-mariadb]\nuser = maria\n[client-server]\nx=1\n")
    groups = ("mysql", "mariadb-client", "client", "client-server", "client-mariadb")
    mine = _as_args(list(read_option_file(f, groups)))
    res = subprocess.run(
        [MARIADB_PRINT_DEFAULTS, f"--defaults-file={f}", *groups],
        capture_output=True, text=True, env=_env(tmp_path), check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert mine == res.stdout.splitlines()


def test_a_world_writable_option_file_is_ignored_as_mysql_does(tmp_path: Path) -> None:
    f = tmp_path / "w.cnf"
    f.write_text("[client]\nuser = nobody\n")
    f.chmod(0o666)
    warnings: list[str] = []
    assert list(read_option_file(f, ("client",), warnings.append)) == []
    res = mysqlc.run("my_print_defaults", f"--defaults-file={f}", "client", env=_env(tmp_path))
    assert res.stdout.strip() == "" and "World-writable config file" in res.stderr
    assert warnings and "World-writable config file" in warnings[0]


# --- the login-path file ------------------------------------------------------------------------

LOGIN_TEXT = '[client]\nuser = "base"\n[remote]\nuser = "app"\nhost = "db1"\nport = 3310\n'


def _login_home(tmp_path: Path, data: bytes) -> Path:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    path = home / ".mylogin.cnf"
    path.write_bytes(data)
    path.chmod(0o600)
    return home


def test_our_login_file_reads_in_mysql_config_editor(tmp_path: Path) -> None:
    home = _login_home(tmp_path, loginfile.encrypt(LOGIN_TEXT))
    res = mysqlc.run("mysql_config_editor", "print", "--all", env=_env(home))
    assert res.returncode == 0, res.stderr
    assert res.stdout == LOGIN_TEXT
    # my_print_defaults reads the groups it is given (the mysql client adds its login path)
    res = mysqlc.run(
        "my_print_defaults", "-s", "--login-path=remote", "client", "mysql", "remote",
        env=_env(home),
    )  # fmt: skip
    mine = read_login_path_file(str(home / ".mylogin.cnf"), "remote")
    assert res.stdout.splitlines() == _as_args(list(mine))


def _editor_on_pty(home: Path, args: list[str], password: str) -> None:
    program, extra = mysqlc.program_path("mysql_config_editor")
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.execve(program, [program, *args], {**_env(home), **extra})
        finally:
            os._exit(127)
    seen = b""
    try:
        while b"password:" not in seen.lower():
            chunk = os.read(fd, 1024)
            if not chunk:
                break
            seen += chunk
        os.write(fd, password.encode() + b"\n")
        with_rest = b""
        try:
            while chunk := os.read(fd, 1024):
                with_rest += chunk
        except OSError:
            pass
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0, seen


def test_mysql_config_editors_file_reads_here(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    args = ["set", "--login-path=ed", "--user=edith", "--host=h.example", "--port=3399", "-p"]
    _editor_on_pty(home, args, SECRET)
    text = loginfile.decrypt((home / ".mylogin.cnf").read_bytes())
    res = mysqlc.run("my_print_defaults", "-s", "--login-path=ed", "ed", env=_env(home))
    mine = list(read_login_path_file(str(home / ".mylogin.cnf"), "ed"))
    assert _as_args(mine) == res.stdout.splitlines()
    assert {s.key: s.value for s in mine}["password"] == SECRET
    assert "[ed]" in text


def test_login_file_matches_a_construction_with_openssl(tmp_path: Path) -> None:
    """The documented layout built with ``openssl enc`` line by line, byte for byte."""
    key = bytes(range(7, 27))
    folded = bytearray(16)
    for i, b in enumerate(key):
        folded[i % 16] ^= b
    out = b"\0\0\0\0" + key
    for line in LOGIN_TEXT.splitlines(keepends=True):
        enc = subprocess.run(
            ["openssl", "enc", "-aes-128-ecb", "-K", folded.hex(), "-nosalt"],
            input=line.encode(), capture_output=True, check=True,
        ).stdout  # fmt: skip
        out += len(enc).to_bytes(4, "little") + enc
    assert loginfile.encrypt(LOGIN_TEXT, key) == out
    assert loginfile.decrypt(out) == LOGIN_TEXT


def test_a_login_file_others_can_read_is_ignored_as_mysql_does(tmp_path: Path) -> None:
    home = _login_home(tmp_path, loginfile.encrypt(LOGIN_TEXT))
    (home / ".mylogin.cnf").chmod(0o644)
    warnings: list[str] = []
    assert list(read_login_path_file(str(home / ".mylogin.cnf"), None, warnings.append)) == []
    res = mysqlc.run("my_print_defaults", "client", env=_env(home))
    assert "should be readable/writable only by current user" in res.stderr
    assert "should be readable/writable only by current user" in warnings[0]


# --- connecting: which user each client ends up as -------------------------------------------


@pytest.fixture(scope="module")
def cli_user(mariadb: ThrowawayServer) -> ThrowawayServer:
    mariadb.query("CREATE USER IF NOT EXISTS 'cli'@'localhost' IDENTIFIED BY %s", (SECRET,))
    mariadb.query("GRANT ALL PRIVILEGES ON *.* TO 'cli'@'localhost'")
    return mariadb


def _ours(args: list[str], env: dict[str, str]) -> str:
    res = ibdtool("server", "status", "--json", *args, env=env)
    if res.returncode != 0:
        return "error: " + res.stderr.strip().splitlines()[-1]
    return str(json.loads(res.stdout)["connection"]).split("@")[0]


def _theirs(args: list[str], env: dict[str, str], client: str = MARIADB_CLIENT) -> str:
    cmd = [client, *args, "-N", "-B", "-e", "SELECT CURRENT_USER()"]
    if client == MARIADB_CLIENT:
        res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, check=False)
    else:
        res = mysqlc.run(Path(client).name, *cmd[1:], env=env)
    if res.returncode != 0:
        return "error: " + res.stderr.strip().splitlines()[-1]
    return res.stdout.strip().split("@")[0]


def _cnf(path: Path, text: str) -> str:
    path.write_text(text)
    path.chmod(0o600)
    return str(path)


@pytest.mark.xdist_group("mariadb")
def test_precedence_as_the_mariadb_client_resolves_it(
    cli_user: ThrowawayServer, tmp_path: Path
) -> None:
    sock = str(cli_user.socket)
    good = f'user = cli\npassword = "{SECRET}"\nsocket = {sock}\n'
    home = tmp_path / "home"
    home.mkdir()
    extra = _cnf(tmp_path / "extra.cnf", f"[client]\nuser = root\npassword = \nsocket = {sock}\n")
    only = _cnf(tmp_path / "only.cnf", "[client]\n" + good)
    cases = {
        # ~/.my.cnf beats the environment
        "file over env": ([], {"MYSQL_PWD": "wrong"}, "[client]\n" + good),
        # the command line beats ~/.my.cnf
        "cli over file": ([f"-p{SECRET}"], {}, f"[client]\nuser=cli\npassword=no\nsocket={sock}\n"),
        # ~/.my.cnf is read after --defaults-extra-file
        "user file over extra": ([f"--defaults-extra-file={extra}"], {}, "[client]\n" + good),
        # within a file the later line wins, whatever its group
        "line order": ([], {}, "[client]\n" + good + "[mysql]\nuser = root\npassword=\n"),
        # --defaults-file is the only file
        "defaults-file alone": ([f"--defaults-file={only}"], {}, "[client]\nuser = root\n"),
        # MariaDB's own group
        "client-mariadb": ([], {}, "[client-mariadb]\n" + good),
        # the environment when nothing else says
        "env": (["--no-defaults", "-u", "cli"], {"MYSQL_PWD": SECRET, "MYSQL_UNIX_PORT": sock}, ""),
    }  # fmt: skip
    got = {}
    for name, (args, env_extra, user_file) in cases.items():
        _cnf(home / ".my.cnf", user_file)
        env = _env(home, **env_extra)
        got[name] = (_ours(args, env), _theirs(args, env))
    assert all(ours == theirs for ours, theirs in got.values()), got
    assert {k: v[0] for k, v in got.items()} == {
        "file over env": "cli",
        "cli over file": "cli",
        "user file over extra": "cli",
        "line order": "root",
        "defaults-file alone": "cli",
        "client-mariadb": "cli",
        "env": "cli",
    }


@pytest.mark.xdist_group("mariadb")
def test_login_path_as_the_mysql_client_uses_it(cli_user: ThrowawayServer, tmp_path: Path) -> None:
    sock = str(cli_user.socket)
    text = (
        f'[client]\nuser = "root"\n[app]\nuser = "cli"\npassword = "{SECRET}"\nsocket = "{sock}"\n'
    )
    home = _login_home(tmp_path, loginfile.encrypt(text))
    _cnf(home / ".my.cnf", f"[client]\nsocket = {sock}\n")
    env = _env(home)
    for args in (["--login-path=app"], ["--no-defaults", "--login-path=app"], []):
        ours, theirs = _ours(args, env), _theirs(args, env, "mysql")
        assert ours == theirs, (args, ours, theirs)
    assert _ours(["--no-defaults", "--login-path=app"], env) == "cli"
    # one mysql_config_editor wrote, with its password typed on a terminal
    home2 = tmp_path / "home2"
    home2.mkdir()
    _editor_on_pty(
        home2, ["set", "--login-path=ed", "--user=cli", f"--socket={sock}", "-p"], SECRET
    )
    assert _ours(["--no-defaults", "--login-path=ed"], _env(home2)) == "cli"


@pytest.mark.xdist_group("mysql80")
def test_h_is_the_host_and_p_takes_a_password_with_the_warning(
    mysql80: ThrowawayServer,
    tmp_path: Path,
) -> None:
    mysql80.query("CREATE USER IF NOT EXISTS 'far'@'127.0.0.1' IDENTIFIED BY %s", (SECRET,))
    mysql80.query("GRANT ALL PRIVILEGES ON *.* TO 'far'@'127.0.0.1'")
    port = str(mysql80.tcp_port)  # type: ignore[attr-defined]
    tcp = ["--no-defaults", "-h", "127.0.0.1", "-P", port, "-u", "far"]
    env = _env(tmp_path)
    res = ibdtool("server", "status", "--json", *tcp, f"-p{SECRET}", env=env)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["connection"] == f"far@127.0.0.1:{port}"
    warning = "ibdtool: [Warning] Using a password on the command line interface can be insecure."
    assert res.stderr.splitlines() == [warning]
    their = mysqlc.run("mysql", *tcp, f"-p{SECRET}", "-N", "-e", "SELECT 1", env=env)
    assert "Using a password on the command line interface can be insecure." in their.stderr
    res = ibdtool("server", "status", "--json", *tcp, f"--password={SECRET}", env=env)
    assert res.returncode == 0 and res.stderr.splitlines() == [warning]
    # migrate takes -h as the host too (it used to print its help and exit 0)
    res = ibdtool("migrate", "mysql.user", "--to", "page:zlib", *tcp, f"-p{SECRET}", env=env)
    assert "Usage:" not in res.stdout + res.stderr
    assert res.returncode in (0, 1), res.stderr
    # MYSQL_HOST and MYSQL_TCP_PORT when the command line names neither
    env_tcp = _env(tmp_path, MYSQL_HOST="127.0.0.1", MYSQL_TCP_PORT=port, MYSQL_PWD=SECRET)
    res = ibdtool("server", "status", "--json", "--no-defaults", "-u", "far", env=env_tcp)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["connection"] == f"far@127.0.0.1:{port}"


@pytest.mark.parametrize("cmd", [["server", "status"], ["server", "tables"], ["migrate"], ["tui"]])
def test_help_is_help_or_question_mark_and_h_wants_a_host(cmd: list[str]) -> None:
    for flag in ("--help", "-?"):
        res = ibdtool(*cmd, flag)
        assert res.returncode == 0 and res.stdout.startswith("Usage:"), res.stderr
        assert "-h, --host" in res.stdout
    res = ibdtool(*cmd, "-h")
    assert res.returncode == 2 and "requires an argument" in res.stderr


def _on_pty(args: list[str], answer: bytes) -> tuple[int, bytes]:
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.chdir(REPO)
            os.execve(IBDTOOL[0], [*IBDTOOL, *args], clean_env())
        finally:
            os._exit(127)
    seen = b""
    try:
        while b"Enter password:" not in seen:
            chunk = os.read(fd, 1024)
            if not chunk:
                break
            seen += chunk
        os.write(fd, answer)
        try:
            while chunk := os.read(fd, 4096):
                seen += chunk
        except OSError:
            pass
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    return os.waitstatus_to_exitcode(status), seen


@pytest.mark.xdist_group("mariadb")
def test_p_and_password_alone_ask_and_take_no_argument(cli_user: ThrowawayServer) -> None:
    base = ["--no-defaults", "-S", str(cli_user.socket), "-u", "cli"]
    for flag in ("-p", "--password"):
        code, seen = _on_pty(["server", "status", "--json", flag, *base], SECRET.encode() + b"\n")
        assert code == 0, seen
        assert b'"connection": "cli@localhost' in seen and SECRET.encode() not in seen
    # -p followed by a word: the word is the next argument (a TABLE), not the password
    code, seen = _on_pty(["migrate", "-p", "mysql.db", "--to", "page:zlib", *base], b"\n")
    assert b"Enter password:" in seen
    assert b"Access denied for user 'cli'@'localhost'" in seen  # it asked; empty is wrong


def test_a_password_on_the_command_line_is_blanked_out_of_ps(tmp_path: Path) -> None:
    """As the clients do: while it connects (to a listener that never answers), the process's
    command line, as every user sees it, holds x's where the password was."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = str(listener.getsockname()[1])
        args = ["server", "status", "--no-defaults", "-h", "127.0.0.1", "-P", port]
        proc = subprocess.Popen(
            [*IBDTOOL, *args, f"-p{SECRET}", "--connect-timeout", "3"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
            env=_env(tmp_path), cwd=REPO,
        )  # fmt: skip
        listener.settimeout(60)
        conn, _ = listener.accept()  # ibdtool has read its options and is connecting
        with conn:
            cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")
        _, err = proc.communicate(timeout=60)  # the connection closed: it fails at once
    assert SECRET.encode() not in b" ".join(cmdline)
    assert b"-p" + b"x" * len(SECRET.encode()) in cmdline
    assert proc.returncode == 2 and SECRET.encode() not in err
