"""Encrypted MariaDB tablespaces made by a real MariaDB 10.11 with file_key_management.

Two servers: full_crc32 (the default) with the plugin's default cipher (aes_cbc) and a plain key
file, and the classic format (``--innodb-checksum-algorithm=crc32``) with aes_ctr and a key file
encrypted by ``openssl enc`` under a filekey. Each makes ENCRYPTED=YES tables (plain,
PAGE_COMPRESSED=1, ROW_FORMAT=COMPRESSED) and their unencrypted twins with the same rows, and
two encrypted tables whose long values (20–60 KB) live on encrypted BLOB and ZBLOB pages; the
files are copied while FLUSH TABLES … FOR EXPORT holds them, with the rows SELECT returns.

Expected values come from the server (information_schema.INNODB_TABLESPACES_ENCRYPTION, the
plugin's cipher setting), from innochecksum, from the unencrypted twins, and SELECT (the rows
``records --keyring`` must return).
"""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ibdtool.parsers.codecs import CodecError
from ibdtool.parsers.envelope import read_envelope
from ibdtool.parsers.inflate import inflate
from ibdtool.parsers.keyring import read_keyring
from ibdtool.tablespace.reader import Tablespace
from samples import servers
from tests.cli_runner import cli_env, ibdtool_command, run_ibdtool
from tests.page_doc import index_header_fields, page_doc
from tests.server_fixtures import (
    FAST,
    _need,
    create_table_sql,
    json_lines,
    long_values,
    make_table,
    own_server,
    select_text,
)

pytestmark = pytest.mark.xdist_group("mariadb_crypt")

#: table -> (its options, its unencrypted twin)
TABLES = {
    "enc": ("ENCRYPTED=YES ENCRYPTION_KEY_ID=2", "twin"),
    "pc": ("ENCRYPTED=YES PAGE_COMPRESSED=1", "pctwin"),
    "zip": ("ENCRYPTED=YES ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8", "ziptwin"),
}
TWINS = {
    "twin": "",
    "pctwin": "PAGE_COMPRESSED=1",
    "ziptwin": "ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8",
}
#: encrypted tables with values stored off-page (BLOB pages; ZBLOB pages of a zip table)
LONG = {
    "enclong": "ENCRYPTED=YES",
    "ziplong": "ENCRYPTED=YES ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8",
}
SECRET = "correct horse battery staple"


@dataclass
class Made:
    """Copies of one server's tables and what the server said about them."""

    name: str
    dir: Path
    keys: Path  # the key file the server read (plain or encrypted)
    keyring_args: list[str]
    cipher: str
    checksum_algorithm: str
    files: dict[str, Path] = field(default_factory=dict)
    crypt: dict[str, dict[str, Any]] = field(default_factory=dict)  # INNODB_TABLESPACES_ENCRYPTION
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # SELECT, as text
    create: dict[str, str] = field(default_factory=dict)  # SHOW CREATE TABLE


def _key_lines() -> str:
    return "# made by the test\n1;" + secrets.token_hex(32) + "\n2;" + secrets.token_hex(16) + "\n"


