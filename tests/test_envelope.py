"""The stored-page envelope against real files, FORMATS.md's rules and the construct declarations.

Oracles: CATALOG.md's per-file compression tallies (an independent pass over the files); the
CRC-32C stored at the end of every full_crc32 image; each server's write rule
(:mod:`ibdtool.parsers.layout`, computed forward from the payload, where the envelope reads backward
from the header); the page inside every compressed image, whose own checksum must verify; the
zero tail MariaDB leaves after a classic payload (§3.1).
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from ibdtool.parsers import checksum
from ibdtool.parsers._structs_gen import MARIADB_CLASSIC_FAST, MYSQL_META_FAST
from ibdtool.parsers.codecs import FCRC32_LENGTH_BYTE
from ibdtool.parsers.constants import (
    FIL_PAGE_COMPRESSED_AND_ENCRYPTED,
    FIL_PAGE_PAGE_COMPRESSED,
    Algorithm,
)
from ibdtool.parsers.crc32c_fast import crc32c
from ibdtool.parsers.envelope import (
    HEADER_BYTES,
    Checksum,
    Geometry,
    Kind,
    fcrc32_declared_size,
    fcrc32_stored_size,
    may_have_stored_size,
    read_envelope,
)
from ibdtool.parsers.flags import PAGE_SIZES
from ibdtool.parsers.inflate import inflate
from ibdtool.parsers.layout import mariadb_fcrc32_stored_size, mysql_write_size
from ibdtool.parsers.structs import (
    FCRC32_SIZE_UNIT,
    MARIADB_CRYPT_CHECKSUM_OFFSET,
    MARIADB_CRYPT_KEY_VERSION_OFFSET,
    MYSQL_COMPRESSION_META_OFFSET,
    Fcrc32CompressedType,
    MariaDBClassicCompHeader,
    MariaDBClassicCryptHeader,
    MariaDBClassicEncCompHeader,
)
from ibdtool.tablespace.reader import Tablespace
from tests.catalog import CatalogEntry, load_catalog
from tests.conftest import require_corpus

require_corpus()
CATALOG = load_catalog()
COMPRESSED = [e for e in CATALOG if e.compression and set(e.compression) != {"none"}]
TALLIED = [e for e in CATALOG if e.compression]


def _ids(e: CatalogEntry) -> str:
    return e.rel


def _stored_pages(entry: CatalogEntry) -> tuple[Tablespace, list[bytes]]:
    with Tablespace(entry.path) as ts:
        psize = ts.physical_size
        data = entry.path.read_bytes()
        return ts, [data[n * psize : (n + 1) * psize] for n in range(ts.n_pages)]


@pytest.mark.parametrize("entry", TALLIED, ids=_ids)
def test_envelope_algorithms_match_the_catalog(entry: CatalogEntry) -> None:
    ts, pages = _stored_pages(entry)
    got = Counter(read_envelope(p, ts.format).algorithm.value for p in pages)
    assert dict(got) == entry.compression
    # the header alone tells the algorithm (what ``server``'s page count reads)
    heads = Counter(read_envelope(p[:HEADER_BYTES], ts.format).algorithm.value for p in pages)
    assert heads == got


@pytest.mark.parametrize("entry", TALLIED, ids=_ids)
def test_the_type_word_prefilter_never_hides_a_stored_size(entry: CatalogEntry) -> None:
    """``may_have_stored_size`` from two bytes: wherever the whole envelope has a stored size it
    says True (what re-punching and simulate's current state rely on to skip the rest), and
    on a compressed file it does skip the pages that have none."""
    ts, pages = _stored_pages(entry)
    sized = skipped = 0
    for page in pages:
        has = read_envelope(page, ts.format).stored_size is not None
        maybe = may_have_stored_size(page[24:26], ts.format.full_crc32)
        assert maybe or not has
        sized += has
        skipped += not maybe
    if entry in COMPRESSED and sized:
        assert skipped > 0  # page 0 at least is a whole slot


@pytest.mark.parametrize("entry", COMPRESSED, ids=_ids)
def test_every_compressed_image_is_delimited_exactly(entry: CatalogEntry) -> None:
    ts, pages = _stored_pages(entry)
    fmt = ts.format
    psize, logical = fmt.physical_size, fmt.logical_size
    seen = 0
    for n, page in enumerate(pages):
        env = read_envelope(page, fmt)
        if not env.compressed:
            continue
        seen += 1
        assert env.problem is None, (n, env)
        assert env.stored_size is not None and 0 < env.stored_size < psize, (n, env)
        inner, consumed = inflate(page, env, logical)
        assert checksum.verify_page(inner, logical)[0] or env.kind is Kind.FCRC32_COMPRESSED, n
        size = env.stored_size
        if env.kind is Kind.FCRC32_COMPRESSED:
            # §6.6: the CRC-32C of the image sits in its last 4 bytes ...
            assert int.from_bytes(page[size - 4 : size], "big") == crc32c(page[: size - 4]), n
            # ... and the write rule of §3.2 from the true payload length gives the same size
            true_len = env.payload_length if env.algorithm in FCRC32_LENGTH_BYTE else consumed
            assert true_len is not None
            assert mariadb_fcrc32_stored_size(env.algorithm, true_len, logical) == size, n
        elif env.kind is Kind.MARIADB_COMPRESSED:
            assert not any(page[size:]), n  # §3.1: zero fill after the payload [verified]
            assert env.payload_length == consumed
        else:
            assert env.kind is Kind.MYSQL_COMPRESSED
            assert env.original_type == int.from_bytes(inner[24:26], "big")
    assert seen == sum(k for a, k in entry.compression.items() if a != "none")


def test_fcrc32_type_word_follows_its_declaration() -> None:
    edges = {0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF} | {0x8000 | p >> 8 for p in PAGE_SIZES}
    for word in sorted(edges | set(range(0, 1 << 16, 7))):
        parsed = Fcrc32CompressedType.parse(word.to_bytes(2, "big"))
        assert parsed.marker == bool(word & 0x8000)
        assert fcrc32_declared_size(word) == parsed.size_units * FCRC32_SIZE_UNIT
        for psize in PAGE_SIZES:
            size = parsed.size_units * FCRC32_SIZE_UNIT
            # §3.2: the smallest image is one unit; it must stay below the page
            expected = size if FCRC32_SIZE_UNIT <= size < psize else None
            assert fcrc32_stored_size(word, psize) == expected


@pytest.mark.parametrize("entry", COMPRESSED, ids=_ids)
def test_classic_header_fast_path_equals_construct(entry: CatalogEntry) -> None:
    _, pages = _stored_pages(entry)
    for page in pages:
        if int.from_bytes(page[24:26], "big") == FIL_PAGE_PAGE_COMPRESSED:
            parsed = MariaDBClassicCompHeader.parse(page[26:40])
            fast = MARIADB_CLASSIC_FAST.unpack_from(page, 26)
            assert fast == (parsed.algorithm, parsed.space_id, parsed.comp_size)


def test_no_header_yields_an_impossible_size() -> None:
    """Random headers over every geometry: a size is inside the slot, or there is none."""
    rng = random.Random("ibdtool-envelope")
    special = (14, 15, 16, 17, 34354, 37401, 0x8000, 0x80FF, 0xFFFF)
    for _ in range(20000):
        logical = rng.choice(PAGE_SIZES)
        physical = rng.choice((logical, logical // 2)) if logical <= 16384 else logical
        geo = Geometry(
            physical,
            logical,
            rng.random() < 0.5,
            rng.choice((None, *Algorithm)),
            crypt_encrypted=rng.random() < 0.3,
        )
        head = bytearray(rng.randbytes(HEADER_BYTES))
        if rng.random() < 0.7:
            head[24:26] = rng.choice(special).to_bytes(2, "big")
        env = read_envelope(bytes(head), geo)
        if env.stored_size is not None:
            assert 0 < env.stored_size <= physical, (env, geo)
        if env.payload_end is not None:
            assert env.payload_end <= physical, (env, geo)
        if env.encrypted_range is not None:
            start, end = env.encrypted_range
            assert 0 < start < end <= physical, (env, geo)
        for block in (512, 4096, 65536):
            written = env.written_encrypted_range(block, physical)
            if written is not None:
                assert 0 < written[0] < written[1] <= physical, (env, geo)


def test_classic_crypt_bytes_follow_their_declarations() -> None:
    """The key version and post-encryption checksum the envelope reads are the declared fields
    at 26..33 (§1.1 FIL_PAGE_FILE_FLUSH_LSN_OR_KEY_VERSION), as 37401's header declares them."""
    enc_fields = [sub.name for sub in MariaDBClassicEncCompHeader.subcons]
    crypt_fields = [sub.name for sub in MariaDBClassicCryptHeader.subcons]
    assert enc_fields[: len(crypt_fields)] == crypt_fields
    assert MARIADB_CRYPT_CHECKSUM_OFFSET - MARIADB_CRYPT_KEY_VERSION_OFFSET == 4
    rng = random.Random("ibdtool-crypt")
    for _ in range(2000):
        head = bytearray(rng.randbytes(HEADER_BYTES))
        head[24:26] = rng.choice((0, 2, 3, 17855)).to_bytes(2, "big")
        parsed = MariaDBClassicCryptHeader.parse(bytes(head[26:34]))
        for crypt in (False, True):
            env = read_envelope(bytes(head), Geometry(16384, 16384, False, crypt_encrypted=crypt))
            assert env.encrypted is (crypt and parsed.key_version != 0)
            assert (env.checksum is Checksum.CRYPT) is env.encrypted
            if env.encrypted:
                assert env.checksum_at == MARIADB_CRYPT_CHECKSUM_OFFSET
                assert env.encrypted_range == (38, 16384 - 8)  # header and trailer stay plain


def test_mysql_type16_ciphertext_ends_where_the_server_writes() -> None:
    """Type 16, metadata version 1: the ciphertext ends at the write length that MySQL's write
    rule (:func:`ibdtool.parsers.layout.mysql_write_size`, computed forward) gives for each
    block."""
    rng = random.Random("ibdtool-type16")
    checked = 0
    for _ in range(5000):
        physical = rng.choice((4096, 8192, 16384, 32768, 65536))
        head = bytearray(HEADER_BYTES)
        head[24:26] = FIL_PAGE_COMPRESSED_AND_ENCRYPTED.to_bytes(2, "big")
        length = rng.randrange(1, physical)
        version = rng.choice((1, 2))
        MYSQL_META_FAST.pack_into(
            head, MYSQL_COMPRESSION_META_OFFSET, version, 1, 17855, physical - 38, length
        )
        env = read_envelope(bytes(head), Geometry(physical, physical, False))
        for block in (512, 1024, 4096, 8192):
            written = mysql_write_size(length, physical, block)
            if written is None or env.problem is not None:
                continue
            got = env.written_encrypted_range(block, physical)
            if version == 1:
                assert got == (38, written), (length, block)
            else:  # version 2: the image, at least two AES blocks
                assert got == (38, max(38 + length, 70)), (length, block)
            checked += 1
    assert checked > 1000


def test_classic_envelopes_read_once_are_read_envelopes() -> None:
    """``tablespace.checksum.classic_envelope`` (the envelope of a MariaDB classic image read
    from its header bytes, one read per distinct header) against ``read_envelope`` of the
    whole page and the tablespace's format: every classic image of the samples and the
    corpus, and copies with the header bytes after the type word made random (algorithm ids
    unknown, lengths 0 and past the page), in crc32 tablespaces of both vendors' readings."""
    from ibdtool.parsers.vendor import Vendor
    from ibdtool.tablespace.checksum import classic_envelope
    from tests.test_header_scan import open_tablespaces

    rng = random.Random(34354)
    seen = 0
    for ts in open_tablespaces():
        fmt = ts.format
        if fmt.full_crc32 or fmt.vendor is Vendor.MYSQL:
            continue
        for n in range(ts.n_pages):
            page = bytearray(ts.stored_page(n))
            if int.from_bytes(page[24:26], "big") != FIL_PAGE_PAGE_COMPRESSED:
                continue
            for k in range(4):
                if k:
                    page[26 + rng.randrange(14)] = rng.randrange(256)
                if k == 3:
                    page[38:40] = rng.choice([b"\0\0", b"\xff\xff", b"\x3f\xd8"])
                want = read_envelope(bytes(page), fmt)
                got = classic_envelope(bytes(page[24:40]), fmt.physical_size, ts.logical_size)
                assert got == want, (ts.path, n, k)
            seen += 1
    assert seen > 50
