"""Tablespace encryption: page 0's key information and the decryption of one stored page.

MariaDB (storage/innobase/fil/fil0crypt.cc, sql/encryption.cc, mysys_ssl/my_crypt.cc):

* Crypt data on page 0 at ``38 + E`` (FORMATS.md §3.2, §4.1): magic, scheme (1 = encrypted),
  IV length 16, the IV, min key version, key id, encryption mode (0 default, 1 on, 2 off).
* The page key is AES-ECB of the crypt-data IV under the key file's key (key id, version), so
  pages are AES-128 whatever the key file's key length. The per-page IV is space id, page
  number (4 bytes each) and the page LSN (8 bytes), all little-endian.
* The cipher is the key plugin's: file_key_management's default ``aes_cbc`` (a tail that is not
  a whole block is XORed with AES-ECB of the IV) or ``aes_ctr``. It is not written anywhere, so
  a reader tries both and keeps the one whose plaintext verifies.
* full_crc32: bytes [26, size-4) are encrypted, ``size`` the stored image (page or compressed
  image); the key version sits at 0 and the CRC-32C covers the ciphertext. Classic: the key
  version at 26, the post-encryption checksum at 30 (crc32 formula, zip formula on
  ROW_FORMAT=COMPRESSED); bytes [38, size-8) are encrypted and the checksum at 0 is the
  plaintext's. Page-compressed (37401): the compressed length at 38, the algorithm at 40, only
  the payload at 42 is encrypted.

MySQL (storage/innobase/os/os0enc.cc):

* Encryption info on page 0 at E: magic ``lCA``/``lCB``/``lCC``, master key id, server UUID
  (``lCB``, ``lCC``), then the tablespace key and IV (32 + 32 bytes) AES-256-ECB encrypted with
  the master key ``INNODBKey-<uuid>-<id>``, then CRC-32C of the plaintext key and IV.
  Master key id 0 means the built-in default key (``DefaultMasterKey``).
* Pages of type 15/16/17: bytes [38, end) are AES-256-CBC with the tablespace key and the first
  16 bytes of its IV; when the length is not whole blocks, the last 32 bytes were encrypted a
  second time after the rest. The original type is at 28 (15), RTREE (17), or type 14 (16).

Each ``*_plain_image`` function returns the stored image as the server would have written it
unencrypted, so the ordinary decoder then reads it (decompression, the plaintext's checksum).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import StrEnum

from construct import Bytes, Const, ConstructError, Int8ub, Int32ub, Struct
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from parsers import checksum
from parsers.constants import (
    FIL_PAGE_COMPRESSED,
    FIL_PAGE_COMPRESSED_AND_ENCRYPTED,
    FIL_PAGE_DATA,
    FIL_PAGE_ENCRYPTED,
    FIL_PAGE_ENCRYPTED_RTREE,
    FIL_PAGE_PAGE_COMPRESSED,
    FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED,
    FIL_PAGE_RTREE,
    FIL_PAGE_TYPE_FSP_HDR,
    FIL_PAGE_TYPE_XDES,
)
from parsers.crc32c_fast import crc32c
from parsers.errors import ParseError

MARIADB_CRYPT_MAGIC = bytes.fromhex("730E0C524574")
MYSQL_MAGICS = {b"lCA": 1, b"lCB": 2, b"lCC": 3}
MYSQL_KEY_LEN = 32
MYSQL_SERVER_UUID_LEN = 36
MYSQL_MASTER_KEY_PREFIX = "INNODBKey"
#: Encryption::DEFAULT_MASTER_KEY, used while no keyring master key exists (master key id 0)
MYSQL_DEFAULT_MASTER_KEY = b"DefaultMasterKey".ljust(MYSQL_KEY_LEN, b"\0")
AES_BLOCK = 16
MYSQL_MIN_ENCRYPTION_LEN = 2 * AES_BLOCK + FIL_PAGE_DATA
FCRC32_KEY_VERSION = 0  # full_crc32: key version at 0
KEY_VERSION_OFFSET = 26  # classic: FIL_PAGE_FILE_FLUSH_LSN_OR_KEY_VERSION
FCRC32_ENCRYPTED_FROM = 26
CLASSIC_COMP_HEADER = FIL_PAGE_DATA + 4  # 37401: length and algorithm before the payload
FIL_PAGE_DATA_END = 8

# --- page 0 -----------------------------------------------------------------------------------

#: MariaDB crypt data (fil_space_read_crypt_data), at 38 + E on page 0.
MARIADB_CRYPT_DATA = Struct(
    "magic" / Const(MARIADB_CRYPT_MAGIC),
    "scheme" / Int8ub,  # 0 CRYPT_SCHEME_UNENCRYPTED, 1 CRYPT_SCHEME_1
    "iv_len" / Const(AES_BLOCK, Int8ub),  # CRYPT_SCHEME_1_IV_LEN; the server rejects others
    "iv" / Bytes(AES_BLOCK),
    "min_key_version" / Int32ub,
    "key_id" / Int32ub,
    "encryption" / Int8ub,  # fil_encryption_t
)

#: MySQL encryption info, version 3 (``lCC``) and 2 (``lCB``), at E on page 0.
MYSQL_ENCRYPTION_INFO = Struct(
    "magic" / Bytes(3),
    "master_key_id" / Int32ub,
    "server_uuid" / Bytes(MYSQL_SERVER_UUID_LEN),
    "encrypted_key_iv" / Bytes(2 * MYSQL_KEY_LEN),
    "checksum" / Int32ub,  # CRC-32C of the plaintext key and IV
)
#: Version 1 (``lCA``, 5.7.11) has no server UUID.
MYSQL_ENCRYPTION_INFO_V1 = Struct(
    "magic" / Bytes(3),
    "master_key_id" / Int32ub,
    "encrypted_key_iv" / Bytes(2 * MYSQL_KEY_LEN),
    "checksum" / Int32ub,
)

MARIADB_MODES = {0: "default", 1: "on", 2: "off"}


class CryptError(ParseError):
    """A key that does not open the tablespace, or one that is missing."""


class Cipher_(StrEnum):
    """MariaDB's page cipher (file_key_management_encryption_algorithm)."""

    CBC = "aes_cbc"
    CTR = "aes_ctr"


