"""Deterministic robustness: damaged real tablespaces may only ever raise ``InputError``.

Real corpus files of every layout (MySQL 8 plain, MySQL 5.7 type-14 zlib, MariaDB full_crc32
lz4, MariaDB classic page_compressed zlib, ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8) are damaged
with a seeded RNG: random bytes, hostile page headers (full_crc32 compressed markers with tiny or
oversized sizes, MySQL type 14 and MariaDB 34354 with impossible metadata), hostile index
headers, random FSP flags, SDI roots pointing to themselves or out of the file, crafted SDI
records, truncation. Every case runs the in-process API: ``inspect_path``, ``check_file``,
``page_rows`` and ``Tablespace.sdi``. A page whose header lies must come back as an invalid page
with a ``problem``; the rest of the file must still be read.
"""

from __future__ import annotations

import random
import traceback
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ibdtool.checkscan import check_file
from ibdtool.errors import InputError
from ibdtool.inspect import inspect_path
from ibdtool.pagerows import page_rows
from ibdtool.tablespace import Tablespace
from parsers.space import sdi_offset
from tests.conftest import corpus_file

FILES = {
    "mysql8-plain": "mysql-made/mysql8015-t_plain_1k.ibd",
    "mysql57-zlib14": "mysql-made/mysql5722-t_zlib_1k.ibd",
    "mariadb-fcrc32-lz4": "mariadb-10.11/p16k-pc_lz4-1000rows.ibd",
    "mariadb-classic-zlib": "mariadb-10.11/p16k-crc32_pc_zlib-1000rows.ibd",
    "mysql8-zip-kbs8": "mysql-made/mysql8015-t_kbs8_1k.ibd",
}
CASES_PER_FILE = 60  # 300 random cases in all
VICTIM = 4  # the first index page in every file above
SDI_RECORD_DATA = 33  # §8.3: the JSON's zlib stream follows 33 bytes after the record origin

# stored FIL_PAGE_TYPE values with hostile metadata, written over a real page
HOSTILE_TYPES = {
    "fcrc32-marker-255": 0x80FF,  # compressed image of 0x7F00 bytes (past the page)
    "fcrc32-marker-1": 0x8001,  # compressed image of 256 bytes
    "fcrc32-marker-0": 0x8000,  # compressed image of 0 bytes
    "all-ones": 0xFFFF,
    "mysql-compressed": 14,
    "mysql-encrypted": 15,
    "mariadb-page-compressed": 34354,
    "mariadb-page-compressed-encrypted": 37401,
    "sdi": 17853,
    "sdi-blob": 18,
}


@dataclass(frozen=True)
class Original:
    """A corpus file's bytes and the geometry the mutators need."""

    data: bytes
    physical: int
    logical: int
    n_pages: int
    sdi_root: int | None

    @property
    def sdi_pointer(self) -> int:
        """Offset of the SDI version (then root page number) on page 0 (§4.1)."""
        return sdi_offset(self.logical, self.physical)


_ORIGINALS: dict[str, Original] = {}


def original(kind: str) -> Original:
    if kind not in _ORIGINALS:
        path = corpus_file(FILES[kind])
        with Tablespace(path) as ts:
            _ORIGINALS[kind] = Original(
                path.read_bytes(),
                ts.physical_size,
                ts.logical_size,
                ts.n_pages,
                ts.format.sdi_root,
            )
    return _ORIGINALS[kind]


def put(data: bytearray, offset: int, value: int, size: int) -> None:
    data[offset : offset + size] = value.to_bytes(size, "big")


def run_everything(path: Path) -> dict[str, Any]:
    """Every entry point on ``path``; an ``InputError`` is an answer, anything else escapes."""
    out: dict[str, Any] = {}
    for name, fn in (
        ("inspect", lambda: inspect_path(path)),
        ("checksum", lambda: check_file(str(path), jobs=1)),
        ("pages", lambda: list(page_rows(str(path)))),
        ("sdi", lambda: _sdi(path)),
    ):
        try:
            out[name] = fn()
        except InputError as exc:
            assert exc.message, name
            out[name] = exc
    return out


