"""The dialect contract: every registered server line answers all of it, and its rebuilds are
online or refused.

No server here (the live and migrate tests run the statements on real ones); the oracles are
the version strings real servers report (SERVERS.md) and the plan's rule that every rebuild
names its ALGORITHM and LOCK.
"""

from __future__ import annotations

import inspect

import pytest

from ibdtool.server.dialects import DIALECTS, Dialect, MariaDB, MySQL, Percona, parse_flavor
from ibdtool.server.steps import PlanSettings, Target
from ibdtool.server.tables import TableInfo, TableOptions
from parsers.vendor import Vendor

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
