"""Every corpus file's label (server, version, kind, row format) agrees with CATALOG.md's origin.

The catalog's "Server / version" column was written from the source repositories (README, folder
names, ``*_upgrade_info`` files, the SDI's ``mysqld_version_id``), not from ibdtool; its file
names tell the FTS auxiliary tables and system tablespaces, its notes the row formats the
repositories made. A label may leave MySQL 5.x and MariaDB undecided ("MySQL 5.x or MariaDB
classic") but never names the wrong server, version or kind.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ibdtool.parsers.identity import FTS_NAME
from ibdtool.tablespace.inspect import InspectResult, inspect_path
from tests.catalog import CatalogEntry, load_catalog
from tests.conftest import require_corpus

require_corpus()
TABLESPACES = [e for e in load_catalog() if set(e.checksums or ()) != {"zero"}]
_RESULTS: dict[str, InspectResult] = {}


def _inspect(e: CatalogEntry) -> InspectResult:
    if e.rel not in _RESULTS:
        _RESULTS[e.rel] = inspect_path(e.path, jobs=1)
    return _RESULTS[e.rel]


def _versions(text: str) -> list[str]:
    return re.findall(r"\d+\.\d+(?:\.\d+)?", text)


@pytest.mark.parametrize("entry", TABLESPACES, ids=lambda e: e.rel)
def test_label_names_the_catalogs_server(entry: CatalogEntry) -> None:
    r = _inspect(entry)
    label, vendor = r.label, r.vendor.value
    origin = entry.origin.replace("<=", "")
    assert origin, f"{entry.rel}: the catalog gives no origin"
    mariadb = origin.split()[0] == "MariaDB"
    assert ("MariaDB" if mariadb else "MySQL") in label, (label, origin)
    assert vendor != ("mysql" if mariadb else "mariadb"), (label, origin)
    if vendor == "unknown":
        assert "MySQL 5.x or MariaDB" in label
    versions = _versions(origin)
    if mariadb:
        if "10.4+" in label:
            assert tuple(map(int, versions[0].split(".")[:2])) >= (10, 4), (label, origin)
        return
    major = versions[0].split(".")[0]
    assert f"MySQL {major}" in label, (label, origin)
    if int(major) >= 8:
        said = re.search(r"\((\d+\.\d+\.\d+)\)", label)
        assert said, label
        # the version written on page 0 is one the origin names (8.0 → any 8.0.x)
        assert any(said[1] == v or said[1].startswith(v + ".") for v in versions), (label, origin)
    else:
        assert "MySQL 8" not in label and "MySQL 9" not in label


@pytest.mark.parametrize("entry", TABLESPACES, ids=lambda e: e.rel)
def test_kind_follows_the_catalogs_file_name(entry: CatalogEntry) -> None:
    name = Path(entry.rel).name
    kind = _inspect(entry).kind
    if name.startswith("ibdata1"):
        assert kind == "system"
    elif FTS_NAME.fullmatch(name.removesuffix(".ibd")):
        assert kind == "fts" and "full-text index auxiliary table" in _inspect(entry).label
    else:
        assert kind == "table"


#: files whose repository says their row format (CATALOG.md notes and folder names)
_DECLARED = {
    "innodb_ruby/sakila/compact/": "COMPACT",
    "innodb_ruby/sakila/redundant/": "REDUNDANT",
    "innodb-java-reader/mysql56/simple/tb_redundant_format.ibd": "REDUNDANT",
}


def test_redundant_and_compact_told_apart_as_the_repositories_say() -> None:
    checked = 0
    for e in TABLESPACES:
        want = next((rf for prefix, rf in _DECLARED.items() if e.rel.startswith(prefix)), None)
        if want is None:
            continue
        assert want in e.origin or "redundant" in e.rel, e.rel  # the catalog says it too
        assert _inspect(e).row_format == want, e.rel
        checked += 1
    assert checked == 5


def test_row_format_from_pages_agrees_with_the_sdi() -> None:
    """Two readings of one file: the SDI's JSON and the index pages' compact bit."""
    checked = 0
    for e in TABLESPACES:
        r = _inspect(e)
        if r.sdi is None or r.sdi.row_format is None:
            continue  # no SDI (MySQL 5.x, MariaDB) or an encrypted one
        if r.redundant_pages:
            assert r.sdi.row_format == "REDUNDANT", e.rel
        else:
            assert r.compact_pages and r.sdi.row_format in ("COMPACT", "DYNAMIC", "COMPRESSED")
        assert r.row_format == r.sdi.row_format, e.rel
        checked += 1
    assert checked >= 40
