"""Encrypted tablespaces made by a real MySQL 8.0.33 with the keyring_file plugin.

ENCRYPTION='Y' tables (plain, COMPRESSION='zlib' — type-16 pages — and ROW_FORMAT=COMPRESSED)
and their unencrypted twins, copied with the .cfp files FLUSH TABLES … FOR EXPORT writes.
Expected values come from the server (its keyring file, its .cfp files, information_schema)
and from the twins.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from samples import servers
from tests.cli_runner import run_ibdtool
from tests.server_fixtures import FAST, _need, make_table

pytestmark = pytest.mark.xdist_group("mysql8033_crypt")

VERSION = "8.0.33"
TABLES = {
    "enc": ("ENCRYPTION='Y'", "twin"),
    "comp": ("ENCRYPTION='Y' COMPRESSION='zlib'", "comptwin"),
    "zip": ("ENCRYPTION='Y' ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8", "ziptwin"),
}
TWINS = {
    "twin": "",
    "comptwin": "COMPRESSION='zlib'",
    "ziptwin": "ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8",
}


@dataclass
class Made:
    keyring: Path
    server_uuid: str
    files: dict[str, Path] = field(default_factory=dict)
    cfp: dict[str, Path] = field(default_factory=dict)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Made]:
    _need("mysql", VERSION)
    out = tmp_path_factory.mktemp("mysql-crypt")
    base = servers.mysql_basedir(VERSION)
    keyring = out / "keyring"
    run = [
        *FAST,
        "--innodb-doublewrite=0",
        "--early-plugin-load=keyring_file.so",
        f"--keyring-file-data={keyring}",
        f"--plugin-dir={base / 'lib' / 'plugin'}",
    ]
    with servers.mysql_server(VERSION, run_options=run) as srv:
        m = Made(keyring, str(srv.query("SELECT @@server_uuid")[0][0]))
        for table, (opts, _) in TABLES.items():
            make_table(srv, "c", table, rows=700, options=opts)
        for table, opts in TWINS.items():
            make_table(srv, "c", table, rows=700, options=opts)
        names = [*TABLES, *TWINS]
        with srv.connect() as conn, conn.cursor() as cur:
            cur.execute("FLUSH TABLES " + ", ".join(f"c.{t}" for t in names) + " FOR EXPORT")
            try:
                for t in names:
                    src = Path(srv.file_path("c", t))
                    m.files[t] = Path(shutil.copy(src, out / f"{t}.ibd"))
                    if t in TABLES:
                        m.cfp[t] = Path(shutil.copy(src.with_suffix(".cfp"), out / f"{t}.cfp"))
            finally:
                cur.execute("UNLOCK TABLES")
    yield m


def _inspect(path: Path, *extra: str) -> dict[str, Any]:
    r = run_ibdtool("inspect", "--json", str(path), *extra)
    assert r.returncode == 0, r.stderr
    return dict(json.loads(r.stdout))


@pytest.mark.parametrize("table", list(TABLES))
@pytest.mark.parametrize("key", ["keyring", "cfp"])
def test_checksum_and_types_with_the_keyring_or_the_cfp(made: Made, table: str, key: str) -> None:
    keyfile = made.keyring if key == "keyring" else made.cfp[table]
    r = run_ibdtool("checksum", str(made.files[table]), "--keyring", str(keyfile))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "unverifiable" not in r.stdout
    doc = _inspect(made.files[table], "--keyring", str(keyfile))
    twin = _inspect(made.files[TABLES[table][1]])
    assert doc["page_types"] == twin["page_types"]
    assert doc["compression"] == twin["compression"]  # type-16 pages decompress as zlib
    enc = doc["encryption"]
    assert enc["pages_decrypted"] == enc["pages_encrypted"] > 0
    assert enc["decrypted_with"] == (".cfp" if key == "cfp" else "keyring")
    assert doc["sdi"]["table"] == table


@pytest.mark.parametrize("table", list(TABLES))
def test_without_a_key_page_0_names_the_servers_master_key(made: Made, table: str) -> None:
    doc = _inspect(made.files[table])
    enc = doc["encryption"]
    assert enc["server_uuid"] == made.server_uuid
    assert enc["master_key"] == f"INNODBKey-{made.server_uuid}-{enc['master_key_id']}"
    assert enc["magic"] == "lCC" and enc["pages_decrypted"] == 0
    assert doc["page_types"]["ENCRYPTED"] == enc["pages_encrypted"]
    r = run_ibdtool("checksum", str(made.files[table]))
    assert r.returncode == 0 and "unverifiable" in r.stdout


def test_another_tables_cfp_is_a_wrong_key(made: Made) -> None:
    r = run_ibdtool("checksum", str(made.files["enc"]), "--keyring", str(made.cfp["zip"]))
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "wrong key" in lines[0]
