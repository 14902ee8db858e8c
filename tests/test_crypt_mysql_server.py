"""Encrypted tablespaces made by a real MySQL 8.0.33 with the keyring_file plugin.

ENCRYPTION='Y' tables (plain, COMPRESSION='zlib' — type-16 pages — and ROW_FORMAT=COMPRESSED)
and their unencrypted twins, copied with the .cfp files FLUSH TABLES … FOR EXPORT writes, and
two encrypted tables whose long values (20–60 KB) live on encrypted LOB and ZBLOB pages.
Expected values come from the server (its keyring file, its .cfp files, information_schema, the
rows SELECT returns) and from the twins.
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
from tests.page_doc import index_header_fields, page_doc
from tests.server_fixtures import (
    FAST,
    _need,
    json_lines,
    long_values,
    make_table,
    own_server,
    select_text,
)

pytestmark = pytest.mark.xdist_group("mysql8033_crypt")

VERSION = "8.0.33"
TABLES = {
    "enc": ("ENCRYPTION='Y'", "twin"),
    "comp": ("ENCRYPTION='Y' COMPRESSION='zlib'", "comptwin"),
    "zip": ("ENCRYPTION='Y' ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8", "ziptwin"),
}
#: encrypted tables with values stored off-page (LOB pages; ZLOB pages of a zip table)
LONG = {
    "enclong": "ENCRYPTION='Y'",
    "ziplong": "ENCRYPTION='Y' ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8",
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
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # SELECT, as text


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
    with own_server(servers.mysql_server(VERSION, run_options=run)) as srv:
        m = Made(keyring, str(srv.query("SELECT @@server_uuid")[0][0]))
        for table, (opts, _) in TABLES.items():
            make_table(srv, "c", table, rows=700, options=opts)
        for table, opts in TWINS.items():
            make_table(srv, "c", table, rows=700, options=opts)
        for table, opts in LONG.items():
            make_table(srv, "c", table, rows=700, options=opts)
            assert long_values(srv, "c", table) == 14
        names = [*TABLES, *TWINS, *LONG]
        with srv.connect() as conn, conn.cursor() as cur:
            cur.execute("FLUSH TABLES " + ", ".join(f"c.{t}" for t in names) + " FOR EXPORT")
            try:
                for t in names:
                    src = Path(srv.file_path("c", t))
                    m.files[t] = Path(shutil.copy(src, out / f"{t}.ibd"))
                    m.rows[t] = select_text(srv, "c", t)
                    if t not in TWINS:  # kept apart: a .cfp beside the .ibd is used by itself
                        keys = out / "cfp"
                        keys.mkdir(exist_ok=True)
                        m.cfp[t] = Path(shutil.copy(src.with_suffix(".cfp"), keys / f"{t}.cfp"))
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
    if table == "zip":  # the same rows on as many leaf pages, rebuilt from their plaintext
        z, zt = doc["zip_fill"], twin["zip_fill"]
        assert z["rebuilt"] == z["leaf_pages"] == zt["leaf_pages"] > 0 and not z["failed"]
        assert (z["records"], z["records_fill"]) == (zt["records"], zt["records_fill"])
        assert z["image_fill"] == pytest.approx(zt["image_fill"], abs=0.02)


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


@pytest.mark.parametrize("table", [*TABLES, *LONG])
@pytest.mark.parametrize("key", ["keyring", "cfp"])
def test_records_with_the_key_are_the_rows_select_returns(made: Made, table: str, key: str) -> None:
    """Columns from the encrypted SDI, rows (long values on encrypted LOB/ZBLOB pages) as the
    server returned them; without the key, one line."""
    keyfile = made.keyring if key == "keyring" else made.cfp[table]
    path = made.files[table]
    r = run_ibdtool("records", "--json", str(path), "--keyring", str(keyfile))
    assert r.returncode == 0, r.stderr[-2000:]
    docs = json_lines(r.stdout)
    assert not [d for d in docs if "problem" in d or "errors" in d or "truncated" in d]
    assert [d["fields"] for d in docs] == made.rows[table]
    assert not any(d["deleted"] for d in docs) and len({d["page"] for d in docs}) > 1
    if table in LONG:
        assert max(len(d["fields"]["notes"]) for d in docs) > 40_000
        kinds = _inspect(path, "--keyring", str(keyfile))["page_types"]
        # 8.0.33 keeps a zip table's long values on ZBLOB/ZBLOB2 pages, the others on LOB pages
        assert kinds.get("LOB_FIRST" if table == "enclong" else "ZBLOB", 0) > 0, str(kinds)
    r = run_ibdtool("records", str(path))
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.splitlines()) == 1
    assert "encrypted" in r.stderr and "keyring" in r.stderr


def test_records_page_and_map_refuse_another_tables_key(made: Made) -> None:
    for args in (
        ["records", str(made.files["enc"])],
        ["page", str(made.files["enc"]), "3"],
        ["inspect", "--map", str(made.files["enc"])],
    ):
        r = run_ibdtool(*args, "--keyring", str(made.cfp["zip"]))
        assert r.returncode == 2 and r.stdout == "", (args, r.stderr)
        lines = r.stderr.splitlines()
        assert len(lines) == 1 and "wrong key" in lines[0]


@pytest.mark.parametrize("table", list(TABLES))
def test_page_with_the_key_decodes_the_twins_page(made: Made, table: str) -> None:
    got = page_doc(made.files[table], 4, "--keyring", str(made.keyring))
    want = page_doc(made.files[TABLES[table][1]], 4)
    assert got["type"] == want["type"] == "INDEX" and got["valid"] is True
    assert index_header_fields(got) == index_header_fields(want)
    assert len(index_header_fields(got)) == 4
    logical = bytes.fromhex(got["logical_hex"])
    assert len(logical) == 16384 and logical[99:107] == b"infimum\x00"
    assert page_doc(made.files[table], 4)["type"] == "ENCRYPTED"


def test_inspect_map_with_the_key_shows_the_twins_types(made: Made) -> None:
    for table in ("enc", "comp", "zip"):
        got = run_ibdtool(
            "inspect", "--map", str(made.files[table]), "--keyring", str(made.keyring)
        )
        assert got.returncode == 0, got.stderr
        legend = " ".join(got.stdout.split()) + " "
        assert "ENCRYPTED" not in legend
        for name, n in _inspect(made.files[TABLES[table][1]])["page_types"].items():
            assert f" {name} {n:,} " in legend, (table, name, legend)


@pytest.mark.parametrize("table", ["enc", "zip"])
def test_a_cfp_beside_the_ibd_is_used_without_keyring(
    made: Made, table: str, tmp_path: Path
) -> None:
    """As FLUSH TABLES … FOR EXPORT leaves them: ``t.ibd`` and ``t.cfp`` side by side."""
    path = Path(shutil.copy(made.files[table], tmp_path / f"{table}.ibd"))
    shutil.copy(made.cfp[table], tmp_path / f"{table}.cfp")
    r = run_ibdtool("records", "--json", str(path))
    assert r.returncode == 0, r.stderr[-2000:]
    assert [d["fields"] for d in json_lines(r.stdout)] == made.rows[table]
    doc = _inspect(path)
    assert doc["encryption"]["decrypted_with"] == ".cfp"
    assert doc["encryption"]["pages_decrypted"] == doc["encryption"]["pages_encrypted"] > 0
    # another table's .cfp beside it is a wrong key: one line, exit 2
    other = "zip" if table == "enc" else "enc"
    shutil.copy(made.cfp[other], tmp_path / f"{table}.cfp")
    r = run_ibdtool("records", str(path))
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.splitlines()) == 1
    assert "wrong key" in r.stderr and ".cfp" in r.stderr