@pytest.fixture(scope="module", params=["full_crc32-cbc", "crc32-ctr-filekey"])
def made(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Made]:
    _need("mariadb")
    name = request.param
    out = tmp_path_factory.mktemp(name)
    plain_keys = out / "keys.txt"
    plain_keys.write_text(_key_lines())
    if name.endswith("filekey"):
        keys = out / "keys.enc"
        subprocess.run(
            [
                "openssl",
                "enc",
                "-aes-256-cbc",
                "-md",
                "sha1",
                "-pass",
                f"pass:{SECRET}",
                "-in",
                str(plain_keys),
                "-out",
                str(keys),
            ],
            check=True,
            capture_output=True,
        )
        plugin = [
            f"--file-key-management-filename={keys}",
            f"--file-key-management-filekey={SECRET}",
        ]
        keyring_args = ["--keyring", str(keys), "--keyring-filekey", SECRET]
    else:
        keys = plain_keys
        plugin = [f"--file-key-management-filename={keys}"]
        keyring_args = ["--keyring", str(keys)]
    cipher = "aes_ctr" if "-ctr" in name else "aes_cbc"
    algo = "crc32" if name.startswith("crc32") else "full_crc32"
    run = [
        *FAST,
        "--innodb-doublewrite=0",
        "--plugin-load-add=file_key_management",
        *plugin,
        f"--file-key-management-encryption-algorithm={cipher}",
        f"--innodb-checksum-algorithm={algo}",
    ]
    m = Made(name, out, keys, keyring_args, cipher, algo)
    with own_server(servers.mariadb_server(run_options=run)) as srv:
        assert srv.query("SELECT @@file_key_management_encryption_algorithm")[0][0] == cipher
        for table, (opts, _) in TABLES.items():
            make_table(srv, "c", table, rows=700, options=opts)
        for table, opts in TWINS.items():
            make_table(srv, "c", table, rows=700, options=opts)
        for table, opts in LONG.items():
            make_table(srv, "c", table, rows=700, options=opts)
            assert long_values(srv, "c", table) == 14
        names = [*TABLES, *TWINS, *LONG]
        for t in names:
            m.create[t] = create_table_sql(srv, "c", t)
        with srv.connect() as conn, conn.cursor() as cur:
            cur.execute("FLUSH TABLES " + ", ".join(f"c.{t}" for t in names) + " FOR EXPORT")
            try:
                for t in names:
                    m.files[t] = Path(shutil.copy(srv.file_path("c", t), out / f"{t}.ibd"))
                    m.rows[t] = select_text(srv, "c", t)
            finally:
                cur.execute("UNLOCK TABLES")
        rows = srv.query(
            "SELECT NAME, ENCRYPTION_SCHEME, MIN_KEY_VERSION, CURRENT_KEY_ID "
            "FROM information_schema.INNODB_TABLESPACES_ENCRYPTION WHERE NAME LIKE 'c/%'"
        )
        for tname, scheme, min_version, key_id in rows:
            m.crypt[tname.split("/")[1]] = {
                "scheme": int(scheme),
                "min_key_version": int(min_version),
                "key_id": int(key_id),
            }
    yield m


def _inspect(path: Path, *extra: str) -> dict[str, Any]:
    r = run_ibdtool("inspect", "--json", str(path), *extra)
    assert r.returncode == 0, r.stderr
    return dict(json.loads(r.stdout))


def _innochecksum_ok(path: Path) -> bool:
    if shutil.which("innochecksum") is None:
        pytest.fail("innochecksum is needed (scripts/setup.sh --test)")
    return subprocess.run(["innochecksum", str(path)], capture_output=True).returncode == 0


@pytest.mark.parametrize("table", list(TABLES))
def test_checksum_with_and_without_the_key_agrees_with_innochecksum(made: Made, table: str) -> None:
    path = made.files[table]
    assert _innochecksum_ok(path)
    with_key = run_ibdtool("checksum", str(path), *made.keyring_args)
    assert with_key.returncode == 0, with_key.stdout + with_key.stderr
    # without the key the stored checksums are still verified: no false alarm
    without = run_ibdtool("checksum", str(path))
    assert without.returncode == 0, without.stdout + without.stderr


@pytest.mark.parametrize("table", list(TABLES))
def test_inspect_with_the_key_shows_the_twins_page_types(made: Made, table: str) -> None:
    doc = _inspect(made.files[table], *made.keyring_args)
    twin = _inspect(made.files[TABLES[table][1]])
    assert doc["page_types"] == twin["page_types"]
    assert "ENCRYPTED" not in doc["page_types"]
    assert doc["checksum"]["invalid"] == 0 and doc["checksum"]["unverifiable"] == 0
    assert doc["full_crc32"] is (made.checksum_algorithm == "full_crc32" and table != "zip")
    enc = doc["encryption"]
    assert enc["pages_encrypted"] > 0
    assert enc["pages_decrypted"] == enc["pages_encrypted"]
    assert enc["cipher"] == made.cipher
    server = made.crypt[table]
    assert (enc["scheme"], enc["key_id"], enc["min_key_version"]) == (
        server["scheme"],
        server["key_id"],
        server["min_key_version"],
    )
    assert enc["page_key_versions"] == {"min": 1, "max": 1}  # file_key_management: version 1
    assert twin["encryption"] is None
    if table == "zip":  # the same rows on as many leaf pages, rebuilt from their plaintext
        z, zt = doc["zip_fill"], twin["zip_fill"]
        assert z["rebuilt"] == z["leaf_pages"] == zt["leaf_pages"] > 0 and not z["failed"]
        assert (z["records"], z["records_fill"]) == (zt["records"], zt["records_fill"])
        assert z["image_fill"] == pytest.approx(zt["image_fill"], abs=0.02)
        assert _inspect(made.files[table])["zip_fill"]["rebuilt"] == 0  # no key: nothing to read


