"""The struct.Struct fast path derived from each construct declaration parses like construct."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from construct import ConstructError

from ibdtool.parsers import _structs_gen as gen
from ibdtool.parsers import structs
from ibdtool.parsers._structs_gen import FIL_HEADER_FAST, INDEX_HEADER_FAST, MYSQL_META_FAST
from ibdtool.parsers.constants import FIL_PAGE_COMPRESSED
from ibdtool.parsers.cryptinfo import read_mariadb_crypt, read_mysql_info
from ibdtool.parsers.pagecolumns import CRC32_FIELDS, FCRC32_FIELDS, INDEX_FIELDS, columns
from ibdtool.parsers.space import detect_format, encryption_info_offset
from ibdtool.parsers.structs import (
    GENERATED,
    MARIADB_CRYPT_DATA,
    MYSQL_ENCRYPTION_INFO,
    MYSQL_ENCRYPTION_INFO_V1,
    FilHeader,
    FilTrailer,
    FspHeader,
    FullCrc32Trailer,
    IndexHeader,
    MySQLCompressionMeta,
    const_fields,
    fast,
    flat_fields,
)
from tests.catalog import CORPUS
from tests.conftest import REPO, SAMPLES, require_corpus

require_corpus()
FILES = sorted(p for p in CORPUS.rglob("*.ibd"))
#: the files the generated formats are checked on: every sample and every corpus file
ALL_FILES = sorted(SAMPLES.rglob("*.ibd")) + FILES


#: every column the scans use (``prev``/``next``/``space_id``: the TUI's records)
_MORE_FIELDS = (*INDEX_FIELDS, "prev", "next", "space_id")


def _ids(p: Path) -> str:
    return f"{p.parent.name}/{p.name}"


def _flatten(container: object, prefix: str = "") -> list[object]:
    out: list[object] = []
    for key, value in dict(container).items():  # type: ignore[call-overload]
        if key.startswith("_"):
            continue
        if hasattr(value, "items"):
            out.extend(_flatten(value, prefix + key + "_"))
        else:
            out.append(value)
    return out


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_fast_headers_equal_construct_on_every_page(path) -> None:  # type: ignore[no-untyped-def]
    data = path.read_bytes()
    psize = 16384 if len(data) >= 16384 else len(data)
    flags = int.from_bytes(data[54:58], "big")
    zss = (flags >> 1) & 0xF
    if not flags & 0x10 and zss:
        psize = 512 << zss
    for off in range(0, len(data) - psize + 1, psize):
        page = data[off : off + psize]
        assert list(FIL_HEADER_FAST.unpack_from(page, 0)) == _flatten(FilHeader.parse(page))
        assert list(INDEX_HEADER_FAST.unpack_from(page, 38)) == _flatten(
            IndexHeader.parse(page[38:])
        )
        if int.from_bytes(page[24:26], "big") == FIL_PAGE_COMPRESSED:
            assert list(MYSQL_META_FAST.unpack_from(page, 26)) == _flatten(
                MySQLCompressionMeta.parse(page[26:])
            )
    # ibdtool.parsers.pagecolumns: every field of every page of the file at once, both trailers
    whole = len(data) // psize * psize
    for full_crc32, trailer, fields in (
        (False, FilTrailer, CRC32_FIELDS),
        (True, FullCrc32Trailer, FCRC32_FIELDS),
    ):
        cols = columns(memoryview(data)[:whole], psize, full_crc32, (*fields, *_MORE_FIELDS))
        for k, off in enumerate(range(0, whole, psize)):
            page = data[off : off + psize]
            expected = {
                **dict(FilHeader.parse(page)),
                **dict(IndexHeader.parse(page[38:])),
                **{f"trailer_{f}": v for f, v in dict(trailer.parse(page[-8:])).items()},
            }
            got = {name: col[k] for name, col in cols.items()}
            assert got == {name: expected[name] for name in got}, (path, off // psize)


def test_declared_sizes_match_formats_md() -> None:
    assert FilHeader.sizeof() == 38  # §1.1
    assert FspHeader.sizeof() == 112  # §4.1
    assert IndexHeader.sizeof() == 56  # §5.1: PAGE_DATA = 38 + 56 = 94
    assert MySQLCompressionMeta.sizeof() == 8  # §2.1: bytes 26..33
    packer, tup = fast(FspHeader, "FspTuple")
    assert packer.size == 112 and "free_first_page" in tup._fields


# --- parsers/_structs_gen.py: derived from the declarations, never edited ---------------------


def test_regenerating_gives_the_committed_module(tmp_path: Path) -> None:
    """scripts/gen_structs.py writes parsers/_structs_gen.py byte for byte as committed: a
    declaration or constant changed without regenerating (or a hand edit) fails here."""
    out = tmp_path / "gen.py"
    subprocess.run([sys.executable, str(REPO / "scripts" / "gen_structs.py"), str(out)], check=True)
    assert out.read_bytes() == (REPO / "parsers" / "_structs_gen.py").read_bytes()


def test_generated_formats_are_the_declarations() -> None:
    """Each generated format, field list, NamedTuple and Const table is what the construct
    declaration gives, and each generated constant is the one ibdtool.parsers.structs computes."""
    for prefix, typename, con in GENERATED:
        fields = getattr(gen, f"{prefix}_FIELDS")
        assert list(fields) == flat_fields(con), prefix
        packer = getattr(gen, f"{prefix}_FAST")
        assert packer.format == fast(con, typename)[0].format, prefix
        assert packer.size == con.sizeof(), prefix
        assert getattr(gen, typename)._fields == tuple(name for name, _ in fields), prefix
        assert getattr(gen, f"{prefix}_CONST", {}) == const_fields(con), prefix
    constants = {
        name: value
        for name, value in vars(structs).items()
        if name.isupper() and isinstance(value, int | bytes)
    }
    assert len(constants) > 20
    for name, value in constants.items():
        assert getattr(gen, name) == value, name
    assert {"magic": bytes.fromhex("730E0C524574"), "iv_len": 16} == gen.MARIADB_CRYPT_DATA_CONST


def _page_size(data: bytes) -> int:
    flags = int.from_bytes(data[54:58], "big")
    if flags & 0x10:  # MariaDB full_crc32: the page size in bits 0..3
        ssize = flags & 0xF
        return 512 << ssize if ssize else 16384
    zss, ssize = (flags >> 1) & 0xF, (flags >> 6) & 0xF
    if zss:
        return 512 << zss
    return 512 << ssize if ssize else 16384


def _generated_parse(prefix: str, typename: str, page: bytes, at: int) -> list[object] | None:
    packer = getattr(gen, f"{prefix}_FAST")
    got = getattr(gen, typename)._make(packer.unpack_from(page, at))
    consts = getattr(gen, f"{prefix}_CONST", {})
    if any(getattr(got, name) != value for name, value in consts.items()):
        return None
    return list(got)


@pytest.mark.parametrize("path", ALL_FILES, ids=_ids)
def test_generated_structs_decode_like_construct(path: Path) -> None:
    """Every generated struct, at the offsets the readers use it (and at 0, 26, 38 and the
    trailer of every page), gives construct's fields; where construct rejects a Const field,
    so does the generated Const table."""
    data = path.read_bytes()
    if len(data) < 16384:
        return
    psize = _page_size(data)
    if psize > len(data):
        psize = 16384
    offsets_of_page0 = set()
    for logical in (4096, 8192, 16384, 32768, 65536):
        for physical in {logical, psize}:
            e = encryption_info_offset(logical, physical)
            offsets_of_page0 |= {e, 38 + e}
    compared = rejected = 0
    for off in range(0, len(data) - psize + 1, psize):
        page = data[off : off + psize]
        for prefix, typename, con in GENERATED:
            size = con.sizeof()
            spots = {0, 26, 38, psize - size} | (offsets_of_page0 if off == 0 else set())
            for at in sorted(a for a in spots if a + size <= psize):
                try:
                    expected: list[object] | None = _flatten(con.parse(page[at : at + size]))
                except ConstructError:
                    expected = None
                    rejected += 1
                assert _generated_parse(prefix, typename, page, at) == expected, (
                    path,
                    off // psize,
                    prefix,
                    at,
                )
                compared += 1
    assert compared and rejected  # the Const of MariaDB crypt data rejects most bytes


def _mariadb_crypt_by_construct(page0: bytes, e: int) -> object:
    at = 38 + e
    try:
        c = MARIADB_CRYPT_DATA.parse(page0[at : at + MARIADB_CRYPT_DATA.sizeof()])
    except ConstructError:
        return None
    if c.scheme not in (0, 1):
        return None
    return (at, c.scheme, c.iv, c.min_key_version, c.key_id, c.encryption)


@pytest.mark.parametrize("path", ALL_FILES, ids=_ids)
def test_page0_encryption_info_reads_like_construct(path: Path) -> None:
    """ibdtool.parsers.cryptinfo (generated formats) reads page 0's crypt data and encryption info
    as the construct declarations do, also with each byte of the MariaDB header damaged."""
    page0 = path.read_bytes()[:65536]
    if len(page0) < 16384:
        return
    psize = _page_size(page0)
    for logical in sorted({4096, 8192, 16384, 32768, 65536} | {psize}):
        e = encryption_info_offset(logical, psize if psize < logical else logical)
        got = read_mariadb_crypt(page0, e)
        want = _mariadb_crypt_by_construct(page0, e)
        assert (
            None
            if got is None
            else (got.offset, got.scheme, got.iv, got.min_key_version, got.key_id, got.encryption)
        ) == want, (path, logical)
        if want is not None:  # damage the magic, the IV length: both readers refuse
            for k in (38 + e, 38 + e + 5, 38 + e + 7):
                bad = bytearray(page0)
                bad[k] ^= 0x01
                assert read_mariadb_crypt(bytes(bad), e) is None
                assert _mariadb_crypt_by_construct(bytes(bad), e) is None
        info = read_mysql_info(page0, e)
        if info is not None:
            raw = page0[e : e + MYSQL_ENCRYPTION_INFO.sizeof() + 4]
            if info.version < 3 and raw[7:11] == bytes(4):
                raw = raw[:7] + raw[11:]
            if info.version == 1:
                c = MYSQL_ENCRYPTION_INFO_V1.parse(raw)
                assert info.server_uuid is None
            else:
                c = MYSQL_ENCRYPTION_INFO.parse(raw)
                assert info.server_uuid == c.server_uuid.decode("ascii", errors="replace")
            assert (info.master_key_id, info.encrypted_key_iv, info.checksum) == (
                c.master_key_id,
                c.encrypted_key_iv,
                c.checksum,
            )


def test_page0_comparison_reaches_mysql_info() -> None:
    """The comparison above meets real MySQL encryption info (no sample or corpus file has
    MariaDB crypt data: that one is built below, and read on real servers' files by
    tests/test_crypt_mariadb.py)."""
    found = 0
    for path in ALL_FILES:
        page0 = path.read_bytes()[:65536]
        if len(page0) < 16384:
            continue
        psize = _page_size(page0)
        for logical in sorted({4096, 8192, 16384, 32768, 65536} | {psize}):
            e = encryption_info_offset(logical, psize if psize < logical else logical)
            found += read_mysql_info(page0, e) is not None
    assert found >= 3, found


@pytest.mark.parametrize("scheme", [0, 1, 2])
def test_mariadb_crypt_data_built_by_construct_reads_alike(scheme: int) -> None:
    """Crypt data that construct builds into a real page 0 reads as construct parses it, and
    a damaged magic or IV length, or an unknown scheme, is refused by both."""
    page0 = bytearray((SAMPLES / "mariadb" / "p16k-crc32_plain.ibd").read_bytes()[:16384])
    e = encryption_info_offset(16384, 16384)
    blob = MARIADB_CRYPT_DATA.build(
        {
            "scheme": scheme,
            "iv": bytes(range(16)),
            "min_key_version": 7,
            "key_id": 0x01020304,
            "encryption": 1,
        }
    )
    page0[38 + e : 38 + e + len(blob)] = blob
    got = read_mariadb_crypt(bytes(page0), e)
    want = _mariadb_crypt_by_construct(bytes(page0), e)
    assert (want is None) == (scheme == 2)
    assert (
        None
        if got is None
        else (got.offset, got.scheme, got.iv, got.min_key_version, got.key_id, got.encryption)
    ) == want
    # the same through detect_format, whose look at the magic decides whether to read it
    whole = bytearray((SAMPLES / "mariadb" / "p16k-crc32_plain.ibd").read_bytes())
    whole[:16384] = page0
    fmt = detect_format(lambda off, n: bytes(whole[off : off + n]), len(whole))
    assert fmt.mariadb_crypt == read_mariadb_crypt(bytes(page0), e)
    assert (fmt.mariadb_crypt is None) == (scheme == 2)
    for k in range(len(blob)):
        bad = bytearray(page0)
        bad[38 + e + k] ^= 0x10
        got = read_mariadb_crypt(bytes(bad), e)
        want = _mariadb_crypt_by_construct(bytes(bad), e)
        assert (
            None
            if got is None
            else (got.offset, got.scheme, got.iv, got.min_key_version, got.key_id, got.encryption)
        ) == want, k