@dataclass(frozen=True, slots=True)
class MariadbCrypt:
    """MariaDB crypt data of page 0."""

    offset: int
    scheme: int
    iv: bytes
    min_key_version: int
    key_id: int
    encryption: int

    @property
    def encrypted(self) -> bool:
        return self.scheme == 1

    def as_dict(self) -> dict[str, object]:
        return {
            "vendor": "mariadb",
            "offset": self.offset,
            "scheme": self.scheme,
            "key_id": self.key_id,
            "min_key_version": self.min_key_version,
            "encryption": MARIADB_MODES.get(self.encryption, str(self.encryption)),
            "iv": self.iv.hex(),
        }


@dataclass(frozen=True, slots=True)
class MysqlEncryptionInfo:
    """MySQL encryption info of page 0."""

    offset: int
    magic: str
    version: int
    master_key_id: int
    server_uuid: str | None
    encrypted_key_iv: bytes
    checksum: int

    @property
    def master_key_name(self) -> str:
        """The keyring key that wraps the tablespace key."""
        uuid = self.server_uuid if self.server_uuid is not None else "<server_id>"
        return f"{MYSQL_MASTER_KEY_PREFIX}-{uuid}-{self.master_key_id}"

    def as_dict(self) -> dict[str, object]:
        return {
            "vendor": "mysql",
            "offset": self.offset,
            "magic": self.magic,
            "version": self.version,
            "master_key_id": self.master_key_id,
            "server_uuid": self.server_uuid,
            "master_key": self.master_key_name,
            "encrypted_key": self.encrypted_key_iv[:MYSQL_KEY_LEN].hex(),
            "encrypted_iv": self.encrypted_key_iv[MYSQL_KEY_LEN:].hex(),
            "checksum": f"{self.checksum:08x}",
        }


