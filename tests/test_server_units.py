"""The server package's pure parts: option files, targets, names, options, page state.

No server here; the oracles are the MySQL client's documented precedence, strings the real
servers returned (copied from their information_schema), and the full page decoder.
"""

from __future__ import annotations

import glob
from collections import Counter
from pathlib import Path

import pytest

from ibdtool.errors import InputError
from ibdtool.parsers.filename import encode as filename_encode
from ibdtool.server.clientopts import read_option_files, resolve_options
from ibdtool.server.connection import Secret
from ibdtool.server.dialects import parse_flavor
from ibdtool.server.pagestate import page_state, verify
from ibdtool.server.steps import Step, Target, parse_target
from ibdtool.server.table_info import TableOptions
from ibdtool.server.tables import split_table_name
from ibdtool.tablespace.reader import Tablespace
from tests.samples_manifest import SAMPLES, sample


def test_option_files_groups_quotes_includes_and_order(tmp_path: Path) -> None:
    inc = tmp_path / "conf.d"
    inc.mkdir()
    (inc / "a.cnf").write_text("[client]\nport = 3307\n")
    (inc / "ignored.txt").write_text("[client]\nport = 9999\n")
    first = tmp_path / "my.cnf"
    first.write_text(
        '# comment\n[mysqld]\nport=1\n[client]\nuser = app\npassword = "p#ss word"\n'
        f"socket=/tmp/a.sock  # trailing comment\nskip-ssl\n!includedir {inc}\n"
    )
    second = tmp_path / "user.cnf"
    second.write_text("[client-server]\nsocket = /tmp/b.sock\n[ibdtool]\nuser = dba\n")
    got = read_option_files([first, second])
    assert got["user"] == "dba"  # [ibdtool] of the later file wins
    assert got["password"] == "p#ss word"
    assert got["socket"] == "/tmp/b.sock"
    assert got["port"] == "3307"  # from the included directory, *.cnf only
    assert "skip_ssl" in got


def test_precedence_env_then_files_then_command_line_then_prompt(tmp_path: Path) -> None:
    cnf = tmp_path / "c.cnf"
    cnf.write_text("[client]\nuser=fromfile\npassword=filepw\nsocket=/tmp/f.sock\n")
    env = {"MYSQL_PWD": "envpw", "MYSQL_UNIX_PORT": "/tmp/env.sock", "MYSQL_HOST": "localhost"}
    o = resolve_options({"user": None}, defaults_file=str(cnf), environ=env)
    assert (o.user, o.socket, o.password) == ("fromfile", "/tmp/f.sock", Secret("filepw"))
    o = resolve_options({"user": "cli"}, no_defaults=True, environ=env)
    assert (o.user, o.socket, o.password) == ("cli", "/tmp/env.sock", Secret("envpw"))
    o = resolve_options(
        {}, no_defaults=True, environ=env, prompt_password=True, prompt=lambda _: "typed"
    )
    assert o.password == Secret("typed")
    o = resolve_options({"port": 3310}, no_defaults=True, environ={})
    assert (o.host, o.port, o.uses_socket) == ("127.0.0.1", 3310, False)
    with pytest.raises(InputError):
        resolve_options({}, defaults_file=str(tmp_path / "missing.cnf"), environ={})


def test_password_never_prints() -> None:
    o = resolve_options({"socket": "/tmp/x.sock"}, no_defaults=True, environ={"MYSQL_PWD": "s3"})
    for text in (repr(o), str(o), o.describe(), repr(o.password), f"{o.password}"):
        assert "s3" not in text


@pytest.mark.parametrize(
    ("version", "comment", "name", "numbers", "catalog"),
    [
        ("10.11.19-MariaDB-0+deb12u1", "Debian 12", "mariadb", (10, 11, 19), "mariadb"),
        ("5.5.5-10.1.48-MariaDB", "", "mariadb", (10, 1, 48), "mariadb_pre106"),
        ("8.0.15", "MySQL Community Server - GPL", "mysql", (8, 0, 15), "mysql8"),
        ("5.7.22", "MySQL Community Server (GPL)", "mysql", (5, 7, 22), "mysql57"),
        ("8.0.36-28", "Percona Server (GPL), Release 28", "mysql", (8, 0, 36), "mysql8"),
    ],
)
def test_flavor(
    version: str, comment: str, name: str, numbers: tuple[int, int, int], catalog: str
) -> None:
    f = parse_flavor(version, comment)
    assert (f.name, f.version, f.catalog) == (name, numbers, catalog)


@pytest.mark.parametrize(
    ("text", "target"),
    [
        ("page:zlib", Target("page", "zlib")),
        ("PAGE:lzma:3", Target("page", "lzma", 3)),
        ("row:8", Target("row", key_block_size=8)),
        ("row:4k", Target("row", key_block_size=4)),
        ("none", Target("none")),
    ],
)
def test_targets(text: str, target: Target) -> None:
    assert parse_target(text) == target
    assert parse_target(target.label) == target


@pytest.mark.parametrize("bad", ["page", "row:3", "row:32", "zip", "page:zlib:12", ""])
def test_bad_targets(bad: str) -> None:
    with pytest.raises(InputError):
        parse_target(bad)


