"""Encrypted MySQL tablespaces of the corpus (Percona Server 8.0, keyring_file v2.0).

The corpus holds four encrypted files and the keyring_file their master key is in
(CATALOG.md, percona-parser). Expected values: CATALOG.md's tallies (the ENCRYPTED pages whose
stored checksum did not match), the server's own checksums of the plaintext pages, and the
unencrypted version of the ROW_FORMAT=COMPRESSED table (same table, other commit).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from ibdtool.parsers.keyring import (
    CFP_FILE,
    MYSQL_KEY_RECORD,
    MYSQL_OBFUSCATION,
    parse_mysql_keyring,
    read_keyring,
)
from tests.catalog import load_catalog
from tests.cli_runner import run_ibdtool
from tests.conftest import corpus_file

KEYRING = "percona-parser/tests/keyring_test"
MASTER = "INNODBKey-0ca67a48-5da5-11f0-b0fe-bc24111003dd-1"
ENCRYPTED = [
    "percona-parser/encrypted_test.ibd",
    "percona-parser/tests/encrypted_test.ibd",
    "percona-parser/6c30595/test_compressed_compressed.ibd",
    "percona-parser/tests/test_with_data.ibd",
]


def _catalog(rel: str) -> Any:
    entries = {e.rel: e for e in load_catalog()}
    assert rel in entries, f"{rel} is not in CATALOG.md"
    return entries[rel]


def _inspect(path: Path, *extra: str) -> dict[str, Any]:
    r = run_ibdtool("inspect", "--json", str(path), *extra)
    assert r.returncode == 0, r.stderr
    return dict(json.loads(r.stdout))


def _keyring_file(path: Path, keys: dict[str, bytes], version: str = "2.0") -> Path:
    """Write a keyring_file as the plugin does (records, EOF, SHA-256 of the records)."""
    body = b""
    for name, key in keys.items():
        mask = MYSQL_OBFUSCATION * (len(key) // len(MYSQL_OBFUSCATION) + 1)
        stored = bytes(a ^ b for a, b in zip(key, mask, strict=False))
        used = 40 + len(name) + 3 + len(stored)
        pad = (8 - used % 8) % 8
        body += MYSQL_KEY_RECORD.build(
            {
                "pod_size": used + pad,
                "key_id_len": len(name),
                "key_type_len": 3,
                "user_id_len": 0,
                "key_len": len(stored),
                "key_id": name.encode(),
                "key_type": b"AES",
                "user_id": b"",
                "key": stored,
                "padding": bytes(pad),
            }
        )
    tail = b"EOF" + (hashlib.sha256(body).digest() if version == "2.0" else b"")
    path.write_bytes(f"Keyring file version:{version}".encode() + body + tail)
    return path


def test_the_corpus_keyring_holds_the_master_key_catalog_names() -> None:
    keyring = read_keyring(corpus_file(KEYRING))
    assert keyring.kind == "mysql"
    assert list(keyring.mysql) == [MASTER]
    assert len(keyring.mysql[MASTER]) == 32


def test_a_rewritten_keyring_reads_back_in_both_versions(tmp_path: Path) -> None:
    original = read_keyring(corpus_file(KEYRING)).mysql
    # the plugin's own bytes, rebuilt from the parsed keys, are byte-identical
    rebuilt = _keyring_file(tmp_path / "k2", original)
    assert rebuilt.read_bytes() == corpus_file(KEYRING).read_bytes()
    v1 = _keyring_file(tmp_path / "k1", original, version="1.0")
    assert read_keyring(v1).mysql == original


@pytest.mark.parametrize("rel", ENCRYPTED)
def test_every_encrypted_page_verifies_after_decryption(rel: str) -> None:
    entry = _catalog(rel)
    path = corpus_file(rel)
    plain = _inspect(path)
    assert plain["encryption"]["master_key"] == MASTER
    assert plain["page_types"].get("ENCRYPTED") == entry.page_types["ENCRYPTED"]
    doc = _inspect(path, "--keyring", str(corpus_file(KEYRING)))
    enc = doc["encryption"]
    assert enc["pages_encrypted"] == enc["pages_decrypted"] == entry.page_types["ENCRYPTED"]
    assert "ENCRYPTED" not in doc["page_types"]
    assert sum(doc["page_types"].values()) == sum(entry.page_types.values())
    # the pages CATALOG.md could not verify ("nomatch") now verify by their own checksum
    assert doc["checksum"]["invalid"] == 0
    assert doc["checksum"]["valid"] == entry.checksums["crc32"] + entry.checksums["nomatch"]
    assert doc["sdi"] and doc["sdi"]["table"]  # the SDI is read from decrypted pages
    r = run_ibdtool("checksum", str(path), "--keyring", str(corpus_file(KEYRING)))
    assert r.returncode == 0, r.stdout + r.stderr


def test_decrypted_zip_table_has_the_types_of_its_unencrypted_version() -> None:
    doc = _inspect(
        corpus_file("percona-parser/6c30595/test_compressed_compressed.ibd"),
        "--keyring",
        str(corpus_file(KEYRING)),
    )
    twin = _catalog("percona-parser/6501406/test_compressed_compressed.ibd")
    assert doc["page_types"] == twin.page_types
    assert doc["row_format"] == "COMPRESSED" and doc["key_block_size"] == 8192


def test_sdi_of_an_encrypted_table_needs_the_key() -> None:
    path = corpus_file("percona-parser/tests/encrypted_test.ibd")
    r = run_ibdtool("sdi", str(path))
    assert r.returncode == 2 and "keyring" in r.stderr
    r = run_ibdtool("sdi", str(path), "--keyring", str(corpus_file(KEYRING)))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)[0] == "ibd2sdi"


def test_a_wrong_master_key_is_one_line_and_exit_2(tmp_path: Path) -> None:
    wrong = _keyring_file(tmp_path / "wrong", {MASTER: os.urandom(32)})
    path = corpus_file(ENCRYPTED[0])
    for command in ("inspect", "checksum", "pages"):
        r = run_ibdtool(command, str(path), "--keyring", str(wrong))
        assert r.returncode == 2 and r.stdout == ""
        assert len(r.stderr.splitlines()) == 1 and "wrong key" in r.stderr, r.stderr


def test_a_keyring_without_the_master_key_names_it(tmp_path: Path) -> None:
    other = _keyring_file(tmp_path / "other", {"INNODBKey-someone-else-1": os.urandom(32)})
    path = corpus_file(ENCRYPTED[0])
    r = run_ibdtool("checksum", str(path), "--keyring", str(other))
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        f"ibdtool: error: {path}: master key {MASTER} is not in the keyring"
    ]


def test_a_cfp_transfer_key_opens_the_table_without_a_keyring(tmp_path: Path) -> None:
    """A .cfp as FLUSH TABLES … FOR EXPORT writes it: the tablespace key and IV under a
    random transfer key (made here from the key page 0 wraps)."""
    from ibdtool.parsers.crypt import unwrap_mysql_key
    from ibdtool.parsers.cryptinfo import read_mysql_info
    from ibdtool.parsers.space import encryption_info_offset

    path = corpus_file(ENCRYPTED[1])
    page0 = path.read_bytes()[:16384]
    info = read_mysql_info(page0, encryption_info_offset(16384, 16384))
    assert info is not None
    key, iv = unwrap_mysql_key(info, read_keyring(corpus_file(KEYRING)).mysql[MASTER])
    transfer = os.urandom(32)
    enc = Cipher(algorithms.AES(transfer), modes.ECB()).encryptor()
    cfp = tmp_path / "t.cfp"
    cfp.write_bytes(
        CFP_FILE.build(
            {
                "transfer_key": transfer,
                "encrypted_key": enc.update(key),
                "encrypted_iv": enc.update(iv),
            }
        )
    )
    r = run_ibdtool("checksum", str(path), "--keyring", str(cfp))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 invalid" in r.stdout and "unverifiable" not in r.stdout
    # a .cfp of another table: its key is not the one page 0 holds
    bad = tmp_path / "bad.cfp"
    bad.write_bytes(
        CFP_FILE.build(
            {
                "transfer_key": transfer,
                "encrypted_key": os.urandom(32),
                "encrypted_iv": os.urandom(32),
            }
        )
    )
    r = run_ibdtool("checksum", str(path), "--keyring", str(bad))
    assert r.returncode == 2 and "wrong key" in r.stderr and len(r.stderr.splitlines()) == 1


def test_a_damaged_keyring_file_is_one_line(tmp_path: Path) -> None:
    data = bytearray(corpus_file(KEYRING).read_bytes())
    data[100] ^= 1  # inside the key records: the digest no longer matches
    bad = tmp_path / "bad"
    bad.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="digest"):
        parse_mysql_keyring(bytes(data))
    r = run_ibdtool("checksum", str(corpus_file(ENCRYPTED[0])), "--keyring", str(bad))
    assert r.returncode == 2 and r.stderr.splitlines() == [
        f"ibdtool: error: {bad}: damaged keyring_file (its SHA-256 digest does not match)"
    ]
