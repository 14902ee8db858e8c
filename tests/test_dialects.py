"""The dialect contract: every registered server line answers all of it, and its rebuilds are
online or refused.

No server here (the live and migrate tests run the statements on real ones); the oracles are
the version strings real servers report (SERVERS.md) and the plan's rule that every rebuild
names its ALGORITHM and LOCK.
"""

from __future__ import annotations

import inspect

import pytest

from ibdtool.parsers.vendor import Vendor
from ibdtool.server.dialects import DIALECTS, Dialect, MariaDB, MySQL, Percona, parse_flavor
from ibdtool.server.steps import PlanSettings, Target
from ibdtool.server.table_info import TableInfo, TableOptions

REPORTED = {  # VERSION(), @@version_comment
    MariaDB: ("10.11.6-MariaDB-0+deb12u1", "Debian 12"),
    MySQL: ("8.0.15", "MySQL Community Server - GPL"),
    Percona: ("8.0.36-28", "Percona Server (GPL), Release 28"),
}
TARGETS = [Target("page", "zlib"), Target("page", "zlib", 3), Target("row", key_block_size=8)]
TARGETS += [Target("none")]
OPTIONS = [
    TableOptions("DYNAMIC"),
    TableOptions("COMPRESSED", key_block_size=8),
    TableOptions("DYNAMIC", compression="lz4"),
    TableOptions("DYNAMIC", page_compressed=True),
]


def test_every_dialect_is_registered_and_detected() -> None:
    assert set(DIALECTS) == set(REPORTED)
    for line, (version, comment) in REPORTED.items():
        assert type(parse_flavor(version, comment)) is line


@pytest.mark.parametrize("line", DIALECTS, ids=lambda d: d.__name__)
def test_every_dialect_answers_the_contract(line: type[Dialect]) -> None:
    d = parse_flavor(*REPORTED[line])
    assert isinstance(d.name, Vendor) and d.name is not Vendor.UNKNOWN
    assert d.label.startswith(d.product)
    for name, member in inspect.getmembers(Dialect):
        if isinstance(member, property):
            getattr(d, name)  # raises NotImplementedError when a line forgot one
    assert d.page_codecs and "zlib" in d.page_codecs
    for codec in d.page_codecs:
        d.codec_plugin(codec), d.codec_status(codec)
    assert d.online(PlanSettings()) and d.online(PlanSettings(algorithm="copy"))


@pytest.mark.parametrize("line", DIALECTS, ids=lambda d: d.__name__)
@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.label)
def test_every_rebuild_names_its_algorithm_and_lock(line: type[Dialect], target: Target) -> None:
    d = parse_flavor(*REPORTED[line])
    for options in OPTIONS:
        table = TableInfo("db", "t", "InnoDB", options.row_format, "", options)
        for algorithm in ("inplace", "copy"):
            steps = d.rebuild_steps(table, target, PlanSettings(algorithm=algorithm), {})
            assert steps and steps[-1].kind == "rebuild"
            for step in steps:
                if step.kind == "rebuild" and "ALTER TABLE" in step.sql:
                    assert "ALGORITHM=" in step.sql and "LOCK=" in step.sql, step.sql


# --- the SQL that differs lives in the dialects -----------------------------------------------

# what only some server lines (or versions) have: none of it may be in ibdtool.server.sql
VENDOR_SPECIFIC = (
    "INNODB_SYS_", "INNODB_TABLESPACES", "INNODB_DATAFILES", "INNODB_INDEXES", "INNODB_TABLES",
    "INNODB_BUFFER_PAGE", "SLAVE", "REPLICA", "TIME_MS", "MAX_STAGE", "FILENAME",
)  # fmt: skip


def test_sql_module_holds_only_vendor_neutral_statements() -> None:
    from ibdtool.server import sql

    public = {k: v for k, v in vars(sql).items() if not k.startswith("__")}
    assert not [k for k, v in public.items() if isinstance(v, dict)]  # no per-flavor tables
    texts = [v for v in public.values() if isinstance(v, str)]
    assert len(texts) > 20
    for text in texts:
        for word in VENDOR_SPECIFIC:
            assert word not in text.upper(), (word, text)


def _queries(d: Dialect) -> dict[str, tuple[str, int]]:
    """Each query of the dialect and the parameters it takes."""
    return {
        "tablespaces": (d.tablespaces_query, 0),
        "tablespace_by_name": (d.tablespace_by_name_query, 1),
        "indexes_of_space": (d.indexes_of_space_query, 1),
        "innodb_tables": (d.innodb_tables_query, 0),
        "process": (d.process_query, 1),
        "dirty_pages(3)": (d.dirty_pages_query(3), 3),
        "replica_hosts": (d.replica_hosts_query, 0),
        "replica_status": (d.replica_status_query, 0),
    }


@pytest.mark.parametrize("line", DIALECTS, ids=lambda d: d.__name__)
def test_every_dialect_query_is_tagged_and_takes_its_parameters(line: type[Dialect]) -> None:
    from ibdtool.server.sql import TAG

    d = parse_flavor(*REPORTED[line])
    for name, (text, params) in _queries(d).items():
        assert text.startswith(TAG), name
        assert text.count("%s") == params, (name, text)
        # PyMySQL %-formats only statements given parameters: a lone % would break those
        assert "%" not in text.replace("%s", "") or params == 0, (name, text)