def test_filename_encoding_and_table_names() -> None:
    # MariaDB 10.11 and MySQL 5.7 list `my-db`.`t$1` as my@002ddb/t@00241 (MySQL 8: as written)
    assert filename_encode("my-db") == "my@002ddb"
    assert filename_encode("t$1") == "t@00241"
    assert filename_encode("plain_Name9") == "plain_Name9"
    assert split_table_name("db.t", None) == ("db", "t")
    assert split_table_name("`a.b`.`c``d`", None) == ("a.b", "c`d")
    assert split_table_name("t", "def") == ("def", "t")
    with pytest.raises(InputError):
        split_table_name("t", None)


@pytest.mark.parametrize(
    ("create_options", "row_format", "expected"),
    [
        # strings as information_schema.TABLES returned them on the three servers
        ('COMPRESSION="lz4"', "Dynamic", TableOptions("DYNAMIC", None, "lz4")),
        (
            "row_format=COMPRESSED KEY_BLOCK_SIZE=4",
            "Compressed",
            TableOptions("COMPRESSED", 4, None),
        ),
        (
            "`PAGE_COMPRESSED`='1' `PAGE_COMPRESSION_LEVEL`='3'",
            "Dynamic",
            TableOptions("DYNAMIC", None, None, True, 3),
        ),
        ("row_format=DYNAMIC `PAGE_COMPRESSED`='0'", "Dynamic", TableOptions("DYNAMIC")),
        ('COMPRESSION="None"', "Dynamic", TableOptions("DYNAMIC")),
        ("partitioned", "Dynamic", TableOptions("DYNAMIC", partitioned=True)),
    ],
)
def test_table_options(create_options: str, row_format: str, expected: TableOptions) -> None:
    assert TableOptions.parse(create_options, row_format) == expected


def test_step_display_is_the_statement_without_the_tag() -> None:
    step = Step(
        "set_global",
        "/* ibdtool */ SET GLOBAL innodb_compression_algorithm = %s",
        "",
        variable="innodb_compression_algorithm",
        value="lz4",
    )
    assert step.display == "SET GLOBAL innodb_compression_algorithm = 'lz4';"


@pytest.mark.parametrize(
    "path",
    sorted(glob.glob(str(SAMPLES / "*" / "*.ibd"))),
    ids=lambda p: "/".join(Path(p).parts[-2:]),
)
def test_header_scan_agrees_with_the_full_decoder(path: str) -> None:
    """The 42-byte header classification against decompressing every page."""
    state = page_state(path)
    expected: Counter[str] = Counter()
    with Tablespace(path) as ts:
        for p in ts.pages():
            if p.empty or p.page_no == 0:
                continue
            if p.compression.value == "none" and p.real_type in (8, 9):  # FSP_HDR, XDES
                continue
            expected[p.compression.value] += 1
        assert state.space_id == ts.format.space_id
    assert state.by_algorithm == expected
    assert state.data_pages == sum(expected.values())


def test_verify_explains_plain_pages_by_recompressing_them() -> None:
    """MySQL's lz4 sample keeps one INDEX page plain: compressing it would save no block."""
    v = verify(sample("mysql80/lz4.ibd"), server="mysql", kind="page", algorithm="lz4")
    assert v.ok and v.plain_by_design == 1 and v.plain_unexplained == 0
    # attribute changed, pages not rewritten: 26 of 27 pages still plain
    v = verify(sample("mysql80/attr_only_zlib.ibd"), server="mysql", kind="page", algorithm="zlib")
    assert not v.ok and v.plain_unexplained == 26
    v = verify(sample("mysql57/mixed_zlib_lz4.ibd"), server="mysql", kind="page", algorithm="lz4")
    assert not v.ok and "zlib" in v.message
    v = verify(sample("mariadb/p16k-pc_lzma.ibd"), server="mariadb", kind="page", algorithm="lzma")
    assert v.ok
    v = verify(sample("mariadb/p16k-pc_lzma.ibd"), server="mariadb", kind="page", algorithm="zlib")
    assert not v.ok  # every page and the flags say lzma
    assert verify(sample("mysql80/kbs8.ibd"), server="mysql", kind="row", key_block_size=8192).ok
    assert not verify(sample("mysql80/kbs8.ibd"), server="mysql", kind="none").ok
    assert verify(sample("mysql80/plain.ibd"), server="mysql", kind="none").ok


def test_a_file_that_lags_the_buffer_pool_is_recognised() -> None:
    """The catalog counts 200 pages (DATA_LENGTH + INDEX_LENGTH); the file holds 20."""
    from ibdtool.server.pagestate import PageState
    from ibdtool.server.table_info import SpaceInfo, TableInfo

    state = PageState("t.ibd", 5, 576, 16384, 16384, None, True, None, 576, data_pages=20)
    space = SpaceInfo(5, "db/t", 0x15, None, 16384, None, None, 4096, 9437184, 9437184, None)
    space.state = state
    t = TableInfo("db", "t", "InnoDB", "Dynamic", "", TableOptions("DYNAMIC"))
    t.spaces = [space]
    t.data_length, t.index_length = 150 * 16384, 50 * 16384
    assert t.unflushed() == (
        "only ~10% of the table's pages are on disk yet (the rest are in the buffer pool)"
    )
    state.data_pages = 190
    assert t.unflushed() is None