def read_mariadb_crypt(page0: bytes, info_offset: int) -> MariadbCrypt | None:
    """The crypt data at ``38 + info_offset`` (E of §4.1), or None if there is none."""
    at = FIL_PAGE_DATA + info_offset
    raw = page0[at : at + MARIADB_CRYPT_DATA.sizeof()]
    if not raw.startswith(MARIADB_CRYPT_MAGIC) or len(raw) < MARIADB_CRYPT_DATA.sizeof():
        return None
    try:
        c = MARIADB_CRYPT_DATA.parse(raw)
    except ConstructError:
        return None
    if c.scheme not in (0, 1):
        return None
    return MariadbCrypt(at, c.scheme, c.iv, c.min_key_version, c.key_id, c.encryption)


def read_mysql_info(page0: bytes, info_offset: int) -> MysqlEncryptionInfo | None:
    """The encryption info at ``info_offset`` (E of §4.1), or None if there is none."""
    magic = bytes(page0[info_offset : info_offset + 3])
    version = MYSQL_MAGICS.get(magic)
    if version is None:
        return None
    raw = bytes(page0[info_offset : info_offset + MYSQL_ENCRYPTION_INFO.sizeof() + 4])
    if version < 3 and raw[7:11] == b"\0\0\0\0":
        # lCA/lCB: the master key id may have been written in 8 bytes (os0enc.cc)
        raw = raw[:7] + raw[11:]
    need = (MYSQL_ENCRYPTION_INFO_V1 if version == 1 else MYSQL_ENCRYPTION_INFO).sizeof()
    if len(raw) < need:
        return None  # a page 0 cut short
    if version == 1:
        v1 = MYSQL_ENCRYPTION_INFO_V1.parse(raw)
        return MysqlEncryptionInfo(
            info_offset, magic.decode(), 1, v1.master_key_id, None, v1.encrypted_key_iv, v1.checksum
        )
    c = MYSQL_ENCRYPTION_INFO.parse(raw)
    uuid = c.server_uuid.decode("ascii", errors="replace")
    return MysqlEncryptionInfo(
        info_offset, magic.decode(), version, c.master_key_id, uuid, c.encrypted_key_iv, c.checksum
    )


def unwrap_mysql_key(info: MysqlEncryptionInfo, master_key: bytes) -> tuple[bytes, bytes]:
    """The tablespace key and IV; :class:`CryptError` when the checksum says the key is wrong."""
    if len(master_key) != MYSQL_KEY_LEN:
        raise CryptError(f"master key {info.master_key_name} is {len(master_key)} bytes, not 32")
    dec = Cipher(algorithms.AES(master_key), modes.ECB()).decryptor()
    plain = dec.update(info.encrypted_key_iv) + dec.finalize()
    if crc32c(plain) != info.checksum:
        raise CryptError(
            f"wrong key: master key {info.master_key_name} does not decrypt the tablespace key "
            "(checksum mismatch)"
        )
    return plain[:MYSQL_KEY_LEN], plain[MYSQL_KEY_LEN:]


def mysql_key_matches(info: MysqlEncryptionInfo, key: bytes, iv: bytes) -> bool:
    """Do a tablespace key and IV (e.g. from a .cfp) match page 0's checksum?"""
    return crc32c(key + iv) == info.checksum


# --- MariaDB pages ----------------------------------------------------------------------------


def mariadb_page_key(file_key: bytes, crypt_iv: bytes) -> bytes:
    """The AES-128 page key: the crypt-data IV encrypted (ECB) with the key file's key."""
    enc = Cipher(algorithms.AES(file_key), modes.ECB()).encryptor()
    return enc.update(crypt_iv) + enc.finalize()


def mariadb_iv(space_id: int, page_no: int, lsn: int) -> bytes:
    return struct.pack("<IIQ", space_id & 0xFFFFFFFF, page_no & 0xFFFFFFFF, lsn)


