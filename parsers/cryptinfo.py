"""Page 0's encryption information: MariaDB's crypt data, MySQL's encryption info.

Every tablespace's page 0 is read for it (is the file encrypted, with which key), so it is
apart from :mod:`ibdtool.parsers.crypt` (the decryption of pages) and reads the formats of
:mod:`ibdtool.parsers._structs_gen`, derived from the construct declarations of
:mod:`ibdtool.parsers.structs` (``MARIADB_CRYPT_DATA``, ``MYSQL_ENCRYPTION_INFO``, ``…_V1``; the
layouts are in the doc of :mod:`ibdtool.parsers.crypt`): an unencrypted file loads neither construct
nor the AES code (start-up time, issue 14). Only a page 0 with one of
the magics at E or 38 + E loads this module (:func:`ibdtool.parsers.space.detect_format` looks
first).
"""

from __future__ import annotations

from dataclasses import dataclass

from ibdtool.parsers._structs_gen import (
    MARIADB_CRYPT_DATA_CONST,
    MARIADB_CRYPT_DATA_FAST,
    MARIADB_CRYPT_MAGIC,
    MYSQL_ENCRYPTION_INFO_FAST,
    MYSQL_ENCRYPTION_INFO_V1_FAST,
    MYSQL_ENCRYPTION_MAGIC_V1,
    MYSQL_ENCRYPTION_MAGIC_V2,
    MYSQL_ENCRYPTION_MAGIC_V3,
    MYSQL_KEY_LEN,
    MariadbCryptDataTuple,
    MysqlEncryptionInfoTuple,
    MysqlEncryptionInfoV1Tuple,
)
from ibdtool.parsers.constants import FIL_PAGE_DATA

MYSQL_MAGICS = {
    MYSQL_ENCRYPTION_MAGIC_V1: 1,
    MYSQL_ENCRYPTION_MAGIC_V2: 2,
    MYSQL_ENCRYPTION_MAGIC_V3: 3,
}
MYSQL_MASTER_KEY_PREFIX = "INNODBKey"
MARIADB_MODES = {0: "default", 1: "on", 2: "off"}


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
    raw = page0[at : at + MARIADB_CRYPT_DATA_FAST.size]
    if not raw.startswith(MARIADB_CRYPT_MAGIC) or len(raw) < MARIADB_CRYPT_DATA_FAST.size:
        return None
    c = MariadbCryptDataTuple._make(MARIADB_CRYPT_DATA_FAST.unpack_from(raw))
    if any(getattr(c, name) != value for name, value in MARIADB_CRYPT_DATA_CONST.items()):
        return None  # what construct's Const rejects
    if c.scheme not in (0, 1):
        return None
    return MariadbCrypt(at, c.scheme, c.iv, c.min_key_version, c.key_id, c.encryption)


def read_mysql_info(page0: bytes, info_offset: int) -> MysqlEncryptionInfo | None:
    """The encryption info at ``info_offset`` (E of §4.1), or None if there is none."""
    magic = bytes(page0[info_offset : info_offset + 3])
    version = MYSQL_MAGICS.get(magic)
    if version is None:
        return None
    raw = bytes(page0[info_offset : info_offset + MYSQL_ENCRYPTION_INFO_FAST.size + 4])
    if version < 3 and raw[7:11] == b"\0\0\0\0":
        # lCA/lCB: the master key id may have been written in 8 bytes (os0enc.cc)
        raw = raw[:7] + raw[11:]
    need = (MYSQL_ENCRYPTION_INFO_V1_FAST if version == 1 else MYSQL_ENCRYPTION_INFO_FAST).size
    if len(raw) < need:
        return None  # a page 0 cut short
    if version == 1:
        v1 = MysqlEncryptionInfoV1Tuple._make(MYSQL_ENCRYPTION_INFO_V1_FAST.unpack_from(raw))
        return MysqlEncryptionInfo(
            info_offset, magic.decode(), 1, v1.master_key_id, None, v1.encrypted_key_iv, v1.checksum
        )
    c = MysqlEncryptionInfoTuple._make(MYSQL_ENCRYPTION_INFO_FAST.unpack_from(raw))
    uuid = c.server_uuid.decode("ascii", errors="replace")
    return MysqlEncryptionInfo(
        info_offset, magic.decode(), version, c.master_key_id, uuid, c.encrypted_key_iv, c.checksum
    )