@pytest.mark.parametrize("table", list(TABLES))
def test_inspect_without_the_key_shows_crypt_data_and_encrypted_pages(
    made: Made, table: str
) -> None:
    doc = _inspect(made.files[table])
    enc = doc["encryption"]
    assert (enc["scheme"], enc["key_id"]) == (
        made.crypt[table]["scheme"],
        made.crypt[table]["key_id"],
    )
    assert len(bytes.fromhex(enc["iv"])) == 16
    assert enc["pages_decrypted"] == 0 and enc["decrypted_with"] is None
    assert doc["page_types"]["ENCRYPTED"] == enc["pages_encrypted"] > 0
    text = run_ibdtool("inspect", str(made.files[table]))
    assert text.returncode == 0 and f"key id {enc['key_id']}" in text.stdout


def test_pages_with_the_key_match_the_twin_row_by_row(made: Made) -> None:
    got = run_ibdtool("pages", "--json", str(made.files["enc"]), *made.keyring_args)
    twin = run_ibdtool("pages", "--json", str(made.files["twin"]))
    assert got.returncode == 0 and twin.returncode == 0, got.stderr + twin.stderr
    rows = [json.loads(line) for line in got.stdout.splitlines()]
    twin_rows = [json.loads(line) for line in twin.stdout.splitlines()]
    assert [(r["page"], r["type"], r["n_recs"]) for r in rows] == [
        (r["page"], r["type"], r["n_recs"]) for r in twin_rows
    ]


def test_a_wrong_key_is_one_line_and_exit_2(made: Made, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.txt"
    wrong.write_text(_key_lines())  # the same ids, other keys
    for table in TABLES:
        for command in ("checksum", "inspect", "pages"):
            r = run_ibdtool(command, str(made.files[table]), "--keyring", str(wrong))
            assert r.returncode == 2, (command, table, r.stdout, r.stderr)
            assert r.stdout == ""
            lines = r.stderr.splitlines()
            assert len(lines) == 1 and "wrong key" in lines[0], r.stderr


def test_a_missing_key_id_is_one_line_and_exit_2(made: Made, tmp_path: Path) -> None:
    only_one = tmp_path / "one.txt"
    only_one.write_text("1;" + secrets.token_hex(32) + "\n")
    r = run_ibdtool("checksum", str(made.files["enc"]), "--keyring", str(only_one))
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        f"ibdtool: error: {made.files['enc']}: key id 2 is not in the key file"
    ]


def test_a_damaged_encrypted_page_is_found_with_and_without_the_key(
    made: Made, tmp_path: Path
) -> None:
    for table in ("enc", "zip"):
        src = made.files[table]
        bad = tmp_path / f"{table}-bad.ibd"
        data = bytearray(src.read_bytes())
        doc = _inspect(src)
        psize = doc["physical_page_size"]
        page = 3  # the clustered index root: encrypted in every format
        data[page * psize + 200] ^= 0x40  # one bit of the ciphertext
        bad.write_bytes(bytes(data))
        assert not _innochecksum_ok(bad)
        for extra in ([], made.keyring_args):
            r = run_ibdtool("checksum", str(bad), *extra)
            assert r.returncode == 1, (table, extra, r.stdout, r.stderr)
            assert f"invalid pages: {page}" in r.stdout


def test_a_filekey_is_needed_exactly_for_an_encrypted_key_file(made: Made) -> None:
    target = str(made.files["enc"])
    if not made.name.endswith("filekey"):
        r = run_ibdtool("checksum", target, "--keyring", str(made.keys), "--keyring-filekey", "x")
        assert r.returncode == 2 and len(r.stderr.splitlines()) == 1
        assert "not encrypted" in r.stderr
        return
    r = run_ibdtool("checksum", target, "--keyring", str(made.keys))
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1
    assert "encrypted" in r.stderr
    r = run_ibdtool("checksum", target, "--keyring", str(made.keys), "--keyring-filekey", "nope")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1
    assert "wrong filekey" in r.stderr
    secret_file = made.dir / "secret"
    secret_file.write_text(SECRET + "\n")
    r = run_ibdtool(
        "checksum", target, "--keyring", str(made.keys), "--keyring-filekey", f"FILE:{secret_file}"
    )
    assert r.returncode == 0, r.stderr