def mariadb_decrypt(data: bytes, key: bytes, iv: bytes, cipher: Cipher_) -> bytes:
    """Decrypt ``data`` as my_aes_crypt does without padding (same length out)."""
    if cipher is Cipher_.CTR:
        dec = Cipher(algorithms.AES(key), modes.CTR(iv)).decryptor()
        return dec.update(data) + dec.finalize()
    whole = len(data) // AES_BLOCK * AES_BLOCK
    dec = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
    out = dec.update(data[:whole]) + dec.finalize()
    if whole < len(data):
        enc = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
        mask = enc.update(iv) + enc.finalize()
        out += bytes(a ^ b for a, b in zip(data[whole:], mask, strict=False))
    return out


def mariadb_key_version(page: bytes | memoryview, full_crc32: bool) -> int:
    at = FCRC32_KEY_VERSION if full_crc32 else KEY_VERSION_OFFSET
    return int.from_bytes(page[at : at + 4], "big")


def mariadb_encrypted(
    page: bytes | memoryview, full_crc32: bool, crypt: MariadbCrypt | None
) -> bool:
    """Is this stored page encrypted (buf_page_decrypt_after_read's test)?"""
    if full_crc32:
        return mariadb_key_version(page, True) != 0
    if crypt is None or not crypt.encrypted:
        return False
    ptype = int.from_bytes(page[24:26], "big")
    if ptype == FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED:
        return True
    if ptype in (FIL_PAGE_TYPE_FSP_HDR, FIL_PAGE_TYPE_XDES, FIL_PAGE_PAGE_COMPRESSED):
        return False
    return mariadb_key_version(page, False) != 0


def fcrc32_image_size(page: bytes | memoryview, physical: int) -> int | None:
    """Bytes of the stored full_crc32 image (page, or compressed image); None if impossible."""
    ptype = int.from_bytes(page[24:26], "big")
    if not ptype & 0x8000:
        return physical
    size = (ptype & 0x7FFF) << 8
    return size if 32 <= size < physical else None


def mariadb_plain_image(
    page: bytes | memoryview,
    *,
    physical: int,
    full_crc32: bool,
    space_id: int,
    key: bytes,
    cipher: Cipher_,
) -> bytes:
    """The stored image of an encrypted MariaDB page as it would be unencrypted.

    full_crc32: key version 0, the plaintext, and a CRC-32C of the plaintext image only if the
    stored CRC verified (so the decoder's verdict stays the stored page's). Classic: key version
    and post-encryption checksum zeroed (no checksum covers 26..33); a 37401 page becomes the
    34354 page MariaDB writes unencrypted (algorithm at 26, payload at 40).
    """
    mv = memoryview(page)
    page_no = int.from_bytes(mv[4:8], "big")
    lsn = int.from_bytes(mv[16:24], "big")
    if full_crc32:
        size = fcrc32_image_size(mv, physical)
        if size is None:
            raise CryptError(f"page {page_no}: impossible compressed size in the type word")
        iv = mariadb_iv(space_id, page_no, lsn)
        plain = mariadb_decrypt(bytes(mv[FCRC32_ENCRYPTED_FROM : size - 4]), key, iv, cipher)
        out = bytearray(mv)
        out[0:4] = bytes(4)
        out[FCRC32_ENCRYPTED_FROM : size - 4] = plain
        if checksum.full_crc32(mv, size) == int.from_bytes(mv[size - 4 : size], "big"):
            out[size - 4 : size] = checksum.full_crc32(memoryview(out), size).to_bytes(4, "big")
        return bytes(out)
    header_space = int.from_bytes(mv[34:38], "big")
    iv = mariadb_iv(header_space, page_no, lsn)
    ptype = int.from_bytes(mv[24:26], "big")
    if ptype == FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED:
        length = int.from_bytes(mv[FIL_PAGE_DATA : FIL_PAGE_DATA + 2], "big")
        algorithm = int.from_bytes(mv[FIL_PAGE_DATA + 2 : FIL_PAGE_DATA + 4], "big")
        if CLASSIC_COMP_HEADER + length > physical:
            raise CryptError(f"page {page_no}: compressed length {length} exceeds the page")
        payload = bytes(mv[CLASSIC_COMP_HEADER : CLASSIC_COMP_HEADER + length])
        out = bytearray(physical)
        out[0:24] = mv[0:24]
        out[24:26] = FIL_PAGE_PAGE_COMPRESSED.to_bytes(2, "big")
        out[26:34] = algorithm.to_bytes(8, "big")
        out[34:40] = mv[34:40]
        out[FIL_PAGE_DATA + 2 : FIL_PAGE_DATA + 2 + length] = mariadb_decrypt(
            payload, key, iv, cipher
        )
        return bytes(out)
    out = bytearray(mv)
    out[26:34] = bytes(8)
    end = physical - FIL_PAGE_DATA_END
    out[FIL_PAGE_DATA:end] = mariadb_decrypt(bytes(mv[FIL_PAGE_DATA:end]), key, iv, cipher)
    return bytes(out)


