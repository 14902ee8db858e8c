"""The struct.Struct fast path derived from each construct declaration parses like construct."""

from __future__ import annotations

import pytest

from parsers.constants import FIL_PAGE_COMPRESSED
from parsers.pagecolumns import CRC32_FIELDS, FCRC32_FIELDS, INDEX_FIELDS, columns
from parsers.structs import (
    FIL_HEADER_FAST,
    INDEX_HEADER_FAST,
    MYSQL_META_FAST,
    FilHeader,
    FilTrailer,
    FspHeader,
    FullCrc32Trailer,
    IndexHeader,
    MySQLCompressionMeta,
    fast,
)
from tests.catalog import CORPUS
from tests.conftest import require_corpus

require_corpus()
FILES = sorted(p for p in CORPUS.rglob("*.ibd"))


#: every column the scans use (``prev``/``next``/``space_id``: the TUI's records)
_MORE_FIELDS = (*INDEX_FIELDS, "prev", "next", "space_id")


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
    # parsers.pagecolumns: every field of every page of the file at once, both trailers
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
