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
* Which pages are encrypted, which bytes are ciphertext and what the stored checksum covers
  is the page's envelope (:mod:`ibdtool.parsers.envelope`, one rule for every reader): full_crc32
  (key version at 0, CRC-32C over the ciphertext), classic (key version at 26, the checksum of
  the stored bytes at 30, the one at 0 the plaintext's), page_compressed 37401 (the payload).

MySQL (storage/innobase/os/os0enc.cc):

* Encryption info on page 0 at E: magic ``lCA``/``lCB``/``lCC``, master key id, server UUID
  (``lCB``, ``lCC``), then the tablespace key and IV (32 + 32 bytes) AES-256-ECB encrypted with
  the master key ``INNODBKey-<uuid>-<id>``, then CRC-32C of the plaintext key and IV.
  Master key id 0 means the built-in default key (``DefaultMasterKey``).
* Pages of type 15/16/17: the envelope's ciphertext is AES-256-CBC with the tablespace key and
  the first 16 bytes of its IV; when the length is not whole blocks, the last 32 bytes were
  encrypted a second time after the rest. The original type is at 28 (15), RTREE (17), or
  type 14 (16).

Each ``*_plain_image`` function returns the stored image as the server would have written it
unencrypted, so the ordinary decoder then reads it (decompression, the plaintext's checksum).

``cryptography`` is imported by the functions that run AES, when the first key or page is
decrypted: reading an unencrypted file never loads it (start-up time, issue 14). Page 0's
information is read by :mod:`ibdtool.parsers.cryptinfo`, so an unencrypted file
does not load this module either.
"""

from __future__ import annotations

import struct
from enum import StrEnum

from ibdtool.parsers import checksum
from ibdtool.parsers._structs_gen import (
    AES_BLOCK,
    FCRC32_KEY_VERSION_OFFSET,
    FIL_HEADER_FAST,
    MARIADB_CLASSIC_COMP_OFFSET,
    MARIADB_CLASSIC_ENC_FAST,
    MARIADB_CLASSIC_FAST,
    MARIADB_CLASSIC_PAYLOAD,
    MARIADB_CRYPT_HEADER_END,
    MARIADB_CRYPT_KEY_VERSION_OFFSET,
    MYSQL_COMPRESSION_META_OFFSET,
    MYSQL_KEY_LEN,
    MYSQL_META_FAST,
)
from ibdtool.parsers.constants import (
    FIL_PAGE_COMPRESSED,
    FIL_PAGE_COMPRESSED_AND_ENCRYPTED,
    FIL_PAGE_ENCRYPTED,
    FIL_PAGE_ENCRYPTED_RTREE,
    FIL_PAGE_PAGE_COMPRESSED,
    FIL_PAGE_RTREE,
)
from ibdtool.parsers.crc32c_fast import crc32c
from ibdtool.parsers.cryptinfo import MysqlEncryptionInfo
from ibdtool.parsers.envelope import Checksum, Envelope, Kind
from ibdtool.parsers.errors import ParseError

#: Encryption::DEFAULT_MASTER_KEY, used while no keyring master key exists (master key id 0)
MYSQL_DEFAULT_MASTER_KEY = b"DefaultMasterKey".ljust(MYSQL_KEY_LEN, b"\0")


class CryptError(ParseError):
    """A key that does not open the tablespace, or one that is missing."""


class Cipher_(StrEnum):
    """MariaDB's page cipher (file_key_management_encryption_algorithm)."""

    CBC = "aes_cbc"
    CTR = "aes_ctr"


def unwrap_mysql_key(info: MysqlEncryptionInfo, master_key: bytes) -> tuple[bytes, bytes]:
    """The tablespace key and IV; :class:`CryptError` when the checksum says the key is wrong."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

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
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    enc = Cipher(algorithms.AES(file_key), modes.ECB()).encryptor()
    return enc.update(crypt_iv) + enc.finalize()


def mariadb_iv(space_id: int, page_no: int, lsn: int) -> bytes:
    return struct.pack("<IIQ", space_id & 0xFFFFFFFF, page_no & 0xFFFFFFFF, lsn)


def mariadb_decrypt(data: bytes, key: bytes, iv: bytes, cipher: Cipher_) -> bytes:
    """Decrypt ``data`` as my_aes_crypt does without padding (same length out)."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

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


def _ciphertext(env: Envelope, page_no: int) -> tuple[int, int]:
    """The envelope's ciphertext range; :class:`CryptError` when it has none (damage)."""
    if env.problem is not None:
        raise CryptError(f"page {page_no}: {env.problem}")
    if env.encrypted_range is None:
        raise CryptError(f"page {page_no}: no ciphertext range in its {env.kind.value} envelope")
    return env.encrypted_range


def mariadb_plain_image(
    page: bytes | memoryview, env: Envelope, *, space_id: int, key: bytes, cipher: Cipher_
) -> bytes:
    """The stored image of an encrypted MariaDB page as it would be unencrypted.

    The ciphertext and checksum scope are ``env``'s
    (:func:`ibdtool.parsers.envelope.read_envelope`). full_crc32: key version 0, the plaintext, and
    a CRC-32C of the plaintext image only if the stored CRC verified (so the decoder's verdict stays
    the stored page's). Classic: key version and post-encryption checksum zeroed (no checksum covers
    26..33); a 37401 page becomes the 34354 page MariaDB writes unencrypted (algorithm at 26,
    payload at 40).
    """
    mv = memoryview(page)
    fil = FIL_HEADER_FAST.unpack_from(mv, 0)
    page_no, lsn, header_space = fil[1], fil[4], fil[7]
    start, end = _ciphertext(env, page_no)
    if env.checksum is Checksum.FULL_CRC32:
        crc_end = env.checksum_end if env.checksum_end is not None else len(mv)
        iv = mariadb_iv(space_id, page_no, lsn)
        out = bytearray(mv)
        out[FCRC32_KEY_VERSION_OFFSET : FCRC32_KEY_VERSION_OFFSET + 4] = bytes(4)
        out[start:end] = mariadb_decrypt(bytes(mv[start:end]), key, iv, cipher)
        if checksum.full_crc32(mv, crc_end) == int.from_bytes(mv[crc_end - 4 : crc_end], "big"):
            crc = checksum.full_crc32(memoryview(out), crc_end)
            out[crc_end - 4 : crc_end] = crc.to_bytes(4, "big")
        return bytes(out)
    iv = mariadb_iv(header_space, page_no, lsn)
    plain = mariadb_decrypt(bytes(mv[start:end]), key, iv, cipher)
    if env.kind is Kind.MARIADB_COMPRESSED:
        # 37401 -> 34354: the 8-byte algorithm id at 26, the length at 38, the payload at 40
        head = MARIADB_CLASSIC_ENC_FAST.unpack_from(mv, MARIADB_CLASSIC_COMP_OFFSET)
        algorithm_id = head[-1]
        out = bytearray(len(mv))
        out[:MARIADB_CLASSIC_COMP_OFFSET] = mv[:MARIADB_CLASSIC_COMP_OFFSET]
        out[24:26] = FIL_PAGE_PAGE_COMPRESSED.to_bytes(2, "big")
        MARIADB_CLASSIC_FAST.pack_into(
            out, MARIADB_CLASSIC_COMP_OFFSET, algorithm_id, header_space, end - start
        )
        out[MARIADB_CLASSIC_PAYLOAD : MARIADB_CLASSIC_PAYLOAD + len(plain)] = plain
        return bytes(out)
    out = bytearray(mv)
    out[MARIADB_CRYPT_KEY_VERSION_OFFSET:MARIADB_CRYPT_HEADER_END] = bytes(
        MARIADB_CRYPT_HEADER_END - MARIADB_CRYPT_KEY_VERSION_OFFSET
    )
    out[start:end] = plain
    return bytes(out)


# --- MySQL pages ------------------------------------------------------------------------------


def mysql_decrypt(data: bytes, key: bytes, iv: bytes) -> bytes:
    """AES-256-CBC as Encryption::decrypt: the last 32 bytes first when not whole blocks."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

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


def mysql_plain_image(
    page: bytes | memoryview,
    env: Envelope,
    *,
    key: bytes,
    iv: bytes,
    block_size: int = 4096,
) -> bytes:
    """The stored image of an encrypted MySQL page (type 15/16/17) as it was before encryption.

    The ciphertext is ``env``'s; a type-16 page with compression metadata version 1 was
    encrypted to its write length, for which ``block_size`` (not recorded on disk) is assumed.
    The type goes back to the original at 28 (15), RTREE (17) or 14 (16).
    """
    mv = memoryview(page)
    page_no = FIL_HEADER_FAST.unpack_from(mv, 0)[1]
    if env.encrypted_to_write_block and env.problem is None:
        rng = env.written_encrypted_range(block_size, len(mv))
        if rng is None:
            raise CryptError(f"page {page_no}: a write in {block_size}-byte blocks overruns it")
        start, end = rng
    else:
        start, end = _ciphertext(env, page_no)
    out = bytearray(mv)
    out[start:end] = mysql_decrypt(bytes(mv[start:end]), key, iv)
    if env.stored_type == FIL_PAGE_ENCRYPTED:
        original = MYSQL_META_FAST.unpack_from(mv, MYSQL_COMPRESSION_META_OFFSET)[2]
        out[24:26] = original.to_bytes(2, "big")
        out[28:30] = b"\0\0"
    elif env.stored_type == FIL_PAGE_ENCRYPTED_RTREE:
        out[24:26] = FIL_PAGE_RTREE.to_bytes(2, "big")
    elif env.stored_type == FIL_PAGE_COMPRESSED_AND_ENCRYPTED:
        out[24:26] = FIL_PAGE_COMPRESSED.to_bytes(2, "big")
    return bytes(out)