def _sdi(path: Path) -> Any:
    with Tablespace(path) as ts:
        return ts.sdi()


# --- mutators: each damages ``data`` and returns a short description ---------------------------

Mutator = Callable[[bytearray, Original, random.Random], str]


def random_bytes(data: bytearray, o: Original, rng: random.Random) -> str:
    page = rng.randrange(o.n_pages)
    n = rng.choice((1, 3, 50, 400))
    for _ in range(n):
        data[page * o.physical + rng.randrange(o.physical)] = rng.randrange(256)
    return f"{n} random bytes in page {page}"


def random_run(data: bytearray, o: Original, rng: random.Random) -> str:
    page = rng.randrange(o.n_pages)
    start = page * o.physical + rng.randrange(o.physical)
    n = rng.randrange(1, 2000)
    data[start : start + n] = rng.randbytes(len(data[start : start + n]))
    return f"{n} random bytes at {start}"


def hostile_type(data: bytearray, o: Original, rng: random.Random) -> str:
    page = rng.randrange(1, o.n_pages)
    name, value = rng.choice(sorted(HOSTILE_TYPES.items()))
    put(data, page * o.physical + 24, value, 2)
    return f"page {page} type {name}"


def hostile_mysql_compressed(data: bytearray, o: Original, rng: random.Random) -> str:
    """Type 14 with version 1/2 and sizes 0, 1, 65535 or the page's (§2.1 metadata at 26)."""
    page = rng.randrange(1, o.n_pages)
    base = page * o.physical
    put(data, base + 24, 14, 2)
    version, algo = rng.choice((1, 2, 0, 255)), rng.choice((1, 2, 0, 7))
    orig, comp = (rng.choice((0, 1, 65535, o.logical - 38, o.physical)) for _ in range(2))
    data[base + 26], data[base + 27] = version, algo
    put(data, base + 28, rng.choice((17855, 0, 0xFFFF)), 2)
    put(data, base + 30, orig, 2)
    put(data, base + 32, comp, 2)
    return f"page {page} type 14 v{version} algo {algo} sizes {orig}/{comp}"


def hostile_mariadb_compressed(data: bytearray, o: Original, rng: random.Random) -> str:
    """34354 with unknown or real algorithm ids and lengths past the page (§3.1)."""
    page = rng.randrange(1, o.n_pages)
    base = page * o.physical
    put(data, base + 24, 34354, 2)
    algo = rng.choice((0, 1, 2, 3, 4, 5, 6, 7, 255, 1 << 40))
    length = rng.choice((0, 1, 2, 65535, o.physical - 40, o.physical - 39))
    put(data, base + 26, algo, 8)
    put(data, base + 38, length, 2)
    return f"page {page} type 34354 algo {algo} length {length}"


def hostile_fcrc32_size(data: bytearray, o: Original, rng: random.Random) -> str:
    """A full_crc32 compressed marker whose size is tiny, exactly the page, or past it."""
    page = rng.randrange(1, o.n_pages)
    size_units = rng.choice((0, 1, 2, o.physical >> 8, (o.physical >> 8) - 1, 0x7FFF))
    put(data, page * o.physical + 24, 0x8000 | size_units, 2)
    return f"page {page} fcrc32 marker size {size_units << 8}"


def hostile_index_header(data: bytearray, o: Original, rng: random.Random) -> str:
    page = rng.randrange(1, o.n_pages)
    base = page * o.physical
    field = rng.choice((38, 40, 42, 44, 46, 48, 50, 52, 54, 64))  # §5.1, 2-byte fields
    value = rng.choice((0, 1, 0x7FFF, 0x8000, 0xFFFF, o.logical))
    put(data, base + field, value, 2)
    return f"page {page} index header +{field - 38} = {value}"


def random_flags(data: bytearray, o: Original, rng: random.Random) -> str:
    value = rng.choice((rng.getrandbits(32), rng.getrandbits(17), rng.getrandbits(8)))
    put(data, 54, value, 4)
    return f"FSP flags 0x{value:x}"


