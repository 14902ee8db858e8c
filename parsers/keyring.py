"""Key files that open encrypted tablespaces, read into one :class:`Keyring`.

Three formats, told apart by their first bytes:

* MariaDB ``file_key_management`` (plugin/file_key_management/parser.cc): text lines
  ``<id>;<hex key>`` (16, 24 or 32 bytes), ``#`` comments; key id 1 must be there. Every key has
  version 1 (the plugin has no rotation). The file may be encrypted with
  ``--file-key-management-filekey``: ``Salted__``, an 8-byte salt, then AES-256-CBC (PKCS#7
  padding) with key and IV from OpenSSL's EVP_BytesToKey over SHA-1 (one iteration), as
  ``openssl enc -aes-256-cbc -md sha1`` writes it. A filekey ``FILE:<path>`` names a file whose
  first line is the secret, as the plugin reads it.
* MySQL ``keyring_file`` (plugin/keyring): ``Keyring file version:1.0`` (5.7) or ``2.0`` (8.0),
  then one record per key (five 64-bit little-endian lengths, key id, key type, user id, key
  data, zero padding to a multiple of 8), then ``EOF``; version 2.0 adds the SHA-256 of the key
  records. Key data is stored XORed with the plugin's fixed obfuscation string.
* MySQL ``.cfp`` (FLUSH TABLES … FOR EXPORT of an encrypted table, row0quiesce.cc): key length
  (4 bytes, 32), a random transfer key, then the tablespace key and IV each AES-256-ECB encrypted
  with the transfer key. No keyring is needed with it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from construct import Bytes, Const, ConstructError, GreedyRange, Int32ub, Int64ul, Struct, this
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from ibdtool.parsers.errors import ParseError

MYSQL_KEYRING_MAGIC = b"Keyring file version:"
MYSQL_KEYRING_EOF = b"EOF"
MYSQL_KEYRING_DIGEST = 32  # SHA-256, version 2.0 only
#: keyring_file keeps key data XORed with this string (keyring_key.cc, Key::xor_data)
MYSQL_OBFUSCATION = b"*305=Ljt0*!@$Hnm(*-9-w;:"
OPENSSL_SALTED = b"Salted__"
MAX_SECRET = 256  # the plugin's MAX_SECRET_SIZE
KEY_LEN = 32  # MySQL tablespace keys, IVs and transfer keys (Encryption::KEY_LEN)

#: a key line; the plugin ignores whatever follows the key on its line
_LINE = re.compile(r"^\s*(\d+);([0-9A-Fa-f]*)(?:[^0-9A-Fa-f].*)?$")


class KeyringError(ParseError):
    """A key file that cannot be read (the message says why, in one line)."""


#: One key record of a MySQL keyring_file (64-bit builds: 8-byte lengths, little-endian).
MYSQL_KEY_RECORD = Struct(
    "pod_size" / Int64ul,
    "key_id_len" / Int64ul,
    "key_type_len" / Int64ul,
    "user_id_len" / Int64ul,
    "key_len" / Int64ul,
    "key_id" / Bytes(this.key_id_len),
    "key_type" / Bytes(this.key_type_len),
    "user_id" / Bytes(this.user_id_len),
    "key" / Bytes(this.key_len),
    "padding"
    / Bytes(lambda c: c.pod_size - 40 - c.key_id_len - c.key_type_len - c.user_id_len - c.key_len),
)

#: The .cfp file FLUSH TABLES … FOR EXPORT writes next to an encrypted MySQL table.
CFP_FILE = Struct(
    "key_len" / Const(KEY_LEN, Int32ub),
    "transfer_key" / Bytes(KEY_LEN),
    "encrypted_key" / Bytes(KEY_LEN),
    "encrypted_iv" / Bytes(KEY_LEN),
)


@dataclass(frozen=True)
class Keyring:
    """Keys from one key file: which are filled depends on the format."""

    kind: str  # "mariadb", "mysql", "cfp"
    #: MariaDB key id -> key (always version 1 with file_key_management)
    mariadb: dict[int, bytes] = field(default_factory=dict)
    #: MySQL key name (``INNODBKey-<server uuid>-<master key id>``) -> key
    mysql: dict[str, bytes] = field(default_factory=dict)
    #: .cfp: the tablespace key and IV themselves
    tablespace_key: bytes | None = None
    tablespace_iv: bytes | None = None


def read_keyring(path: str | Path, filekey: str | None = None) -> Keyring:
    """Read the key file at ``path`` (``filekey``: the secret of an encrypted MariaDB file)."""
    name = str(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise KeyringError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise KeyringError(f"{name}: is a directory") from None
    except OSError as exc:
        raise KeyringError(f"{name}: cannot read: {exc.strerror}") from None
    try:
        return parse_keyring(data, filekey)
    except KeyringError as exc:
        raise KeyringError(f"{name}: {exc}") from None


def parse_keyring(data: bytes, filekey: str | bytes | None = None) -> Keyring:
    """The keys in ``data``, whatever of the three formats it is (``filekey``: as
    :func:`read_filekey` takes it, or the secret's bytes already read)."""
    if not data:
        raise KeyringError("empty key file")
    if data.startswith(MYSQL_KEYRING_MAGIC):
        return parse_mysql_keyring(data)
    if len(data) == CFP_FILE.sizeof() and data[:4] == KEY_LEN.to_bytes(4, "big"):
        return parse_cfp(data)
    if data.startswith(OPENSSL_SALTED):
        if not filekey:
            raise KeyringError("the key file is encrypted: give its filekey (--keyring-filekey)")
        secret = filekey if isinstance(filekey, bytes) else read_filekey(filekey)
        data = decrypt_key_file(data, secret)
    elif filekey:
        raise KeyringError("a filekey was given but the key file is not encrypted")
    return parse_mariadb_keys(data)


# --- MariaDB file_key_management -----------------------------------------------------------


def read_filekey(filekey: str) -> bytes:
    """The secret: ``filekey`` itself, or the first line of the file ``FILE:<path>`` names."""
    if not filekey.startswith("FILE:"):
        return filekey.encode()
    path = filekey[5:]
    try:
        with open(path, "rb") as f:  # never more than a secret can be
            raw = f.read(MAX_SECRET + 2)
    except OSError as exc:
        raise KeyringError(f"filekey {path}: {exc.strerror}") from None
    secret = raw.rstrip(b"\r\n")
    if not secret or len(secret) > MAX_SECRET:
        raise KeyringError(f"filekey {path}: the secret must be 1..{MAX_SECRET} bytes")
    return secret


def bytes_to_key(secret: bytes, salt: bytes) -> tuple[bytes, bytes]:
    """OpenSSL's EVP_BytesToKey with SHA-1 and one round: a 32-byte key and a 16-byte IV."""
    out = b""
    digest = b""
    while len(out) < 48:
        digest = hashlib.sha1(digest + secret + salt).digest()
        out += digest
    return out[:32], out[32:48]


def decrypt_key_file(data: bytes, secret: bytes) -> bytes:
    """The text of a ``Salted__`` key file (AES-256-CBC, PKCS#7)."""
    salt, body = data[8:16], data[16:]
    if len(salt) != 8 or not body or len(body) % 16:
        raise KeyringError("damaged encrypted key file (length is not whole AES blocks)")
    key, iv = bytes_to_key(secret, salt)
    dec = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
    padded = dec.update(body) + dec.finalize()
    unpad = padding.PKCS7(128).unpadder()
    try:
        return unpad.update(padded) + unpad.finalize()
    except ValueError:
        raise KeyringError("cannot decrypt the key file: wrong filekey") from None


def parse_mariadb_keys(data: bytes) -> Keyring:
    """``<id>;<hex>`` lines (parser.cc): ids 1..2^32-1, keys of 16, 24 or 32 bytes."""
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise KeyringError("not a key file (not text, not a MySQL keyring, not a .cfp)") from None
    keys: dict[int, bytes] = {}
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        m = _LINE.match(line)
        if m is None:
            raise KeyringError(f"line {number}: expected <id>;<hex key>")
        key_id = int(m.group(1))
        hexkey = m.group(2)
        if not 1 <= key_id <= 0xFFFFFFFF:
            raise KeyringError(f"line {number}: invalid key id {key_id}")
        if len(hexkey) not in (32, 48, 64):
            raise KeyringError(f"line {number}: a key must be 16, 24 or 32 bytes of hex")
        keys[key_id] = bytes.fromhex(hexkey)
    if 1 not in keys:
        raise KeyringError("system key id 1 is missing (not a file_key_management key file?)")
    return Keyring("mariadb", mariadb=keys)


# --- MySQL keyring_file ----------------------------------------------------------------------


def parse_mysql_keyring(data: bytes) -> Keyring:
    """A keyring_file of version 1.0 or 2.0 (digest checked)."""
    version = data[len(MYSQL_KEYRING_MAGIC) : len(MYSQL_KEYRING_MAGIC) + 3]
    if version not in (b"1.0", b"2.0"):
        raise KeyringError(f"unknown keyring_file version {version.decode(errors='replace')!r}")
    start = len(MYSQL_KEYRING_MAGIC) + len(version)
    tail = len(MYSQL_KEYRING_EOF) + (MYSQL_KEYRING_DIGEST if version == b"2.0" else 0)
    end = len(data) - tail
    if end < start or data[end : end + 3] != MYSQL_KEYRING_EOF:
        raise KeyringError("damaged keyring_file (no EOF tag)")
    body = data[start:end]
    if version == b"2.0" and hashlib.sha256(body).digest() != data[end + 3 :]:
        raise KeyringError("damaged keyring_file (its SHA-256 digest does not match)")
    try:
        records = GreedyRange(MYSQL_KEY_RECORD).parse(body)
    except ConstructError:
        records = []
    if sum(r.pod_size for r in records) != len(body):
        raise KeyringError("damaged keyring_file (key records do not fill it)")
    keys: dict[str, bytes] = {}
    for r in records:
        mask = MYSQL_OBFUSCATION * (len(r.key) // len(MYSQL_OBFUSCATION) + 1)
        keys[r.key_id.decode(errors="replace")] = bytes(
            a ^ b for a, b in zip(r.key, mask, strict=False)
        )
    return Keyring("mysql", mysql=keys)


def parse_cfp(data: bytes) -> Keyring:
    """A .cfp transfer-key file: the tablespace key and IV, unwrapped."""
    cfp = CFP_FILE.parse(data)
    dec = Cipher(algorithms.AES(cfp.transfer_key), modes.ECB()).decryptor()
    key = dec.update(cfp.encrypted_key)
    iv = dec.update(cfp.encrypted_iv) + dec.finalize()
    return Keyring("cfp", tablespace_key=key, tablespace_iv=iv)
