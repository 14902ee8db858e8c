"""The envelope of a stored page: what wraps the page image on disk, read from its header.

One answer for any stored page of any format (FORMATS.md §1–§3, §6, §7, §10 step 2): its
:class:`Kind`, its page-compression algorithm, the bytes of the slot the image needs (stored
size), where the compressed stream lies (payload offset and length), which bytes are ciphertext
and what the stored checksum covers. Every reader of stored pages asks here: the decoder
(:mod:`ibdtool.parsers.page`), the vote (:mod:`ibdtool.parsers.space`), the inflater
(:mod:`ibdtool.parsers.inflate`), the field layout, ``checksum``'s fast path and the page-state
count of ``server``.

A number the format cannot hold (a size past the page, below the format's minimum) is damage:
the envelope then has a ``problem`` and no ``stored_size``, so no caller sums it.

Decryption (:mod:`ibdtool.parsers.crypt`) and partial decompression start from here:
``encrypted_range`` names the ciphertext (after decrypting it, read the envelope of the
plaintext again: the full_crc32 length byte lies inside the ciphertext) and
``payload_offset``/``payload_length`` the compressed stream. Which pages are encrypted is this
module's rule too: full_crc32's key version at 0; MySQL types 15/16/17; MariaDB 37401; and, in a
classic tablespace whose page-0 crypt data says so (``crypt_encrypted``), a key version at 26,
the checksum of the stored bytes then at 30 (:attr:`Checksum.CRYPT`). A MySQL type-16 page of
metadata version 1 is encrypted to its write length, which needs the filesystem block size
(:meth:`Envelope.written_encrypted_range`).
"""

# No ``from __future__ import annotations`` here: a NamedTuple's string annotations are each
# compiled by typing when the class is made, ~0.9 ms of every start over the records of
# inspect's path (issue 24, item 4; tests/test_startup.py checks them)

from enum import StrEnum
from functools import cache
from typing import NamedTuple, Protocol

from ibdtool.parsers._structs_gen import (
    FCRC32_CHECKSUM_SIZE,
    FCRC32_KEY_VERSION_OFFSET,
    FCRC32_SIZE_BITS,
    FCRC32_SIZE_UNIT,
    MARIADB_CLASSIC_COMP_OFFSET,
    MARIADB_CLASSIC_ENC_FAST,
    MARIADB_CLASSIC_ENC_PAYLOAD,
    MARIADB_CLASSIC_FAST,
    MARIADB_CLASSIC_PAYLOAD,
    MARIADB_CRYPT_CHECKSUM_OFFSET,
    MARIADB_CRYPT_KEY_VERSION_OFFSET,
    MARIADB_FCRC32_PAYLOAD,
    MYSQL_COMPRESSION_META_OFFSET,
    MYSQL_META_FAST,
    PAGE_DATA,
)
from ibdtool.parsers.codecs import FCRC32_LENGTH_BYTE, MARIADB_ALGORITHMS, MYSQL_ALGORITHMS
from ibdtool.parsers.constants import (
    FIL_PAGE_COMPRESS_FCRC32_MARKER,
    FIL_PAGE_COMPRESSED,
    FIL_PAGE_COMPRESSED_AND_ENCRYPTED,
    FIL_PAGE_DATA,
    FIL_PAGE_DATA_END,
    FIL_PAGE_PAGE_COMPRESSED,
    FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED,
    FIL_PAGE_TYPE_FSP_HDR,
    FIL_PAGE_TYPE_XDES,
    MYSQL_ENCRYPTED_TYPES,
    Algorithm,
)
from ibdtool.parsers.vendor import Vendor

#: Bytes of the header a stored page's envelope is read from (FIL header + MariaDB's 4 bytes of
#: compressed-page metadata); only the full_crc32 length byte lies further.
HEADER_BYTES = MARIADB_CLASSIC_ENC_PAYLOAD

#: The smallest full_crc32 image: header, at least one payload byte and the CRC, in whole units.
FCRC32_MIN_STORED = FCRC32_SIZE_UNIT
#: Encryption::MIN_ENCRYPTION_LEN: MySQL encrypts at least two AES blocks after the header
MYSQL_MIN_ENCRYPTION_LEN = 2 * 16 + FIL_PAGE_DATA
MYSQL_META_VERSION_1 = 1  # Compression::FIL_PAGE_VERSION_1
_FCRC32_UNITS = (1 << FCRC32_SIZE_BITS) - 1
_FCRC32_SHIFT = FCRC32_SIZE_UNIT.bit_length() - 1


