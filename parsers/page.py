"""Decode one physical page into a typed record: type, compression, checksum verdict, index stats.

Follows the check order of FORMATS.md §10 step 2: empty page, then the page's envelope
(:mod:`ibdtool.parsers.envelope`: full_crc32, MariaDB classic page_compressed, MySQL transparent
compression and encryption, zip, plain) says what the checksum covers and where the compressed
stream is. Compressed images are decompressed (:mod:`ibdtool.parsers.inflate`) and the resulting
page's own checksum is verified, as innochecksum does. An envelope with impossible numbers is
damage.

Scans ask for the header alone (``header_only``): a full_crc32 compressed image is checked by
the CRC-32C of the image itself (§6.6), and the real type, index id, level, record count and
fill sit in the first :data:`HEADER_PREFIX` bytes of the page inside, so only those are
inflated (:meth:`ibdtool.parsers.codecs.Codec.partial_decompress`). ``compressed_size`` is then the
payload the envelope bounds (for zlib, lzma and bzip2 it runs to the CRC, padding included),
not the bytes the stream really took, and a stream broken past the header is not seen — what
the server wrote is what the CRC vouches for. Images whose checksum lies inside the page (MySQL
type 14, MariaDB classic) are always inflated whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ibdtool.parsers import checksum
from ibdtool.parsers._structs_gen import (
    FIL_HEADER_FAST,
    INDEX_HEADER_FAST,
    PAGE_DATA,
    PAGE_HEADER,
    IndexHeaderTuple,
)
from ibdtool.parsers.checksum import ChecksumAlgo
from ibdtool.parsers.codecs import CodecError, partial_decompress, zlib_stream
from ibdtool.parsers.constants import (
    FIL_PAGE_RTREE,
    FIL_PAGE_TYPE_ALLOCATED,
    MYSQL_ENCRYPTED_TYPES,
    UNIV_ZIP_SIZE_MAX,
    Algorithm,
    Vendor,
    index_types,
    page_type_name,
)
from ibdtool.parsers.envelope import (
    Checksum,
    Envelope,
    Kind,
    may_have_stored_size,
    read_envelope,
    read_key_version,
)
from ibdtool.parsers.errors import ParseError
from ibdtool.parsers.index_fill import index_fill
from ibdtool.parsers.inflate import inflate
from ibdtool.parsers.space import SpaceFormat

#: Bytes of a logical page that the header fields of a scan need: FIL header, index header.
HEADER_PREFIX = PAGE_DATA
_ZERO_CACHE: dict[int, bytes] = {}

#: Real-type name of a page whose body cannot be read without the key (§2.2, §3).
ENCRYPTED_NAME = "ENCRYPTED"
DOUBLEWRITE_NAME = "DOUBLEWRITE"


@dataclass(frozen=True, slots=True)
class IndexStats:
    """INDEX/SDI/RTREE page header summary (§5.1, §5.3)."""

    index_id: int
    level: int
    n_recs: int
    compact: bool
    heap_top: int
    garbage: int
    data_size: int
    fill: float  # data_size / free_space_of_empty, 0..1


@dataclass(frozen=True, slots=True)
class PageInfo:
    """Everything ibdtool knows about one page."""

    page_no: int  # position in the file
    stored_page_no: int  # FIL_PAGE_OFFSET as written
    stored_type: int  # FIL_PAGE_TYPE as written (14, 34354, 0x80xx …)
    real_type: int  # type after decompression (-1: unknown, e.g. encrypted)
    type_name: str  # InnoDB's name of the real type
    compression: Algorithm  # page compression of the stored image
    compressed_size: int | None  # payload bytes of the compressed stream
    stored_size: int | None  # bytes of the stored image that matter (header+payload[+crc])
    checksum_valid: bool | None  # None: cannot be verified (encrypted)
    checksum_algo: ChecksumAlgo
    lsn: int
    space_id: int
    prev: int
    next: int
    empty: bool = False  # all-zero page
    encrypted: bool = False  # stored encrypted and not decrypted: the body is unknowable
    decrypted: bool = False  # stored encrypted, decoded from its plaintext (a key was given)
    key_version: int = 0  # MariaDB: the key version an encrypted page was written with
    torn: bool = False  # LSN copy in the trailer differs from the header
    index: IndexStats | None = None
    #: zip pages: length of the zlib stream at 94 (§7.2)
    zip_stream: int | None = None
    problem: str | None = None

    @property
    def is_compressed(self) -> bool:
        return self.compression is not Algorithm.NONE


def _zero_page(size: int) -> bytes:
    z = _ZERO_CACHE.get(size)
    if z is None:
        z = _ZERO_CACHE[size] = bytes(size)
    return z


def index_stats(page: bytes | memoryview, logical_size: int) -> IndexStats:
    """Index page header fields and fill (§5.1, §5.3)."""
    h: Any = IndexHeaderTuple._make(INDEX_HEADER_FAST.unpack_from(page, PAGE_HEADER))
    data_size, fill = index_fill(h.n_heap, h.heap_top, h.garbage, logical_size)
    return IndexStats(
        index_id=h.index_id,
        level=h.level,
        n_recs=h.n_recs,
        compact=bool(h.n_heap & 0x8000),
        heap_top=h.heap_top,
        garbage=h.garbage,
        data_size=data_size,
        fill=fill,
    )


def zip_stream_length(
    page: bytes | memoryview, physical_size: int, logical_size: int = UNIV_ZIP_SIZE_MAX
) -> int | None:
    """Length Z of the zlib stream at PAGE_DATA of a zip index page (§7.2), None if broken.

    The stream holds the index's field descriptions and the records of one ``logical_size``
    page, each inflated by ``page_zip_decompress`` into the page frame, so it cannot inflate to
    more than two pages; one that would is broken, and is cut off there rather than inflated."""
    try:
        return zlib_stream(memoryview(page)[PAGE_DATA:physical_size], 2 * logical_size)[1]
    except CodecError:
        return None


def _header_prefix(mv: memoryview, env: Envelope, logical_size: int) -> bytes:
    """The first :data:`HEADER_PREFIX` bytes of the page inside a MariaDB compressed image."""
    start, end = env.payload_offset, env.payload_end
    if start is None or end is None:
        raise CodecError(f"{env.kind.value} page has no compressed payload")
    return partial_decompress(env.algorithm, mv[start:end], HEADER_PREFIX, logical_size)


def _type_of(page: bytes | memoryview) -> int:
    return int.from_bytes(page[24:26], "big")


def logical_image(buf: memoryview, fmt: SpaceFormat) -> bytes | memoryview:
    """The page :func:`decode_page` hands its ``keep_page``, without any of its checks: a
    page-compressed image (MariaDB full_crc32 or classic, MySQL type 14) decompressed; every
    other page, and an image that cannot be decompressed (damaged, encrypted, an unknown or
    missing codec), as ``buf`` itself, not copied. For scans that need each page's bytes and
    no verdict on them (``simulate``): one comparison of the type word settles most pages
    (:func:`ibdtool.parsers.envelope.may_have_stored_size`)."""
    if not may_have_stored_size(buf[24:26], fmt.full_crc32):
        return buf
    env = read_envelope(buf, fmt)
    if env.kind is Kind.FCRC32_COMPRESSED:
        if env.stored_size is None or env.algorithm is Algorithm.NONE:
            return buf  # decode_page reports these and inflates nothing
    elif env.checksum is not Checksum.INNER:
        return buf
    try:
        return inflate(buf, env, fmt.logical_size)[0]
    except CodecError:
        return buf


def decode_page(
    buf: bytes | memoryview,
    page_no: int,
    fmt: SpaceFormat,
    *,
    keep_page: list[bytes] | None = None,
    header_only: bool = False,
) -> PageInfo:
    """Decode the physical page ``buf`` (exactly ``fmt.physical_size`` bytes) at ``page_no``.

    ``keep_page``, when given, receives the decompressed logical page (for hex views);
    ``header_only`` inflates only what the header fields need where the checksum allows it
    (see the module doc); it is ignored when ``keep_page`` is given.
    """
    physical = fmt.physical_size
    logical = fmt.logical_size
    mv = memoryview(buf)
    if len(mv) != physical:
        raise ParseError(f"page {page_no}: {len(mv)} bytes, expected {physical}")
    # memoryview == bytes compares element by element (~35 µs a page); bytes == bytes is memcmp
    if not any(mv[:38]) and mv.tobytes() == _zero_page(physical):
        if keep_page is not None:
            keep_page.append(bytes(physical))
        return PageInfo(
            page_no=page_no,
            stored_page_no=0,
            stored_type=0,
            real_type=FIL_PAGE_TYPE_ALLOCATED,
            type_name="ALLOCATED",
            compression=Algorithm.NONE,
            compressed_size=None,
            stored_size=None,
            checksum_valid=True,
            checksum_algo=ChecksumAlgo.EMPTY,
            lsn=0,
            space_id=0,
            prev=0,
            next=0,
            empty=True,
        )
    fil = FIL_HEADER_FAST.unpack_from(mv, 0)
    _chk, stored_no, prev, nxt, lsn, stored_type, _flush_lsn, space_id = fil
    vendor = fmt.vendor
    compressed_size: int | None = None
    encrypted = False
    torn = False
    problem: str | None = None
    zip_stream: int | None = None
    page: bytes | memoryview = mv  # the logical page once decoded
    real_type = stored_type
    valid: bool | None
    algo: ChecksumAlgo

    env = read_envelope(mv, fmt)
    compression = env.algorithm
    stored_size = env.stored_size
    if env.kind is Kind.FCRC32_COMPRESSED:
        # §3.2 / §6.6: CRC-32C at the end of the compressed image, then decompress
        if env.problem is not None or stored_size is None:
            valid, algo, real_type = False, ChecksumAlgo.INVALID, -1
            problem = env.problem
        else:
            valid, algo, _ = checksum.verify_full_crc32(mv, stored_size, check_lsn=False)
            encrypted = env.encrypted
            if encrypted:
                real_type = -1
            elif compression is Algorithm.NONE:
                problem = "page_compressed marker in a tablespace without an algorithm"
                real_type = -1
            else:
                try:
                    if header_only and keep_page is None:
                        page = _header_prefix(mv, env, logical)
                        compressed_size = env.payload_length
                    else:
                        page, compressed_size = inflate(mv, env, logical)
                    real_type = _type_of(page)
                except CodecError as exc:
                    problem = f"cannot decompress {compression.value} page: {exc}"
                    real_type = -1
    elif env.checksum is Checksum.FULL_CRC32:
        # §3.2 / §6.6: key version at 0 (encrypted if not 0), CRC-32C at the end of the page
        encrypted = env.encrypted
        valid, algo, torn = checksum.verify_full_crc32(mv, physical, check_lsn=env.check_lsn)
    elif env.checksum is Checksum.CRYPT:
        # §3.2 classic encrypted page: the checksum at 30 covers the ciphertext (the one at 0
        # is the plaintext's), as fil_space_verify_crypt_checksum and innochecksum check it
        encrypted = True
        valid, algo = checksum.verify_crypt_checksum(mv, physical, fmt.zip, env.checksum_at)
        real_type = -1
    elif env.checksum is Checksum.NONE:
        # §2.2, §3.1: MySQL 15/16/17 and MariaDB 37401, header plaintext, body encrypted
        encrypted = True
        compressed_size = env.payload_length
        valid, algo, real_type = None, ChecksumAlgo.ENCRYPTED, -1
        if env.problem is not None:
            valid, algo, problem = False, ChecksumAlgo.INVALID, env.problem
    elif env.checksum is Checksum.INNER:
        # §2.1, §3.1: no checksum on the image; decompress, then verify the page inside
        compressed_size = env.payload_length
        if env.problem is not None:
            valid, algo, real_type = False, ChecksumAlgo.INVALID, -1
            problem = env.problem
        else:
            try:
                page, _ = inflate(mv, env, logical)
                real_type = _type_of(page)
                valid, algo, torn = checksum.verify_page(page, logical)
            except CodecError as exc:
                valid, algo, real_type = False, ChecksumAlgo.INVALID, -1
                problem = f"cannot decompress {compression.value} page: {exc}"
    elif env.checksum is Checksum.ZIP:
        valid, algo = checksum.verify_zip_page(mv, physical)
    else:
        valid, algo, torn = checksum.verify_page(mv, physical)

    key_version = 0
    if encrypted and vendor is not Vendor.MYSQL and stored_type not in MYSQL_ENCRYPTED_TYPES:
        key_version = read_key_version(mv, fmt.full_crc32)
    if encrypted and real_type != -1:
        # the header's type is plaintext, but nothing behind it can be read or checked
        real_type = -1
    if (
        encrypted
        and not fmt.full_crc32
        and not fmt.flags.encryption
        and fmt.encryption_info is None
        and fmt.detected_by == "flags"
    ):
        # page 0 says nothing here is encrypted: the type field itself is damaged
        valid, algo = False, ChecksumAlgo.INVALID
        problem = problem or f"encrypted page type {stored_type} in an unencrypted tablespace"
    if stored_no != page_no and problem is None:
        # a page written at the wrong offset: its checksum may verify, but not as this page
        valid = False
        problem = f"page number {stored_no} stored at position {page_no}"
    if torn and problem is None:
        problem = "torn page: LSN in the trailer differs from the header"
    if valid is False and problem is None:
        problem = "checksum mismatch"

    index: IndexStats | None = None
    if real_type == -1:
        type_name = ENCRYPTED_NAME if encrypted else "UNKNOWN"
    else:
        type_name = page_type_name(real_type, vendor)
        if real_type in index_types(vendor) and not encrypted:
            index = index_stats(page, logical)
            if fmt.zip and real_type != FIL_PAGE_RTREE:
                zip_stream = zip_stream_length(mv, physical, logical)
                if zip_stream is None and problem is None:
                    problem = "zlib stream of the compressed index page does not inflate"
            elif fmt.zip:
                zip_stream = zip_stream_length(mv, physical, logical)
    if keep_page is not None:
        keep_page.append(bytes(page))
    return PageInfo(
        page_no=page_no,
        stored_page_no=stored_no,
        stored_type=stored_type,
        real_type=real_type,
        type_name=type_name,
        compression=compression,
        compressed_size=compressed_size,
        stored_size=stored_size,
        checksum_valid=valid,
        checksum_algo=algo,
        lsn=lsn,
        space_id=space_id,
        prev=prev,
        next=nxt,
        encrypted=encrypted,
        key_version=key_version,
        torn=torn,
        index=index,
        zip_stream=zip_stream,
        problem=problem,
    )