def sdi_root_pointer(data: bytearray, o: Original, rng: random.Random) -> str:
    root = rng.choice((0, 1, 2, 3, o.n_pages - 1, o.n_pages, o.n_pages + 7, 0xFFFFFFFF))
    put(data, o.sdi_pointer, rng.choice((1, 1, 1, 2)), 4)
    put(data, o.sdi_pointer + 4, root, 4)
    return f"SDI root pointer {root}"


def sdi_self_loop(data: bytearray, o: Original, rng: random.Random) -> str:
    root = o.sdi_root or 3
    base = root * o.physical
    how = rng.choice(("next", "level", "both"))
    if how in ("next", "both"):
        put(data, base + 12, root, 4)  # FIL_PAGE_NEXT
    if how in ("level", "both"):
        put(data, base + 64, rng.choice((1, 2, 0xFFFF)), 2)  # PAGE_LEVEL: descend ...
        first = (99 + int.from_bytes(data[base + 97 : base + 99], "big")) & 0xFFFF
        if first + 16 <= o.physical:
            put(data, base + first + 12, root, 4)  # ... into the root itself
    return f"SDI root {root} points to itself ({how})"


def truncate(data: bytearray, o: Original, rng: random.Random) -> str:
    cut = rng.randrange(len(data))
    del data[cut:]
    return f"truncated at {cut}"


MUTATORS: list[tuple[Mutator, int]] = [
    (random_bytes, 6),
    (random_run, 3),
    (hostile_type, 4),
    (hostile_mysql_compressed, 3),
    (hostile_mariadb_compressed, 3),
    (hostile_fcrc32_size, 3),
    (hostile_index_header, 3),
    (random_flags, 2),
    (sdi_root_pointer, 2),
    (sdi_self_loop, 2),
]


@pytest.mark.parametrize("kind", sorted(FILES))
def test_random_damage_raises_only_input_error(kind: str, tmp_path: Path) -> None:
    o = original(kind)
    rng = random.Random(f"ibdtool-fuzz-{kind}")
    mutators, weights = zip(*MUTATORS, strict=True)
    failures: list[str] = []
    for case in range(CASES_PER_FILE):
        data = bytearray(o.data)
        done = [
            rng.choices(mutators, weights)[0](data, o, rng) for _ in range(rng.choice((1, 1, 2, 4)))
        ]
        if rng.random() < 0.1:  # last: the other mutators expect whole pages
            done.append(truncate(data, o, rng))
        path = tmp_path / f"{kind}-{case}.ibd"
        path.write_bytes(bytes(data))
        try:
            run_everything(path)
        except Exception as exc:
            where = "".join(traceback.format_exception(exc, limit=-2))
            failures.append(f"case {case} ({'; '.join(done)}): {where}")
        else:
            path.unlink()
    assert not failures, f"{len(failures)} of {CASES_PER_FILE} cases raised:\n" + "\n".join(
        failures[:5]
    )


@pytest.mark.parametrize("hostile", sorted(HOSTILE_TYPES))
@pytest.mark.parametrize("kind", sorted(FILES))
def test_hostile_page_type_is_an_invalid_page(kind: str, hostile: str, tmp_path: Path) -> None:
    """Only the victim page is invalid, with its problem named; every other page still reads."""
    o = original(kind)
    data = bytearray(o.data)
    put(data, VICTIM * o.physical + 24, HOSTILE_TYPES[hostile], 2)
    if data == o.data:
        return  # the page already had that type
    _assert_only_victim_invalid(data, o, tmp_path)