class Kind(StrEnum):
    """What wraps a stored page."""

    PLAIN = "plain"  # the page itself (§1)
    ZIP = "zip"  # a ROW_FORMAT=COMPRESSED page (§7)
    MYSQL_COMPRESSED = "mysql_compressed"  # MySQL transparent compression, type 14 / 16 (§2)
    MARIADB_COMPRESSED = "mariadb_compressed"  # MariaDB classic page_compressed 34354/37401 (§3.1)
    FCRC32_COMPRESSED = "fcrc32_compressed"  # MariaDB full_crc32 page_compressed (§3.2)
    #: encrypted, not compressed: MySQL 15/17, a full_crc32 key version, a classic MariaDB key
    #: version in a tablespace whose crypt data says so
    ENCRYPTED = "encrypted"


class Checksum(StrEnum):
    """What the checksum stored in a page image covers (§6)."""

    PAGE = "page"  # the page's own crc32/innodb/none at 0 and in the trailer (§6.4)
    ZIP = "zip"  # the zip formula over the physical page (§6.5)
    FULL_CRC32 = "full_crc32"  # CRC-32C of [0, checksum_end - 4) at checksum_end - 4 (§6.6)
    #: MariaDB classic encryption (§3.2): the page (zip: zip) formula over the stored, encrypted
    #: bytes, stored at ``checksum_at`` (30); the one at 0 is the plaintext's
    CRYPT = "crypt"
    INNER = "inner"  # none on the image: the decompressed page carries its own (§2.1, §3.1)
    NONE = "none"  # the image cannot be verified without the key (§2.2, §3.1 encrypted)


class PageGeometry(Protocol):
    """What the envelope needs to know of a tablespace (a
    :class:`~ibdtool.parsers.space.SpaceFormat`)."""

    @property
    def physical_size(self) -> int: ...
    @property
    def logical_size(self) -> int: ...
    @property
    def full_crc32(self) -> bool: ...
    @property
    def fcrc32_algorithm(self) -> Algorithm | None: ...
    @property
    def zip(self) -> bool: ...
    @property
    def vendor(self) -> Vendor: ...
    @property
    def crypt_encrypted(self) -> bool:
        """MariaDB crypt data on page 0 says pages may be encrypted (classic rule, §3.2)."""
        ...


class Geometry(NamedTuple):
    """A :class:`PageGeometry` for readers without a SpaceFormat (the page-size vote)."""

    physical_size: int
    logical_size: int
    full_crc32: bool
    fcrc32_algorithm: Algorithm | None = None
    vendor: Vendor = Vendor.UNKNOWN
    crypt_encrypted: bool = False

    @property
    def zip(self) -> bool:
        return self.physical_size < self.logical_size