def test_simulate_with_the_key_reads_the_plaintext(made: Made) -> None:
    got = run_ibdtool(
        "simulate", "--json", "-a", "mariadb:zlib", str(made.files["enc"]), *made.keyring_args
    )
    twin = run_ibdtool("simulate", "--json", "-a", "mariadb:zlib", str(made.files["twin"]))
    assert got.returncode == 0 and twin.returncode == 0, got.stderr + twin.stderr
    a = json.loads(got.stdout)["results"][0]["predicted_allocated"]
    b = json.loads(twin.stdout)["results"][0]["predicted_allocated"]
    # the same rows in the same page layout: only headers (LSNs, ids) differ
    assert abs(a - b) <= 0.02 * b


def _inflated_types(path: Path, keyring_for: Made | None) -> Counter[int]:
    """Page types inside the page_compressed images of ``path``, each decrypted (with the key
    of ``keyring_for``) and inflated by its envelope; without a key inflate must refuse."""
    keyring = None
    if keyring_for is not None:
        secret = SECRET if keyring_for.name.endswith("filekey") else None
        keyring = read_keyring(keyring_for.keys, secret)
    types: Counter[int] = Counter()
    with Tablespace(path, keyring) as ts:
        fmt, dec = ts.format, ts.decryptor
        for n in range(ts.n_pages):
            raw = ts.raw_page(n)
            env = read_envelope(raw, fmt)
            if not env.compressed:
                continue
            if env.encrypted:
                assert env.encrypted_range is not None and env.problem is None, n
                with pytest.raises(CodecError, match=r"encrypted.*key"):
                    inflate(raw, env, fmt.logical_size)
                assert dec is not None
                plain = dec.decrypt(raw, n)
                assert plain is not None, n
                env = read_envelope(plain, fmt)
                assert not env.encrypted and env.compressed and env.problem is None, n
                raw = plain
            page, _ = inflate(raw, env, fmt.logical_size)
            types[int.from_bytes(page[24:26], "big")] += 1
    return types


def test_inflate_needs_the_key_and_decrypted_images_inflate_like_the_twins(made: Made) -> None:
    """The envelope names the ciphertext of every page_compressed image (37401, or full_crc32
    with a key version); inflate refuses it without the key, and once decrypted the image is
    read by its own envelope and inflates to the pages of the unencrypted twin."""
    with Tablespace(made.files["pc"]) as ts:
        encrypted = [
            n
            for n in range(ts.n_pages)
            if (e := read_envelope(ts.raw_page(n), ts.format)).compressed and e.encrypted
        ]
    assert encrypted, "no encrypted page_compressed image to test"
    got = _inflated_types(made.files["pc"], made)
    assert sum(got.values()) >= len(encrypted)
    assert got == _inflated_types(made.files["pctwin"], None)


# --- records, page and the page map with the key --------------------------------------------


@pytest.mark.parametrize("table", [*TABLES, *LONG])
def test_records_with_the_key_are_the_rows_select_returns(made: Made, table: str) -> None:
    """Every row, long values read from encrypted BLOB/ZBLOB pages included, as the server
    returned it; and the unencrypted twin reads the same."""
    path = made.files[table]
    args = ["records", "--json", str(path), "--schema", made.create[table]]
    r = run_ibdtool(*args, *made.keyring_args)
    assert r.returncode == 0, r.stderr[-2000:]
    docs = json_lines(r.stdout)
    assert not [d for d in docs if "problem" in d or "errors" in d or "truncated" in d]
    assert [d["fields"] for d in docs] == made.rows[table]
    assert not any(d["deleted"] for d in docs) and len({d["page"] for d in docs}) > 1
    if table in LONG:
        assert max(len(d["fields"]["notes"]) for d in docs) > 40_000
        kinds = _inspect(path, *made.keyring_args)["page_types"]
        assert kinds.get("BLOB" if table == "enclong" else "ZBLOB", 0) > 0, kinds
    # without the key: one line, exit 2, nothing on stdout
    r = run_ibdtool(*args)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.splitlines() == [
        f"ibdtool: error: {path}: the tablespace is encrypted: give its key with --keyring"
    ]


