"""MariaDB file_key_management key files: the plain format and ``openssl enc`` encryption.

The encrypted files are made by the ``openssl`` command line, as the plugin's documentation
says (``openssl enc -aes-256-cbc -md sha1``): an implementation independent of ours. The
server's own reading of such a file is covered by tests/test_crypt_mariadb.py.
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
from pathlib import Path

import pytest

from ibdtool.parsers.keyring import KeyringError, parse_keyring, read_keyring
from tests.cli_runner import run_ibdtool

KEYS = (
    "# comment\n1;"
    + "0f" * 32
    + "\n\n  2;"
    + "a0" * 16
    + "  # trailing words\n7;"
    + "11" * 24
    + "\n"
)


def _openssl(plain: Path, out: Path, secret: str) -> Path:
    if shutil.which("openssl") is None:
        pytest.fail("the openssl command is needed")
    subprocess.run(
        [
            "openssl",
            "enc",
            "-aes-256-cbc",
            "-md",
            "sha1",
            "-pass",
            f"pass:{secret}",
            "-in",
            str(plain),
            "-out",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    return out


def test_plain_key_file() -> None:
    keyring = parse_keyring(KEYS.encode())
    assert keyring.kind == "mariadb"
    assert keyring.mariadb == {
        1: bytes.fromhex("0f" * 32),
        2: bytes.fromhex("a0" * 16),
        7: bytes.fromhex("11" * 24),
    }


def test_openssl_encrypted_key_file_reads_as_the_plain_one(tmp_path: Path) -> None:
    plain = tmp_path / "keys.txt"
    plain.write_text(KEYS)
    secret = secrets.token_urlsafe(12)
    enc = _openssl(plain, tmp_path / "keys.enc", secret)
    assert enc.read_bytes().startswith(b"Salted__")
    assert read_keyring(enc, secret).mariadb == parse_keyring(KEYS.encode()).mariadb
    secret_file = tmp_path / "secret"
    secret_file.write_text(secret + "\r\n")
    assert read_keyring(enc, f"FILE:{secret_file}").mariadb == parse_keyring(KEYS.encode()).mariadb
    with pytest.raises(KeyringError, match="wrong filekey"):
        read_keyring(enc, secret + "x")
    with pytest.raises(KeyringError, match="encrypted"):
        read_keyring(enc)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("2;" + "00" * 16 + "\n", "key id 1 is missing"),
        ("1;" + "00" * 15 + "\n", "line 1: a key must be 16, 24 or 32 bytes"),
        ("1;" + "00" * 33 + "\n", "line 1: a key must be 16, 24 or 32 bytes"),
        ("x;" + "00" * 16 + "\n", "line 1: expected <id>;<hex key>"),
        ("1;" + "00" * 16 + "\n0;" + "00" * 16 + "\n", "line 2: invalid key id 0"),
    ],
)
def test_bad_key_files_say_why(text: str, message: str) -> None:
    with pytest.raises(KeyringError, match=message):
        parse_keyring(text.encode())


def test_cli_key_file_errors_are_one_line(tmp_path: Path) -> None:
    target = "samples/mariadb/" + sorted(p.name for p in Path("samples/mariadb").glob("*.ibd"))[0]
    garbage = tmp_path / "garbage"
    garbage.write_bytes(bytes(range(256)))
    cases = [
        (["--keyring", str(garbage)], f"{garbage}: not a key file"),
        (["--keyring", str(tmp_path / "none")], f"{tmp_path / 'none'}: no such file"),
        (["--keyring-filekey", "x"], "--keyring-filekey needs --keyring"),
    ]
    for extra, message in cases:
        r = run_ibdtool("checksum", target, *extra)
        assert r.returncode == 2, r.stderr
        lines = r.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"ibdtool: error: {message}"), r.stderr