HOSTILE_HEADERS: dict[str, Callable[[bytearray, int, Original], None]] = {
    # MySQL type 14 (§2.1): version 1, sizes 0 and 65535
    "mysql14-v1-size0": lambda d, b, o: _mysql14(d, b, 1, 1, 0, 0),
    "mysql14-v1-size65535": lambda d, b, o: _mysql14(d, b, 1, 1, 65535, 65535),
    "mysql14-v1-comp-past-page": lambda d, b, o: _mysql14(d, b, 1, 1, o.logical - 38, 65535),
    "mysql14-v1-comp-0": lambda d, b, o: _mysql14(d, b, 1, 2, o.logical - 38, 0),
    "mysql14-v2-garbage": lambda d, b, o: _mysql14(d, b, 2, 1, o.logical - 38, 300),
    "mysql14-v9": lambda d, b, o: _mysql14(d, b, 9, 1, o.logical - 38, 300),
    # MariaDB 34354 (§3.1): unknown algorithm, length past the page, zero length
    "mariadb34354-algo-99": lambda d, b, o: _maria(d, b, 99, 100),
    "mariadb34354-past-page": lambda d, b, o: _maria(d, b, 1, 65535),
    "mariadb34354-len-0": lambda d, b, o: _maria(d, b, 2, 0),
    "mariadb34354-lzo-garbage": lambda d, b, o: _maria(d, b, 4, 500),
    # full_crc32 marker (§3.2) with sizes 0, 256 and past the page
    "fcrc32-size-0": lambda d, b, o: put(d, b + 24, 0x8000, 2),
    "fcrc32-size-256": lambda d, b, o: put(d, b + 24, 0x8001, 2),
    "fcrc32-size-page": lambda d, b, o: put(d, b + 24, 0x8000 | (o.physical >> 8), 2),
    "fcrc32-size-max": lambda d, b, o: put(d, b + 24, 0xFFFF, 2),
}


def _mysql14(data: bytearray, base: int, version: int, algo: int, orig: int, comp: int) -> None:
    put(data, base + 24, 14, 2)
    data[base + 26], data[base + 27] = version, algo
    put(data, base + 28, 17855, 2)
    put(data, base + 30, orig, 2)
    put(data, base + 32, comp, 2)


def _maria(data: bytearray, base: int, algo: int, length: int) -> None:
    put(data, base + 24, 34354, 2)
    put(data, base + 26, algo, 8)
    put(data, base + 38, length, 2)


@pytest.mark.parametrize("hostile", sorted(HOSTILE_HEADERS))
@pytest.mark.parametrize("kind", sorted(FILES))
def test_hostile_page_header_is_an_invalid_page(kind: str, hostile: str, tmp_path: Path) -> None:
    o = original(kind)
    data = bytearray(o.data)
    HOSTILE_HEADERS[hostile](data, VICTIM * o.physical, o)
    _assert_only_victim_invalid(data, o, tmp_path)


def _assert_only_victim_invalid(data: bytearray, o: Original, tmp_path: Path) -> None:
    path = tmp_path / "victim.ibd"
    path.write_bytes(bytes(data))
    got = run_everything(path)
    for name in ("inspect", "checksum", "pages"):
        assert not isinstance(got[name], InputError), got[name]
    assert got["checksum"].invalid_pages == [VICTIM]
    assert got["checksum"].pages == o.n_pages
    assert got["inspect"].invalid_pages == [VICTIM]
    assert [n for n, _ in got["inspect"].problems] == [VICTIM]
    rows = got["pages"]
    assert [r["page"] for r in rows] == list(range(o.n_pages))  # the scan went on
    assert rows[VICTIM]["valid"] is False
    assert rows[VICTIM]["problem"]
    assert [r["page"] for r in rows if r["problem"]] == [VICTIM]


def test_originals_are_clean() -> None:
    """The baseline the victim tests compare with: no invalid page, no problem."""
    for kind in FILES:
        o = original(kind)
        with Tablespace(corpus_file(FILES[kind])) as ts:
            victim = ts.page(VICTIM)
        assert victim.index is not None, kind  # an index page, not an empty one
        result = check_file(str(corpus_file(FILES[kind])), jobs=1)
        assert result.invalid_pages == [], kind
        assert result.pages == o.n_pages


# --- crafted SDI records (MySQL 8 plain: SDI root page 3, records stored on the page) ----------


def _first_sdi_record(data: bytearray, o: Original) -> int:
    """File offset of the first user record's origin on the SDI root page (§8.2)."""
    assert o.sdi_root is not None
    base = o.sdi_root * o.physical
    return base + ((99 + int.from_bytes(data[base + 97 : base + 99], "big")) & 0xFFFF)