def test_records_page_and_map_refuse_a_wrong_key(made: Made, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.txt"
    wrong.write_text(_key_lines())  # the same ids, other keys
    for table in ("enc", "ziplong"):
        path = str(made.files[table])
        for args in (
            ["records", path, "--schema", made.create[table]],
            ["page", path, "3"],
            ["page", path, "3", "--raw", "--logical"],
            ["inspect", "--map", path],
            ["inspect", path, "--map-by", "index", "--map"],
        ):
            r = run_ibdtool(*args, "--keyring", str(wrong))
            assert r.returncode == 2, (args, r.stdout, r.stderr)
            assert r.stdout == ""
            lines = r.stderr.splitlines()
            assert len(lines) == 1 and "wrong key" in lines[0], r.stderr


@pytest.mark.parametrize("table", list(TABLES))
def test_page_with_the_key_decodes_the_twins_page(made: Made, table: str) -> None:
    """Page 3, the clustered index root, decrypted: the twin's type and record counts; without
    the key it is ENCRYPTED. A zip page is shown rebuilt at the logical size."""
    path, twin = made.files[table], made.files[TABLES[table][1]]
    got = page_doc(path, 3, *made.keyring_args)
    want = page_doc(twin, 3)
    assert got["type"] == want["type"] == "INDEX"
    assert (
        index_header_fields(got) == index_header_fields(want) and len(index_header_fields(got)) == 4
    )
    assert got["problem"] is None and got["valid"] is True
    stored = bytes.fromhex(got["stored_hex"])
    assert stored == path.read_bytes()[3 * len(stored) : 4 * len(stored)]  # as the file holds it
    logical = bytes.fromhex(got["logical_hex"])
    assert len(logical) == 16384 and logical != stored
    assert logical[99:107] == b"infimum\x00"  # an uncompressed frame: rebuilt if it was zip
    raw = subprocess.run(
        ibdtool_command("page", path, "3", "--raw", "--logical", *made.keyring_args),
        capture_output=True,
        env=cli_env(),
    )
    assert raw.returncode == 0 and raw.stdout == logical
    assert page_doc(path, 3)["type"] == "ENCRYPTED"


def test_inspect_map_with_the_key_shows_the_twins_types(made: Made) -> None:
    for table in ("enc", "zip"):
        got = run_ibdtool("inspect", "--map", str(made.files[table]), *made.keyring_args)
        assert got.returncode == 0, got.stderr
        twin = _inspect(made.files[TABLES[table][1]])
        legend = " ".join(got.stdout.split())
        assert "ENCRYPTED" not in legend
        for name, n in twin["page_types"].items():
            assert f" {name} {n:,} " in legend + " ", (name, legend)
        without = run_ibdtool("inspect", "--map", str(made.files[table]))
        assert without.returncode == 0 and "ENCRYPTED" in without.stdout


def test_records_of_a_real_zblob_chain_made_to_loop(made: Made, tmp_path: Path) -> None:
    """A ZBLOB page of the real chain, its FIL_PAGE_NEXT (plaintext) turned to itself: that
    row's value is an error naming the page, every other row is still read as SELECT gave it."""
    src = made.files["ziplong"].read_bytes()
    phys = 8192
    looped = None
    for n in range(len(src) // phys):
        page = src[n * phys : (n + 1) * phys]
        if int.from_bytes(page[24:26], "big") in (11, 12) and page[12:16] != b"\xff" * 4:
            looped = n
            break
    assert looped is not None, "no ZBLOB page with a next page"
    data = bytearray(src)
    data[looped * phys + 12 : looped * phys + 16] = looped.to_bytes(4, "big")
    bad = tmp_path / "ziplong.ibd"
    bad.write_bytes(bytes(data))
    r = run_ibdtool(
        "records", "--json", str(bad), "--schema", made.create["ziplong"], *made.keyring_args
    )
    assert r.returncode == 0, r.stderr[-2000:]
    docs = json_lines(r.stdout)
    broken = [d for d in docs if "errors" in d]
    assert len(broken) == 1
    assert broken[0]["errors"] == {"notes": f"external chain loops at page {looped}"}
    want = {row["id"]: row for row in made.rows["ziplong"]}
    assert [d["fields"]["id"] for d in docs] == list(want)
    for d in docs:
        if d is not broken[0]:
            assert d["fields"] == want[d["fields"]["id"]]
