"""``~/.mylogin.cnf``, the login-path file ``mysql_config_editor`` writes: read and written.

The file obfuscates an option file (it does not protect it: the key is inside). Layout, as
MySQL's ``mysql_config_editor`` and ``my_default.cc`` use it:

* 4 unused bytes, then the 20-byte key; the AES-128 key is those 20 bytes XOR-folded into 16
  (byte ``i`` goes into ``i % 16``);
* then, for each line of the option text (``[client]\\n``, ``user = "app"\\n`` …), a 4-byte
  little-endian length and the line encrypted with AES-128-ECB, PKCS#7 padded, on its own.

MySQL ignores the file, with a warning, unless only its owner may read and write it; MariaDB's
clients do not read it at all.
"""

from __future__ import annotations

import os
import struct

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

UNUSED_BYTES = 4
KEY_BYTES = 20
HEADER_BYTES = UNUSED_BYTES + KEY_BYTES
AES_BLOCK = 16
MAX_LINE_CIPHER = 4096 + AES_BLOCK  # the editor's longest line, padded
_LEN = struct.Struct("<i")


class LoginFileError(ValueError):
    """The bytes are not a login-path file; the message is one line."""


def _aes_key(key: bytes) -> bytes:
    folded = bytearray(AES_BLOCK)
    for i, b in enumerate(key):
        folded[i % AES_BLOCK] ^= b
    return bytes(folded)


def decrypt(data: bytes) -> str:
    """The option text of a login-path file."""
    if len(data) < HEADER_BYTES:
        raise LoginFileError(f"{len(data)} bytes: shorter than the {HEADER_BYTES}-byte header")
    cipher = Cipher(algorithms.AES(_aes_key(data[UNUSED_BYTES:HEADER_BYTES])), modes.ECB())
    lines: list[str] = []
    pos = HEADER_BYTES
    while pos < len(data):
        if pos + _LEN.size > len(data):
            raise LoginFileError(f"a line length cut short at byte {pos}")
        (n,) = _LEN.unpack_from(data, pos)
        pos += _LEN.size
        if n <= 0 or n % AES_BLOCK or n > MAX_LINE_CIPHER or pos + n > len(data):
            raise LoginFileError(f"a line of {n} bytes at byte {pos} does not fit the file")
        dec = cipher.decryptor()
        plain = dec.update(data[pos : pos + n]) + dec.finalize()
        pad = plain[-1]
        if not 1 <= pad <= AES_BLOCK or plain[-pad:] != bytes([pad]) * pad:
            raise LoginFileError(f"the line at byte {pos} does not decrypt (wrong key or file)")
        lines.append(plain[:-pad].decode("utf-8", "replace"))
        pos += n
    return "".join(lines)


def encrypt(text: str, key: bytes | None = None) -> bytes:
    """A login-path file holding ``text`` (option-file lines), with a random key by default."""
    key = os.urandom(KEY_BYTES) if key is None else key
    if len(key) != KEY_BYTES:
        raise ValueError(f"the key is {KEY_BYTES} bytes")
    cipher = Cipher(algorithms.AES(_aes_key(key)), modes.ECB())
    out = bytearray(UNUSED_BYTES) + key
    for line in text.splitlines(keepends=True):
        raw = line.encode("utf-8")
        pad = AES_BLOCK - len(raw) % AES_BLOCK
        enc = cipher.encryptor()
        body = enc.update(raw + bytes([pad]) * pad) + enc.finalize()
        out += _LEN.pack(len(body)) + body
    return bytes(out)


def login_file_path(environ: dict[str, str] | os._Environ[str] | None = None) -> str:
    """``$MYSQL_TEST_LOGIN_FILE`` (as MySQL's clients honour it) or ``~/.mylogin.cnf``."""
    env = os.environ if environ is None else environ
    return env.get("MYSQL_TEST_LOGIN_FILE") or os.path.join(
        env.get("HOME") or os.path.expanduser("~"), ".mylogin.cnf"
    )


__all__ = ["LoginFileError", "decrypt", "encrypt", "login_file_path"]
