"""Every real file of ../shared/corpus read without error and checked against CATALOG.md."""

from __future__ import annotations

from collections import Counter

import pytest

from ibdtool.errors import InputError
from ibdtool.parsers.constants import Algorithm
from ibdtool.tablespace.inspect import inspect_path
from ibdtool.tablespace.reader import Tablespace
from tests.catalog import CORPUS, CatalogEntry, load_catalog
from tests.conftest import require_corpus

require_corpus()
CATALOG = load_catalog()

# CATALOG.md's checksum names -> ibdtool's (its "crc32" covers the zip variant, "nomatch" is
# seen only on encrypted pages, which ibdtool reports as unverifiable)
_CATALOG_CHECKSUM = {
    "crc32": {"crc32", "zip_crc32"},
    "innodb": {"innodb", "zip_adler"},
    "full_crc32": {"full_crc32"},
    "zero": {"empty"},
    "nomatch": {"encrypted"},
}


def _ids(e: CatalogEntry) -> str:
    return e.rel


def _never_written(e: CatalogEntry) -> bool:
    """The catalog found only zero pages (a table created, never flushed): no tablespace."""
    return set(e.checksums or ()) == {"zero"}


#: the files that are tablespaces; the never-written ones are refused (see below)
TABLESPACES = [e for e in CATALOG if not _never_written(e)]


def test_catalog_covers_every_corpus_tablespace() -> None:
    listed = {e.rel for e in CATALOG}
    on_disk = {
        str(p.relative_to(CORPUS))
        for p in CORPUS.rglob("*")
        if p.is_file() and p.suffix not in (".md", ".tsv", ".cfg") and "keyring" not in p.name
    }
    assert on_disk, "no corpus files found"
    assert on_disk <= listed, sorted(on_disk - listed)


@pytest.mark.parametrize("entry", [e for e in CATALOG if _never_written(e)], ids=_ids)
def test_never_written_file_is_not_a_tablespace(entry: CatalogEntry) -> None:
    with pytest.raises(InputError, match="page 0 is all zeros"):
        inspect_path(entry.path)


@pytest.mark.parametrize("entry", TABLESPACES, ids=_ids)
def test_corpus_file_matches_catalog(entry: CatalogEntry) -> None:
    r = inspect_path(entry.path)
    assert r.fmt.logical_size == entry.logical
    assert r.fmt.physical_size == entry.physical
    if entry.flags is not None:
        assert r.fmt.flags.raw == entry.flags
    if entry.size is not None:
        assert r.logical_size == entry.size
    # page counts by real type
    assert dict(r.page_types) == entry.page_types
    # checksums: every page verified by the algorithm the catalog found
    if entry.checksums:
        got: Counter[str] = Counter()
        for algo, n in r.checksum_by_algo.items():
            name = next(k for k, v in _CATALOG_CHECKSUM.items() if algo in v)
            got[name] += n
        assert dict(got) == entry.checksums
    else:
        # made-here files: "every page's checksum verifies" (after decompression)
        assert r.invalid_pages == []
        assert r.unverifiable == 0
    if entry.compression:
        assert dict(r.compression) == entry.compression
    assert r.problems == []


@pytest.mark.parametrize(
    "entry", [e for e in CATALOG if e.compression and set(e.compression) != {"none"}], ids=_ids
)
def test_every_compressed_page_decompresses_and_verifies(entry: CatalogEntry) -> None:
    with Tablespace(entry.path) as ts:
        compressed = [p for p in ts.pages() if p.compression is not Algorithm.NONE]
        assert compressed
        for info in compressed:
            assert info.problem is None, (info.page_no, info.problem)
            assert info.checksum_valid is True, info.page_no
            assert info.real_type >= 0 and not info.type_name.startswith("PAGE_COMPRESSED")
            # a decompressed page is a whole logical page with its own page number
            _, _, page = ts.page_with_data(info.page_no)
            assert len(page) == ts.logical_size
            assert int.from_bytes(page[4:8], "big") == info.page_no


@pytest.mark.parametrize("entry", TABLESPACES, ids=_ids)
def test_stored_page_numbers_match_positions(entry: CatalogEntry) -> None:
    """CATALOG.md: 'the page number at offset 4 equals the page index for every non-zero page'."""
    with Tablespace(entry.path) as ts:
        for info in ts.pages():
            if not info.empty:
                assert info.stored_page_no == info.page_no


SDI_FILES = [
    e
    for e in CATALOG
    if "SDI flag" in e.notes and "ENCRYPTED" not in e.page_types and e.page_types.get("SDI")
]


def _expected_table(entry: CatalogEntry) -> str:
    """The table name: from the server's export .cfg beside the file when there is one
    (u32 version, u32 length + host name, u32 length + "schema/table"), else the file name."""
    cfg = entry.path.with_suffix(".cfg")
    if cfg.is_file():
        data = cfg.read_bytes()
        host_len = int.from_bytes(data[4:8], "big")
        off = 8 + host_len
        name_len = int.from_bytes(data[off : off + 4], "big")
        return data[off + 4 : off + 4 + name_len].rstrip(b"\0").decode().rsplit("/", 1)[1]
    return entry.path.stem


@pytest.mark.parametrize("entry", SDI_FILES, ids=_ids)
def test_sdi_agrees_with_page_0_and_the_export_cfg(entry: CatalogEntry) -> None:
    """The SDI's Tablespace object carries the FSP flags and space id that page 0 holds
    (independently parsed here), its name is "schema/<Table object's name>", and where the
    server's export .cfg sits beside the file, the table name is the one the .cfg gives."""
    with Tablespace(entry.path) as ts:
        entries = ts.sdi()
        page0 = ts.raw_page(0)
    tables = [e for e in entries if e.sdi_type == 1]
    spaces = [e for e in entries if e.sdi_type == 2]
    assert len(tables) == 1 and len(spaces) == 1
    table = tables[0].obj["dd_object"]["name"]
    space = spaces[0].obj["dd_object"]
    assert space["name"].endswith("/" + table)
    private = dict(kv.split("=", 1) for kv in space["se_private_data"].split(";") if "=" in kv)
    assert int(private["flags"]) == int.from_bytes(page0[54:58], "big")
    assert int(private["id"]) == int.from_bytes(page0[38:42], "big")
    if entry.path.with_suffix(".cfg").is_file():
        assert table == _expected_table(entry)
    assert 80000 <= tables[0].obj["mysqld_version_id"] < 100000


@pytest.mark.parametrize("entry", TABLESPACES, ids=_ids)
def test_extent_descriptors_agree_with_page_contents(entry: CatalogEntry) -> None:
    """A second computation of free space: every page the XDES bitmaps call used holds data
    (never all zero), and every all-zero page is called free (InnoDB never writes a used page
    as zeros; freed pages keep stale data, so free pages may hold data)."""
    with Tablespace(entry.path) as ts:
        free = ts.free_window(0, ts.n_pages)
        infos = list(ts.pages())
    for info in infos:
        if info.empty and info.page_no < ts.format.free_limit:
            assert free[info.page_no], info.page_no
        if not free[info.page_no]:
            assert not info.empty, info.page_no