# (VERSION(), @@version_comment) → the statements the server's manual gives for that release
REPLICATION = [
    # MySQL 8.0.22 renamed SHOW SLAVE HOSTS/STATUS (and the Slave/Master columns)
    (("5.7.22", "MySQL Community Server (GPL)"), "SHOW SLAVE HOSTS", "SHOW SLAVE STATUS",
     ("Slave_SQL_Running", "Seconds_Behind_Master")),
    (("8.0.15", "MySQL Community Server - GPL"), "SHOW SLAVE HOSTS", "SHOW SLAVE STATUS",
     ("Slave_SQL_Running", "Seconds_Behind_Master")),
    (("8.0.21", "MySQL Community Server - GPL"), "SHOW SLAVE HOSTS", "SHOW SLAVE STATUS",
     ("Slave_SQL_Running", "Seconds_Behind_Master")),
    (("8.0.22", "MySQL Community Server - GPL"), "SHOW REPLICAS", "SHOW REPLICA STATUS",
     ("Replica_SQL_Running", "Seconds_Behind_Source")),
    (("8.0.33", "MySQL Community Server - GPL"), "SHOW REPLICAS", "SHOW REPLICA STATUS",
     ("Replica_SQL_Running", "Seconds_Behind_Source")),
    (("8.0.36-28", "Percona Server (GPL), Release 28"), "SHOW REPLICAS", "SHOW REPLICA STATUS",
     ("Replica_SQL_Running", "Seconds_Behind_Source")),
    # MariaDB 10.5.1 added the REPLICA synonyms and kept the columns' names
    (("5.5.5-10.4.34-MariaDB", ""), "SHOW SLAVE HOSTS", "SHOW SLAVE STATUS",
     ("Slave_SQL_Running", "Seconds_Behind_Master")),
    (("10.5.1-MariaDB", ""), "SHOW REPLICA HOSTS", "SHOW REPLICA STATUS",
     ("Slave_SQL_Running", "Seconds_Behind_Master")),
    (("10.11.6-MariaDB-0+deb12u1", "Debian 12"), "SHOW REPLICA HOSTS", "SHOW REPLICA STATUS",
     ("Slave_SQL_Running", "Seconds_Behind_Master")),
]  # fmt: skip


@pytest.mark.parametrize(("reported", "hosts", "status", "columns"), REPLICATION)
def test_replication_statements_follow_the_version(
    reported: tuple[str, str], hosts: str, status: str, columns: tuple[str, str]
) -> None:
    from ibdtool.server.sql import TAG

    d = parse_flavor(*reported)
    assert d.replica_hosts_query == f"{TAG} {hosts}"
    assert d.replica_status_query == f"{TAG} {status}"
    assert d.replica_status_columns == columns


# (VERSION(), @@version_comment) → the catalog tables that release has
CATALOGS = [
    (("5.7.22", "MySQL Community Server (GPL)"), "INNODB_SYS_TABLESPACES", "INNODB_SYS_DATAFILES"),
    (("8.0.15", "MySQL Community Server - GPL"), "INNODB_TABLESPACES", "INNODB_DATAFILES"),
    (("5.5.5-10.4.34-MariaDB", ""), "INNODB_SYS_TABLESPACES", "INNODB_SYS_DATAFILES"),
    (("10.11.6-MariaDB-0+deb12u1", "Debian 12"), "INNODB_SYS_TABLESPACES", "ts.FILENAME"),
]


@pytest.mark.parametrize(("reported", "spaces", "files"), CATALOGS)
def test_catalog_queries_follow_the_version(
    reported: tuple[str, str], spaces: str, files: str
) -> None:
    d = parse_flavor(*reported)
    assert f"information_schema.{spaces} ts" in d.tablespaces_query
    assert files in d.tablespaces_query
    sys_tables = "INNODB_SYS_" in spaces
    assert ("INNODB_SYS_INDEXES" in d.indexes_of_space_query) == sys_tables
    assert ("INNODB_SYS_TABLES" in d.innodb_tables_query) == sys_tables


def test_mariadb_counts_only_real_lsns_as_dirty() -> None:
    """10.5.7+ keeps written pages on the flush list with OLDEST_MODIFICATION = 1 (clean)."""
    assert "OLDEST_MODIFICATION > 1" in parse_flavor("10.11.6-MariaDB").dirty_pages_query(1)
    assert "OLDEST_MODIFICATION > 0" in parse_flavor("5.5.5-10.4.34-MariaDB").dirty_pages_query(1)
    assert "OLDEST_MODIFICATION > 0" in parse_flavor("8.0.15").dirty_pages_query(1)


@pytest.mark.parametrize(
    ("reported", "as_written"),
    [
        (("8.0.15", "MySQL Community Server - GPL"), True),  # the data dictionary
        (("8.0.36-28", "Percona Server (GPL), Release 28"), True),
        (("5.7.22", "MySQL Community Server (GPL)"), False),  # filename-encoded, #P#
        (("10.11.6-MariaDB-0+deb12u1", "Debian 12"), False),
    ],
)
def test_catalog_names_follow_the_dictionary(reported: tuple[str, str], as_written: bool) -> None:
    assert parse_flavor(*reported).names_as_written is as_written


def test_partition_file_separator_changed_in_8_0_17() -> None:
    """8.0.15 writes ``T#P#Pa``, 8.0.33 ``T#p#pa`` (tests/test_names_live.py reads both)."""
    seps = {
        v: parse_flavor(v).partition_separator for v in ("5.7.22", "8.0.15", "8.0.17", "8.0.33")
    }
    assert seps == {"5.7.22": "#P#", "8.0.15": "#P#", "8.0.17": "#p#", "8.0.33": "#p#"}
    assert parse_flavor("11.4.5-MariaDB").partition_separator == "#P#"