def _record_near_page_end(data: bytearray, o: Original) -> None:
    assert o.sdi_root is not None
    base = o.sdi_root * o.physical
    origin = o.logical - 20  # its 33-byte header would run past the page
    put(data, base + 97, origin - 99, 2)
    put(data, base + origin - 4, 0, 2)  # an ordinary record
    data[base + origin - 5] = 0
    data[base + origin - 6] = 10


def _external_ref_too_short(data: bytearray, o: Original) -> None:
    at = _first_sdi_record(data, o)
    data[at - 6] = 0x80 | 0x40  # two-byte length, stored externally ...
    data[at - 7] = 5  # ... with 5 local bytes: shorter than a 20-byte BLOB reference


def _json_not_object(text: bytes) -> Callable[[bytearray, Original], None]:
    def craft(data: bytearray, o: Original) -> None:
        at = _first_sdi_record(data, o)
        blob = zlib.compress(text)
        put(data, at + 25, len(text), 4)  # uncompressed length
        data[at + SDI_RECORD_DATA : at + SDI_RECORD_DATA + len(blob)] = blob

    return craft


def _root_level_self(data: bytearray, o: Original) -> None:
    assert o.sdi_root is not None
    put(data, o.sdi_root * o.physical + 64, 1, 2)
    put(data, _first_sdi_record(data, o) + 12, o.sdi_root, 4)


def _root_next_self(data: bytearray, o: Original) -> None:
    assert o.sdi_root is not None
    put(data, o.sdi_root * o.physical + 12, o.sdi_root, 4)


SDI_CRAFTS: dict[str, tuple[Callable[[bytearray, Original], None], bool]] = {
    # name: (craft, whether Tablespace.sdi() must refuse it)
    "record-near-page-end": (_record_near_page_end, True),
    "external-ref-too-short": (_external_ref_too_short, True),
    "json-array": (_json_not_object(b"[1, 2]"), True),
    "json-string": (_json_not_object(b'"dd_object"'), True),
    "json-dd-object-not-object": (_json_not_object(b'{"dd_object": 5}'), True),
    "root-level-points-to-itself": (_root_level_self, True),
    "root-next-points-to-itself": (_root_next_self, False),
    "root-pointer-past-file": (lambda d, o: put(d, o.sdi_pointer + 4, o.n_pages + 3, 4), True),
    "root-pointer-to-page-1": (lambda d, o: put(d, o.sdi_pointer + 4, 1, 4), True),
}


@pytest.mark.parametrize("craft", sorted(SDI_CRAFTS))
def test_hostile_sdi(craft: str, tmp_path: Path) -> None:
    o = original("mysql8-plain")
    data = bytearray(o.data)
    make, refused = SDI_CRAFTS[craft]
    make(data, o)
    path = tmp_path / "sdi.ibd"
    path.write_bytes(bytes(data))
    got = run_everything(path)
    if refused:
        assert isinstance(got["sdi"], InputError), got["sdi"]
    else:  # read once, not once per visit of the looping page
        with Tablespace(corpus_file(FILES["mysql8-plain"])) as ts:
            assert got["sdi"] == ts.sdi()
    # inspect still reports the file; a damaged SDI is only a warning there
    result = got["inspect"]
    assert not isinstance(result, InputError), result
    assert result.pages == o.n_pages
    if refused:
        assert result.sdi is None
        assert any(str(path) in w for w in result.warnings), result.warnings


@pytest.mark.parametrize(
    "dd_object",
    [
        {"row_format": []},
        {"indexes": [1, None, {"se_private_data": 5}]},
        {"name": 3, "options": ["compress=zlib"], "indexes": "PRIMARY"},
        [],
    ],
)
def test_hostile_sdi_json_types_give_fewer_facts_not_errors(dd_object: object) -> None:
    from ibdtool.inspect import summarise_sdi
    from parsers.sdi import SdiEntry

    summary = summarise_sdi([SdiEntry(1, 7, {"dd_object": dd_object})])
    if isinstance(dd_object, dict):
        assert summary is not None and summary.indexes == {}
        assert summary.row_format is None and summary.table is None
    else:
        assert summary is None
