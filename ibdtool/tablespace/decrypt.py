"""Open one encrypted tablespace with a key file: pick its key, prove it, decrypt its pages.

:func:`page_decryptor` binds a :class:`~ibdtool.parsers.keyring.Keyring` to a tablespace's format
and checks the key before any page is decoded, so a wrong key is one error, never garbage:

* MySQL: the master key named by page 0's encryption info (or a .cfp's tablespace key) must
  reproduce the CRC-32C of the tablespace key and IV stored on page 0.
* MariaDB: the key id of page 0's crypt data must be in the key file, and the first encrypted
  pages must verify after decryption (their plaintext checksum, or the LSN copy in the trailer
  of a full_crc32 page, or a decompression that yields this page). The plugin's cipher (CBC or
  CTR) is not recorded on disk; the one that verifies is kept.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ibdtool.errors import InputError
from ibdtool.parsers import crypt
from ibdtool.parsers.crypt import Cipher_, CryptError
from ibdtool.parsers.envelope import Envelope, read_envelope, read_key_version
from ibdtool.parsers.page import decode_page
from ibdtool.parsers.space import SpaceFormat

if TYPE_CHECKING:  # ibdtool.parsers.keyring loads construct and cryptography: only with --keyring
    from ibdtool.parsers.keyring import Keyring

PROBE_PAGES = 8  # encrypted pages tried before a MariaDB key is called wrong
#: filesystem blocks a MySQL type-16 page may have been written in (the write length)
MYSQL_BLOCK_SIZES = (4096, 512, 1024, 2048, 8192, 16384, 32768, 65536)


@dataclass(frozen=True)
class PageDecryptor:
    """Decrypts the stored pages of one tablespace (see the module doc)."""

    fmt: SpaceFormat
    source: str  # what opened it: "keyring", ".cfp", "default master key"
    key: bytes
    iv: bytes = b""
    cipher: Cipher_ | None = None  # MariaDB only

    def key_version(self, page: bytes | memoryview) -> int:
        """MariaDB: the key version the page was encrypted with (MySQL has none: 0)."""
        if self.fmt.mysql_encryption is not None:
            return 0
        return read_key_version(page, self.fmt.full_crc32)

    def decrypt(self, page: bytes | memoryview, page_no: int) -> bytes | None:
        """The stored image of ``page`` as it would be unencrypted (see ibdtool.parsers.crypt); None
        when its envelope says it is not encrypted, or is damaged (the decoder reports that)."""
        env = read_envelope(page, self.fmt)
        if not env.encrypted or env.problem is not None:
            return None
        return self.plain(page, env, page_no)

    def plain(self, page: bytes | memoryview, env: Envelope, page_no: int) -> bytes:
        """Decrypt the encrypted ``page`` whose envelope is ``env``."""
        fmt = self.fmt
        if fmt.mysql_encryption is not None:
            if env.encrypted_to_write_block:
                return self._mysql_write_length(page, env, page_no)
            return crypt.mysql_plain_image(page, env, key=self.key, iv=self.iv)
        assert self.cipher is not None
        return crypt.mariadb_plain_image(
            page, env, space_id=fmt.space_id, key=self.key, cipher=self.cipher
        )

    def _mysql_write_length(self, page: bytes | memoryview, env: Envelope, page_no: int) -> bytes:
        """Type 16, metadata version 1: the ciphertext ends at the write length, which depends
        on the block size the server wrote with; keep the one whose plaintext verifies."""
        first: bytes | None = None
        for block in MYSQL_BLOCK_SIZES:
            try:
                image = crypt.mysql_plain_image(
                    page, env, key=self.key, iv=self.iv, block_size=block
                )
            except CryptError:
                continue
            first = first or image
            if _verifies(image, page_no, self.fmt):
                return image
        if first is None:
            raise CryptError(f"page {page_no}: compressed length exceeds the page")
        return first


def _verifies(image: bytes, page_no: int, fmt: SpaceFormat) -> bool:
    info = decode_page(image, page_no, fmt)
    return info.checksum_valid is True and info.problem is None


def page_decryptor(
    fmt: SpaceFormat,
    keyring: Keyring | None,
    read_page: Callable[[int], bytes],
    n_pages: int,
    name: str,
) -> PageDecryptor | None:
    """A decryptor for the tablespace ``name``, or None when it has nothing to decrypt.

    Raises :class:`InputError` for a missing or wrong key.
    """
    try:
        if fmt.mysql_encryption is not None:
            return _mysql(fmt, keyring)
        crypt_data = fmt.mariadb_crypt
        if crypt_data is None or not crypt_data.encrypted:
            return None
        if keyring is None:
            return None
        return _mariadb(fmt, keyring, read_page, n_pages)
    except CryptError as exc:
        raise InputError(f"{name}: {exc}") from None


def _mysql(fmt: SpaceFormat, keyring: Keyring | None) -> PageDecryptor | None:
    info = fmt.mysql_encryption
    assert info is not None
    if info.master_key_id == 0 and info.version == 3:
        key, iv = crypt.unwrap_mysql_key(info, crypt.MYSQL_DEFAULT_MASTER_KEY)
        return PageDecryptor(fmt, "default master key", key, iv)
    if keyring is None:
        return None
    if keyring.kind == "cfp":
        assert keyring.tablespace_key is not None and keyring.tablespace_iv is not None
        if not crypt.mysql_key_matches(info, keyring.tablespace_key, keyring.tablespace_iv):
            raise CryptError("wrong key: the .cfp's tablespace key is not the one page 0 holds")
        return PageDecryptor(fmt, ".cfp", keyring.tablespace_key, keyring.tablespace_iv)
    if keyring.kind != "mysql":
        raise CryptError("a MySQL tablespace needs a MySQL keyring_file or .cfp key file")
    master = keyring.mysql.get(info.master_key_name)
    if master is None and info.server_uuid is None:
        # lCA (5.7.11) names its master key by server id, which page 0 does not hold
        suffix = f"-{info.master_key_id}"
        found = [k for n, k in keyring.mysql.items() if n.endswith(suffix)]
        master = found[0] if len(found) == 1 else None
    if master is None:
        raise CryptError(f"master key {info.master_key_name} is not in the keyring")
    key, iv = crypt.unwrap_mysql_key(info, master)
    return PageDecryptor(fmt, "keyring", key, iv)


def _mariadb(
    fmt: SpaceFormat, keyring: Keyring, read_page: Callable[[int], bytes], n_pages: int
) -> PageDecryptor:
    crypt_data = fmt.mariadb_crypt
    assert crypt_data is not None
    if keyring.kind != "mariadb":
        raise CryptError("a MariaDB tablespace needs a file_key_management key file")
    file_key = keyring.mariadb.get(crypt_data.key_id)
    if file_key is None:
        raise CryptError(f"key id {crypt_data.key_id} is not in the key file")
    page_key = crypt.mariadb_page_key(file_key, crypt_data.iv)
    candidates = {c: PageDecryptor(fmt, "keyring", page_key, cipher=c) for c in Cipher_}
    probed = 0
    for page_no in range(1, n_pages):
        page = read_page(page_no)
        env = read_envelope(page, fmt)
        if not env.encrypted or env.problem is not None:
            continue
        for cipher, dec in candidates.items():
            try:
                image = dec.plain(page, env, page_no)
            except CryptError:
                continue
            if _verifies(image, page_no, fmt):
                return candidates[cipher]
        probed += 1
        if probed >= PROBE_PAGES:
            break
    if probed:
        raise CryptError(
            f"wrong key: key id {crypt_data.key_id} decrypts none of the first {probed} "
            "encrypted pages to a page that verifies (tried aes_cbc and aes_ctr)"
        )
    return candidates[Cipher_.CBC]  # nothing encrypted yet: any cipher will do