# --- MySQL pages ------------------------------------------------------------------------------


def mysql_decrypt(data: bytes, key: bytes, iv: bytes) -> bytes:
    """AES-256-CBC as Encryption::decrypt: the last 32 bytes first when not whole blocks."""
    n = len(data)
    whole = n // AES_BLOCK * AES_BLOCK

    def cbc(chunk: bytes) -> bytes:
        dec = Cipher(algorithms.AES(key), modes.CBC(iv[:AES_BLOCK])).decryptor()
        return dec.update(chunk) + dec.finalize()

    if whole == n:
        return cbc(data)
    if n < 2 * AES_BLOCK:
        raise CryptError(f"{n} encrypted bytes: too short for AES-CBC")
    staged = data[: n - 2 * AES_BLOCK] + cbc(data[n - 2 * AES_BLOCK :])
    return cbc(staged[:whole]) + staged[whole:]


def mysql_encrypted(page: bytes | memoryview) -> bool:
    ptype = int.from_bytes(page[24:26], "big")
    return ptype in (
        FIL_PAGE_ENCRYPTED,
        FIL_PAGE_COMPRESSED_AND_ENCRYPTED,
        FIL_PAGE_ENCRYPTED_RTREE,
    )


def mysql_plain_image(
    page: bytes | memoryview, *, physical: int, key: bytes, iv: bytes, block_size: int = 4096
) -> bytes:
    """The stored image of an encrypted MySQL page (type 15/16/17) as it was before encryption.

    A type-16 image with compression meta version 1 was encrypted over its write length,
    ``38 + compressed size`` rounded up to the filesystem block the server wrote with
    (``block_size``, not recorded on disk); version 2 over the image, at least 70 bytes.
    """
    mv = memoryview(page)
    ptype = int.from_bytes(mv[24:26], "big")
    end = physical
    if ptype == FIL_PAGE_COMPRESSED_AND_ENCRYPTED:
        z_len = int.from_bytes(mv[32:34], "big")
        if mv[26] == 1:  # compression meta version 1: the write length, whole blocks
            end = -(-(FIL_PAGE_DATA + z_len) // block_size) * block_size
        else:  # version 2: the image itself, at least two AES blocks
            end = max(FIL_PAGE_DATA + z_len, MYSQL_MIN_ENCRYPTION_LEN)
        if end > physical:
            raise CryptError(f"compressed length {z_len} exceeds the page")
    out = bytearray(mv)
    out[FIL_PAGE_DATA:end] = mysql_decrypt(bytes(mv[FIL_PAGE_DATA:end]), key, iv)
    if ptype == FIL_PAGE_ENCRYPTED:
        out[24:26] = mv[28:30]
        out[28:30] = b"\0\0"
    elif ptype == FIL_PAGE_ENCRYPTED_RTREE:
        out[24:26] = FIL_PAGE_RTREE.to_bytes(2, "big")
    elif ptype == FIL_PAGE_COMPRESSED_AND_ENCRYPTED:
        out[24:26] = FIL_PAGE_COMPRESSED.to_bytes(2, "big")
    return bytes(out)
