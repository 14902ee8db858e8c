"""One meaning per option on every command, the mysql clients' conventions (docs/README.md,
"Options, one meaning each"): ``-?``/``--help`` is help everywhere, ``-h`` the host where a
command connects (and deprecated help elsewhere), a database is ``-D``/``DATABASE``/``-B``,
``--schema`` a CREATE TABLE; old spellings warn on stderr. ``server tables`` is sorted.

Oracles: the command list ``ibdtool --help`` prints, and for the server a real MariaDB 10.11
(information_schema.TABLES, ``os.stat`` of the files).
"""

from __future__ import annotations

import json
import re

import pytest

from samples.servers import ThrowawayServer
from tests.server_fixtures import conn_args, ibdtool

HOST_COMMANDS = {"server", "migrate", "records", "tui"}


def _commands() -> list[list[str]]:
    res = ibdtool("--help")
    assert res.returncode == 0, res.stderr
    listed = res.stdout.split("Commands:", 1)[1]
    names = [m.group(1) for m in re.finditer(r"^  (\w+)\s", listed, re.MULTILINE)]
    assert {"inspect", "report", "records", "server", "migrate", "copy"} <= set(names)
    out = [[n] for n in names if n != "server"]
    sub = ibdtool("server", "--help").stdout.split("Commands:", 1)[1]
    out += [["server", m.group(1)] for m in re.finditer(r"^  (\w+)\s", sub, re.MULTILINE)]
    return out


def test_question_mark_and_help_are_help_on_every_command() -> None:
    for cmd in [[], *_commands()]:
        for flag in ("-?", "--help"):
            res = ibdtool(*cmd, flag)
            assert res.returncode == 0, (cmd, flag, res.stderr)
            assert res.stdout.startswith("Usage:"), (cmd, flag)
            assert "-?, --help" in res.stdout, cmd
            assert res.stderr == "", (cmd, flag, res.stderr)


def test_h_is_the_host_where_a_command_connects_and_deprecated_help_elsewhere() -> None:
    for cmd in _commands():
        res = ibdtool(*cmd, "-h")
        if cmd[0] in HOST_COMMANDS:
            assert res.returncode == 2 and "requires an argument" in res.stderr, cmd
            continue
        assert res.returncode == 0 and res.stdout.startswith("Usage:"), cmd
        (warning,) = res.stderr.splitlines()
        assert "-h for help is deprecated" in warning and "--help or -?" in warning, cmd


def test_schema_is_a_create_table_wherever_it_is_offered() -> None:
    for cmd in _commands():
        text = ibdtool(*cmd, "--help").stdout
        options = text.split("Options:", 1)[1]
        if "--schema" in options:
            assert "CREATE TABLE" in options.split("--schema", 1)[1][:300], cmd
            assert cmd[0] not in ("server", "migrate"), cmd


@pytest.mark.xdist_group("mariadb")
def test_server_tables_takes_databases_sorts_and_warns_on_the_old_spelling(
    mariadb: ThrowawayServer,
) -> None:
    srv = mariadb
    srv.query("DROP DATABASE IF EXISTS optsort")
    srv.query("CREATE DATABASE optsort")
    # created out of name order, sizes out of name order
    srv.query("CREATE TABLE optsort.zeta (id INT PRIMARY KEY)")
    srv.query("CREATE TABLE optsort.Alpha (id INT PRIMARY KEY, v TEXT)")
    srv.query("CREATE TABLE optsort.mid (id INT PRIMARY KEY, v TEXT)")
    srv.query("INSERT INTO optsort.mid SELECT seq, REPEAT('x', 900) FROM optsort.seq_1_to_3000")
    srv.query("FLUSH TABLES optsort.mid FOR EXPORT")
    srv.query("UNLOCK TABLES")
    names = [
        str(t)
        for (t,) in srv.query(
            "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'optsort'"
        )
    ]
    res = ibdtool("server", "tables", "optsort", "--json", *conn_args(srv))
    assert res.returncode == 0 and res.stderr == "", res.stderr
    listed = [d["table"] for d in json.loads(res.stdout)]
    assert listed == sorted(names, key=str.casefold) == ["Alpha", "mid", "zeta"]
    res = ibdtool("server", "tables", "optsort", "--sort", "size", "--json", *conn_args(srv))
    by_size = [d["table"] for d in json.loads(res.stdout)]
    assert srv.datadir is not None
    size = {n: (srv.datadir / "optsort" / f"{n}.ibd").stat().st_size for n in names}
    assert by_size[0] == max(size, key=lambda n: size[n]) == "mid"
    # the old spelling: same tables, one warning naming the new one
    old = ibdtool("server", "tables", "--schema", "optsort", "--json", *conn_args(srv))
    assert old.returncode == 0
    assert [d["table"] for d in json.loads(old.stdout)] == listed
    (warning,) = old.stderr.splitlines()
    assert "--schema is deprecated" in warning and "DATABASE" in warning
    # migrate: -B makes the names databases; --schema warns
    plan = ibdtool("migrate", "-B", "optsort", "--to", "page:zlib", "--json", *conn_args(srv))
    assert plan.returncode in (0, 1), plan.stderr
    tables = sorted(t["table"] for t in json.loads(plan.stdout)["tables"])
    assert tables == sorted(f"optsort.{n}" for n in names)
    old = ibdtool("migrate", "--schema", "optsort", "--to", "page:zlib", "--json", *conn_args(srv))
    assert sorted(t["table"] for t in json.loads(old.stdout)["tables"]) == tables
    assert "--schema is deprecated" in old.stderr and "-B/--databases" in old.stderr
