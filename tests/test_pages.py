"""Page families: every field sits where FORMATS.md says and holds the bytes found there.

The offsets in :mod:`ibdtool.parsers.pages` are derived from the construct declarations; the oracle
is the layout tables of ``../shared/FORMATS.md`` (offset, size, server name), read here, and the
page bytes themselves, read back at each field's place.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import ibdtool.parsers.pages
from ibdtool.parsers.constants import (
    FIL_PAGE_INODE,
    FIL_PAGE_SDI_BLOB,
    FIL_PAGE_TYPE_BLOB,
    FIL_PAGE_TYPE_FSP_HDR,
    FIL_PAGE_TYPE_XDES,
    index_types,
)
from ibdtool.parsers.pages import (
    PAGE_FAMILIES,
    Field,
    blob,
    fsp,
    index,
    inode,
    logical_layout,
    stored_layout,
)
from ibdtool.parsers.pages.logical import FAMILIES
from ibdtool.parsers.vendor import Vendor
from ibdtool.tablespace.reader import Tablespace
from tests.catalog import CORPUS, SHARED
from tests.conftest import SAMPLES, require_corpus

require_corpus()


def _page0_written(path: Path) -> bool:
    """A file whose page 0 is all zeros was never flushed: not a tablespace (test_corpus)."""
    with path.open("rb") as f:
        return any(f.read(16384))


FILES = [
    p for p in sorted(CORPUS.rglob("*.ibd")) + sorted(SAMPLES.rglob("*.ibd")) if _page0_written(p)
]
_ROW = re.compile(r"^\| (\d+) \| (?:(\d+) \| )?(\d+) \| ([^|]+)\|", re.MULTILINE)
_NAME = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")
#: shown without the bits the server keeps elsewhere in the word (§5.1)
_MASKED = {"PAGE_N_HEAP", "PAGE_DIRECTION"}


def _documented() -> dict[str, set[tuple[int, int]]]:
    """FORMATS.md table rows ``| [relative |] offset | size | NAME… |`` as name -> places."""
    text = (SHARED / "FORMATS.md").read_text()
    out: dict[str, set[tuple[int, int]]] = {}
    for first, second, size, cell in _ROW.findall(text):
        offset = int(second) if second else int(first)
        for name in _NAME.findall(cell.split(":")[0]):
            out.setdefault(name, set()).add((offset, int(size)))
    return out


DOCUMENTED = _documented()


def _number(value: str) -> int | None:
    word = value.split()[0] if value else ""
    if word.startswith("0x"):
        return int(word, 16)
    return int(word) if word.isdigit() else None


def _check(fields: list[Field], image: bytes, where: str, seen: set[str]) -> None:
    for f in fields:
        assert f.offset >= 0 and f.offset + f.size <= len(image), f"{where}: {f}"
        if f.name in DOCUMENTED:
            assert (f.offset, f.size) in DOCUMENTED[f.name], f"{where}: {f}"
            seen.add(f.name)
        n = _number(f.value)
        if f.size and n is not None and f.name not in _MASKED:
            stored = int.from_bytes(image[f.offset : f.offset + f.size], "big")
            assert stored == n, f"{where}: {f} but the bytes hold {stored}"


def _check_file(path: Path, seen: set[str], max_pages: int | None = None) -> None:
    """Check every field and region of both images of the file's first ``max_pages`` pages."""
    with Tablespace(path) as ts:
        for n in range(ts.n_pages if max_pages is None else min(ts.n_pages, max_pages)):
            info = ts.page(n)
            stored, logical = ts.raw_page(n), ts.logical_page(n)
            for image, layout in (
                (stored, stored_layout(stored, info, ts.format)),
                (logical, logical_layout(logical, info, ts.format)),
            ):
                fields = [f for g in layout.groups for f in g.fields]
                _check(fields, image, f"{path.name} page {n}", seen)
                for r in layout.regions:
                    assert 0 <= r.start < r.end <= len(image), f"{path.name} page {n}: {r}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_fields_sit_where_formats_md_says_and_hold_the_page_bytes(path: Path) -> None:
    _check_file(path, set())


def test_the_corpus_checks_every_documented_header_field() -> None:
    """The FIL, compression, FSP and index header names FORMATS.md tabulates are all checked."""
    wanted = {
        "FIL_PAGE_SPACE_OR_CHKSUM",
        "FIL_PAGE_OFFSET",
        "FIL_PAGE_PREV",
        "FIL_PAGE_NEXT",
        "FIL_PAGE_LSN",
        "FIL_PAGE_TYPE",
        "FIL_PAGE_FILE_FLUSH_LSN",
        "FIL_PAGE_SPACE_ID",
        "FIL_PAGE_VERSION",
        "FIL_PAGE_ALGORITHM_V1",
        "FIL_PAGE_ORIGINAL_TYPE_V1",
        "FIL_PAGE_ORIGINAL_SIZE_V1",
        "FIL_PAGE_COMPRESS_SIZE_V1",
        "FIL_PAGE_COMP_SIZE",
        "FSP_SPACE_ID",
        "FSP_SIZE",
        "FSP_FREE_LIMIT",
        "FSP_SPACE_FLAGS",
        "FSP_FRAG_N_USED",
        "FSP_FREE",
        "FSP_FREE_FRAG",
        "FSP_FULL_FRAG",
        "FSP_SEG_ID",
        "FSP_SEG_INODES_FULL",
        "FSP_SEG_INODES_FREE",
        "PAGE_N_DIR_SLOTS",
        "PAGE_HEAP_TOP",
        "PAGE_N_HEAP",
        "PAGE_FREE",
        "PAGE_GARBAGE",
        "PAGE_LAST_INSERT",
        "PAGE_DIRECTION",
        "PAGE_N_DIRECTION",
        "PAGE_N_RECS",
        "PAGE_MAX_TRX_ID",
        "PAGE_LEVEL",
        "PAGE_INDEX_ID",
        "PAGE_BTR_SEG_LEAF",
        "PAGE_BTR_SEG_TOP",
    }
    assert wanted <= DOCUMENTED.keys(), wanted - DOCUMENTED.keys()
    seen: set[str] = set()
    for path in FILES:
        _check_file(path, seen, max_pages=8)
    assert wanted <= seen, wanted - seen


def test_page_families_map_each_vendors_types_once() -> None:
    for vendor in Vendor:
        families = PAGE_FAMILIES[vendor]
        assert all(families[t] is index for t in index_types(vendor))
        assert families[FIL_PAGE_TYPE_FSP_HDR] is fsp and families[FIL_PAGE_TYPE_XDES] is fsp
        assert families[FIL_PAGE_INODE] is inode and families[FIL_PAGE_TYPE_BLOB] is blob
    # type 18: SDI_BLOB on MySQL 8, MariaDB's INSTANT root (an index page) elsewhere (§1.3)
    assert PAGE_FAMILIES[Vendor.MYSQL][FIL_PAGE_SDI_BLOB] is blob
    assert PAGE_FAMILIES[Vendor.MARIADB][FIL_PAGE_SDI_BLOB] is index


def test_every_family_module_is_registered() -> None:
    """A module that follows the family contract but is missing from FAMILIES lays out nothing."""
    modules = [
        importlib.import_module(f"ibdtool.parsers.pages.{m.name}")
        for m in pkgutil.iter_modules(ibdtool.parsers.pages.__path__)
    ]
    contract = [m for m in modules if hasattr(m, "page_types") and hasattr(m, "layout")]
    assert sorted(m.__name__ for m in contract) == sorted(m.__name__ for m in FAMILIES)  # type: ignore[attr-defined]