class Envelope(NamedTuple):
    """One stored page's envelope (see the module doc)."""

    kind: Kind
    stored_type: int  # FIL_PAGE_TYPE as written
    checksum: Checksum
    #: bytes the checksum covers from 0 (FULL_CRC32: the CRC is in the last 4 of them)
    checksum_end: int | None = None
    #: where that checksum is stored (CRYPT: 30; PAGE, ZIP: 0 and the trailer's own rule)
    checksum_at: int = 0
    algorithm: Algorithm = Algorithm.NONE
    encrypted: bool = False
    #: bytes of the slot the image needs; None for a whole-slot page or an impossible size
    stored_size: int | None = None
    payload_offset: int | None = None
    #: bytes handed to the decompressor; None when not known from the bytes given
    payload_length: int | None = None
    #: [start, end) of the ciphertext, as far as FORMATS.md establishes it
    encrypted_range: tuple[int, int] | None = None
    #: MySQL type 16, compression metadata version 1: the ciphertext runs from the payload to
    #: the write length, a filesystem block size not on disk (:meth:`written_encrypted_range`)
    encrypted_to_write_block: bool = False
    original_type: int | None = None  # type 14/16: the page type before compression (§2.1)
    problem: str | None = None  # the header holds numbers the format cannot

    @property
    def compressed(self) -> bool:
        return self.kind in _COMPRESSED_KINDS

    @property
    def check_lsn(self) -> bool:
        """Does the checksum verdict include the LSN copy in the trailer (§6.4, §6.6)?"""
        return self.kind is Kind.PLAIN and not self.encrypted

    def written_encrypted_range(self, block_size: int, physical: int) -> tuple[int, int] | None:
        """The ciphertext had the page been written in ``block_size`` blocks: ``encrypted_range``
        unless :attr:`encrypted_to_write_block`; None when that write would not fit the page."""
        if not self.encrypted_to_write_block:
            return self.encrypted_range
        if self.payload_offset is None or self.payload_end is None:
            return None
        end = -(-self.payload_end // block_size) * block_size
        return (self.payload_offset, end) if end <= physical else None

    @property
    def payload_end(self) -> int | None:
        if self.payload_offset is None or self.payload_length is None:
            return None
        return self.payload_offset + self.payload_length


_COMPRESSED_KINDS = frozenset(
    {Kind.MYSQL_COMPRESSED, Kind.MARIADB_COMPRESSED, Kind.FCRC32_COMPRESSED}
)


def fcrc32_declared_size(stored_type: int) -> int:
    """The image size a full_crc32 compressed type word declares, possible or not (§3.2)."""
    return (stored_type & _FCRC32_UNITS) << _FCRC32_SHIFT


def fcrc32_stored_size(stored_type: int, physical_size: int) -> int | None:
    """The image size of a full_crc32 compressed page; None if the format cannot hold it."""
    size = (stored_type & _FCRC32_UNITS) << _FCRC32_SHIFT
    return size if FCRC32_MIN_STORED <= size < physical_size else None


def fcrc32_payload_end(page: bytes | memoryview, size: int, algorithm: Algorithm) -> int:
    """End of the payload handed to the decompressor in an unencrypted image of ``size`` bytes.

    With a length byte: ``size + (lsb - 256 if lsb else 0) - 5``; without one the whole image,
    padding and CRC included (zlib, lzma and bzip2 stop at their end of stream) (§3.2 step 3).
    """
    if algorithm not in FCRC32_LENGTH_BYTE:
        return size
    lsb = page[size - FCRC32_CHECKSUM_SIZE - 1]
    end = size + (lsb - 256 if lsb else 0) - FCRC32_CHECKSUM_SIZE - 1
    return max(end, MARIADB_FCRC32_PAYLOAD)


def read_envelope(page: bytes | memoryview, geo: PageGeometry) -> Envelope:
    """The envelope of the stored page ``page`` (at least :data:`HEADER_BYTES`; the whole
    physical page for the full_crc32 length byte) of a tablespace of geometry ``geo``.

    The check order is FORMATS.md §10 step 2; the all-zero page is the caller's to spot.
    """
    stored_type = int.from_bytes(page[24:26], "big")
    physical = geo.physical_size
    if geo.full_crc32:
        encrypted = any(page[0:4])  # key version
        if stored_type & FIL_PAGE_COMPRESS_FCRC32_MARKER:
            return _fcrc32_compressed(page, stored_type, encrypted, geo)
        return _whole_slot(stored_type, physical, True, False, encrypted)
    if (
        geo.crypt_encrypted
        and stored_type not in _NEVER_CLASSIC_ENCRYPTED
        and read_key_version(page, False) != 0
    ):
        return _classic_encrypted(stored_type, physical, geo.zip)
    if stored_type in _SPECIAL_TYPES:
        vendor = geo.vendor
        if stored_type == FIL_PAGE_PAGE_COMPRESSED and vendor is not Vendor.MYSQL:
            return _mariadb_classic(page, stored_type, physical)
        if stored_type == FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED and vendor is not Vendor.MYSQL:
            return _mariadb_classic_encrypted(page, stored_type, physical)
        if stored_type == FIL_PAGE_COMPRESSED and not geo.zip:
            return _mysql_compressed(page, stored_type, geo)
        if stored_type == FIL_PAGE_COMPRESSED_AND_ENCRYPTED and vendor is not Vendor.MARIADB:
            return _mysql_compressed_encrypted(page, stored_type, physical)
        if stored_type in MYSQL_ENCRYPTED_TYPES and vendor is not Vendor.MARIADB:
            return _whole_slot(stored_type, physical, False, False, True)
    return _whole_slot(stored_type, physical, False, geo.zip, False)


def read_key_version(page: bytes | memoryview, full_crc32: bool) -> int:
    """MariaDB: the key version a page was encrypted with, 0 if it is not (§3.2): at 0 in
    full_crc32, at 26 (FIL_PAGE_FILE_FLUSH_LSN_OR_KEY_VERSION) in the classic format."""
    at = FCRC32_KEY_VERSION_OFFSET if full_crc32 else MARIADB_CRYPT_KEY_VERSION_OFFSET
    return int.from_bytes(page[at : at + 4], "big")


#: Classic pages never encrypted even in an encrypted tablespace (buf_page_decrypt_after_read):
#: extent descriptors, and page_compressed pages (37401 is their encrypted form, read below)
_NEVER_CLASSIC_ENCRYPTED = frozenset(
    {
        FIL_PAGE_TYPE_FSP_HDR,
        FIL_PAGE_TYPE_XDES,
        FIL_PAGE_PAGE_COMPRESSED,
        FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED,
    }
)

_SPECIAL_TYPES = frozenset(
    {FIL_PAGE_PAGE_COMPRESSED, FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED, FIL_PAGE_COMPRESSED}
    | MYSQL_ENCRYPTED_TYPES
)
#: classic type words of the only pages :func:`read_envelope` can give a stored size
_SIZED_TYPE_WORDS = frozenset(
    t.to_bytes(2, "big")
    for t in (
        FIL_PAGE_COMPRESSED,
        FIL_PAGE_COMPRESSED_AND_ENCRYPTED,
        FIL_PAGE_PAGE_COMPRESSED,
        FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED,
    )
)


def may_have_stored_size(type_word: bytes | memoryview, full_crc32: bool) -> bool:
    """From a stored page's FIL_PAGE_TYPE bytes (24..25) alone: can :func:`read_envelope` give
    it a ``stored_size``? False is certain (a whole-slot page); True means ask it. Lets a scan
    that needs only stored sizes (re-punching, the current-state figures of ``simulate``) skip
    every other page with one comparison."""
    if full_crc32:
        return bool(type_word[0] & (FIL_PAGE_COMPRESS_FCRC32_MARKER >> 8))
    return bytes(type_word) in _SIZED_TYPE_WORDS


def sized_pages(chunk: bytes | memoryview, page_size: int, full_crc32: bool) -> list[int]:
    """Indexes of the whole pages of ``chunk`` for which :func:`may_have_stored_size` holds,
    from two strided slices of their type words (one C pass a chunk; a Python comparison
    only where a type's high byte can mean a stored size)."""
    hi = bytes(chunk[24::page_size])[: len(chunk) // page_size]
    if full_crc32:
        if not hi.translate(None, _BELOW_FCRC32_MARKER):
            return []
        return [i for i, h in enumerate(hi) if h & 0x80]
    if not hi.translate(None, _NOT_SIZED_HIGH):
        return []
    lo = bytes(chunk[25::page_size])
    return [i for i, (h, low) in enumerate(zip(hi, lo, strict=False)) if (h << 8 | low) in _SIZED]


_SIZED = frozenset(int.from_bytes(t, "big") for t in _SIZED_TYPE_WORDS)
#: bytes ``translate`` deletes to leave the type high bytes that may mean a stored size
_BELOW_FCRC32_MARKER = bytes(range(FIL_PAGE_COMPRESS_FCRC32_MARKER >> 8))
_NOT_SIZED_HIGH = bytes(sorted(set(range(256)) - {t >> 8 for t in _SIZED}))


@cache
def _whole_slot(
    stored_type: int, physical: int, full_crc32: bool, zip: bool, encrypted: bool
) -> Envelope:
    """A page stored in its whole slot, uncompressed (few distinct ones: kept, not rebuilt)."""
    if full_crc32:
        # §3.2, §6.6: CRC-32C at the end of the page; an encrypted body from 26 to the CRC
        return Envelope(
            Kind.ENCRYPTED if encrypted else Kind.PLAIN,
            stored_type,
            Checksum.FULL_CRC32,
            physical,
            encrypted=encrypted,
            encrypted_range=(MARIADB_FCRC32_PAYLOAD, physical - 4) if encrypted else None,
        )
    if encrypted:
        # §2.2 MySQL 15/17: header plaintext, bytes 38..end (the trailer too) encrypted
        return Envelope(
            Kind.ENCRYPTED,
            stored_type,
            Checksum.NONE,
            encrypted=True,
            encrypted_range=(FIL_PAGE_DATA, physical),
        )
    if zip:
        # §7.1: the zlib stream of an index page starts at PAGE_DATA; its length needs inflating
        return Envelope(Kind.ZIP, stored_type, Checksum.ZIP, physical, payload_offset=PAGE_DATA)
    return Envelope(Kind.PLAIN, stored_type, Checksum.PAGE, physical)


@cache
def _classic_encrypted(stored_type: int, physical: int, zip: bool) -> Envelope:
    """§3.2 MariaDB classic encryption: a key version at 26, the checksum of the stored bytes
    at 30, bytes 38 .. size - 8 encrypted (header and trailer stay plaintext), zip or not."""
    return Envelope(
        Kind.ENCRYPTED,
        stored_type,
        Checksum.CRYPT,
        physical,
        checksum_at=MARIADB_CRYPT_CHECKSUM_OFFSET,
        encrypted=True,
        encrypted_range=(FIL_PAGE_DATA, physical - FIL_PAGE_DATA_END),
    )


def _fcrc32_compressed(
    page: bytes | memoryview, stored_type: int, encrypted: bool, geo: PageGeometry
) -> Envelope:
    """§3.2: the size in the type word, payload at 26, [length byte,] CRC-32C at size - 4."""
    physical = geo.physical_size
    algorithm = geo.fcrc32_algorithm or Algorithm.NONE
    size = fcrc32_stored_size(stored_type, physical)
    if size is None:
        return Envelope(
            Kind.FCRC32_COMPRESSED,
            stored_type,
            Checksum.FULL_CRC32,
            algorithm=algorithm,
            encrypted=encrypted,
            problem=f"compressed size {fcrc32_declared_size(stored_type)} out of range",
        )
    length: int | None = None
    if not encrypted and (algorithm not in FCRC32_LENGTH_BYTE or len(page) >= size):
        length = fcrc32_payload_end(page, size, algorithm) - MARIADB_FCRC32_PAYLOAD
    return Envelope(
        Kind.FCRC32_COMPRESSED,
        stored_type,
        Checksum.FULL_CRC32,
        size,
        algorithm=algorithm,
        encrypted=encrypted,
        stored_size=size,
        payload_offset=MARIADB_FCRC32_PAYLOAD,
        payload_length=length,
        encrypted_range=(MARIADB_FCRC32_PAYLOAD, size - FCRC32_CHECKSUM_SIZE)
        if encrypted
        else None,
    )


def _mariadb_classic(page: bytes | memoryview, stored_type: int, physical: int) -> Envelope:
    """§3.1 type 34354: the 8-byte algorithm id at 26, the payload length at 38, payload at 40."""
    algorithm_id, _space_id, length = MARIADB_CLASSIC_FAST.unpack_from(
        page, MARIADB_CLASSIC_COMP_OFFSET
    )
    algorithm = MARIADB_ALGORITHMS.get(algorithm_id, Algorithm.NONE)
    size_problem = _classic_length_problem(length, MARIADB_CLASSIC_PAYLOAD, physical)
    problem = size_problem
    if algorithm is Algorithm.NONE:
        problem = f"unknown page_compressed algorithm id {algorithm_id}"
    size_ok = size_problem is None
    return Envelope(
        Kind.MARIADB_COMPRESSED,
        stored_type,
        Checksum.INNER,
        algorithm=algorithm,
        stored_size=MARIADB_CLASSIC_PAYLOAD + length if size_ok else None,
        payload_offset=MARIADB_CLASSIC_PAYLOAD,
        payload_length=length if size_ok else None,
        problem=problem,
    )


def _mariadb_classic_encrypted(
    page: bytes | memoryview, stored_type: int, physical: int
) -> Envelope:
    """§3.1 type 37401: key version at 26, length at 38, algorithm id at 40, payload at 42."""
    _key, _chk, _space_id, length, algorithm_id = MARIADB_CLASSIC_ENC_FAST.unpack_from(
        page, MARIADB_CLASSIC_COMP_OFFSET
    )
    problem = _classic_length_problem(length, MARIADB_CLASSIC_ENC_PAYLOAD, physical)
    end = MARIADB_CLASSIC_ENC_PAYLOAD + length
    return Envelope(
        Kind.MARIADB_COMPRESSED,
        stored_type,
        Checksum.NONE,
        algorithm=MARIADB_ALGORITHMS.get(algorithm_id, Algorithm.NONE),
        encrypted=True,
        stored_size=None if problem else end,
        payload_offset=MARIADB_CLASSIC_ENC_PAYLOAD,
        payload_length=None if problem else length,
        encrypted_range=None if problem else (MARIADB_CLASSIC_ENC_PAYLOAD, end),
        problem=problem,
    )


def _classic_length_problem(length: int, header: int, physical: int) -> str | None:
    """MariaDB reads 1 ≤ FIL_PAGE_COMP_SIZE ≤ page size − header (§3.1)."""
    if length == 0:
        return "compressed length 0"
    if header + length > physical:
        return f"compressed length {length} exceeds the page"
    return None


def _mysql_compressed(page: bytes | memoryview, stored_type: int, geo: PageGeometry) -> Envelope:
    """§2.1 type 14: version, algorithm, original type and size, payload length at 26..33."""
    version, algorithm_id, original_type, original_size, length = MYSQL_META_FAST.unpack_from(
        page, MYSQL_COMPRESSION_META_OFFSET
    )
    size_ok = length > 0 and FIL_PAGE_DATA + length <= geo.physical_size
    problem: str | None = None
    if version not in (1, 2):
        problem = f"compression metadata version {version} is not 1 or 2"
    elif algorithm_id not in (1, 2):
        problem = f"unknown MySQL compression algorithm {algorithm_id}"
    elif original_size != geo.logical_size - FIL_PAGE_DATA or not size_ok:
        problem = f"compression sizes out of range ({original_size} / {length})"
    return Envelope(
        Kind.MYSQL_COMPRESSED,
        stored_type,
        Checksum.INNER,
        algorithm=MYSQL_ALGORITHMS.get(algorithm_id, Algorithm.NONE),
        stored_size=FIL_PAGE_DATA + length if size_ok else None,
        payload_offset=FIL_PAGE_DATA,
        payload_length=length if size_ok else None,
        original_type=original_type,
        problem=problem,
    )


def _mysql_compressed_encrypted(
    page: bytes | memoryview, stored_type: int, physical: int
) -> Envelope:
    """§2.2 type 16: a type-14 page whose body is encrypted; its metadata stays plaintext.

    The ciphertext starts at 38 (Encryption::encrypt, checked against MySQL 8.0.33). With
    compression metadata version 2 it is the image, at least :data:`MYSQL_MIN_ENCRYPTION_LEN`
    bytes; with version 1 it runs to the write length, the image rounded up to the filesystem
    block the server wrote with, which is not on disk: no ``encrypted_range`` then, but
    :meth:`Envelope.written_encrypted_range` for a block size.
    """
    version, algorithm_id, original_type, _size, length = MYSQL_META_FAST.unpack_from(
        page, MYSQL_COMPRESSION_META_OFFSET
    )
    size_ok = length > 0 and FIL_PAGE_DATA + length <= physical
    rounded = version == MYSQL_META_VERSION_1
    encrypted_range: tuple[int, int] | None = None
    if size_ok and not rounded:
        end = max(FIL_PAGE_DATA + length, MYSQL_MIN_ENCRYPTION_LEN)
        encrypted_range = (FIL_PAGE_DATA, end) if end <= physical else None
    return Envelope(
        Kind.MYSQL_COMPRESSED,
        stored_type,
        Checksum.NONE,
        algorithm=MYSQL_ALGORITHMS.get(algorithm_id, Algorithm.NONE),
        encrypted=True,
        stored_size=FIL_PAGE_DATA + length if size_ok else None,
        payload_offset=FIL_PAGE_DATA,
        payload_length=length if size_ok else None,
        encrypted_range=encrypted_range,
        encrypted_to_write_block=size_ok and rounded,
        original_type=original_type,
        problem=None if size_ok else f"compressed length {length} out of range",
    )
