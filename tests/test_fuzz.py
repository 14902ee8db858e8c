"""Robustness: damaged real tablespaces get an answer or one clean error, in bounded time.

The harness lives in :mod:`tests.fuzz` (originals, mutators, crafted files, the runner). Here:

* a short seeded fuzz pass (hypothesis, derandomized): every real file of
  :data:`~tests.fuzz.originals.FUZZ_FILES` damaged by the mutators, every in-process reader but
  simulate run on each case, anything but an answer or an ``InputError`` (a traceback, a hang,
  over 2 s of CPU) fails and is shrunk to its smallest form; and a sample of cases run through
  every CLI command in a subprocess under the time and memory limits;
* a regression test per class of bug fixed, on the small hostile files of :mod:`tests.fuzz.crafts`;
* the older targeted checks: a page whose header lies is the only invalid page, the rest of the
  file is still read; crafted SDI records are refused or read once.

The long run (100,000+ inputs) is ``bench/fuzz_long.py``.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from ibdtool.errors import InputError
from ibdtool.tablespace.checksum import check_file
from ibdtool.tablespace.reader import Tablespace
from tests.fuzz.crafts import CRAFTS, craft
from tests.fuzz.mutators import HOSTILE_TYPES, RandomChooser, mutate, put
from tests.fuzz.originals import FILES, FUZZ_FILES, Original, original, path_of
from tests.fuzz.runner import CLI_COMMANDS, ENTRY_POINTS, Outcome, run_cli, run_inprocess
from tests.fuzz.strategies import Case, damaged

VICTIM = 4  # the first index page in every file of FILES
SDI_RECORD_DATA = 33  # §8.3: the JSON's zlib stream follows 33 bytes after the record origin
EXAMPLES_PER_FILE = 15  # x 10 files x 5 readers: about 40 s on two busy cores
#: simulate compresses every sampled page with every codec, then times them all: the CLI samples
#: and the long run cover it
CI_READERS = [name for name in ENTRY_POINTS if name != "simulate"]
CLI_SAMPLES = 4  # damaged files run through every CLI command


def run_everything(path: Path) -> dict[str, object]:
    """Every in-process reader on ``path``: an ``InputError`` is an answer, anything else raises."""
    from ibdtool.tablespace.inspect import inspect_path
    from ibdtool.tablespace.page_rows import read_page_rows

    out: dict[str, object] = {}
    for name, fn in (
        ("inspect", lambda: inspect_path(path)),
        ("checksum", lambda: check_file(str(path), jobs=1)),
        ("pages", lambda: list(read_page_rows(str(path)))),
        ("sdi", lambda: _sdi(path)),
    ):
        try:
            out[name] = fn()
        except InputError as exc:
            assert exc.message, name
            out[name] = exc
    return out


def _sdi(path: Path) -> object:
    with Tablespace(path) as ts:
        return ts.sdi()


# --- the seeded fuzz pass --------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(FUZZ_FILES))
def test_damaged_files_answer_cleanly(kind: str, tmp_path: Path) -> None:
    """Each reader answers or refuses in one line, within the CPU limit; hypothesis shrinks a
    failure to its fewest mutations."""
    path = tmp_path / f"{kind}.ibd"

    @settings(
        max_examples=EXAMPLES_PER_FILE,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )
    @given(damaged(kind))
    def check(case: Case) -> None:
        path.write_bytes(case.data)
        runs = [run_inprocess(name, path) for name in CI_READERS]
        bad = [r.describe() for r in runs if not r.outcome.good]
        assert not bad, f"{case!r}:\n" + "\n".join(bad)

    check()


def test_damaged_files_through_the_cli(tmp_path: Path) -> None:
    """A seeded sample of damaged files through every CLI command, as scripts run it: a
    subprocess under RLIMIT_AS, its own CPU time and peak RSS read back."""
    rng = random.Random("ibdtool-fuzz-cli")
    failures: list[str] = []
    for case in range(CLI_SAMPLES):
        kind = rng.choice(sorted(FUZZ_FILES))
        data, done = mutate(original(kind), RandomChooser(rng))
        path = tmp_path / f"{kind}-{case}.ibd"
        path.write_bytes(data)
        for command in CLI_COMMANDS:
            run = run_cli(command, path)
            if not run.outcome.good:
                failures.append(f"{kind} ({'; '.join(done)}): {run.describe()}")
    assert not failures, "\n".join(failures)


# --- regression: one crafted file per class of bug fixed --------------------------------------


@pytest.mark.parametrize("name", sorted(CRAFTS))
def test_crafted_hostile_file(name: str, tmp_path: Path) -> None:
    """``sdi`` reads the file once (a loop is a warning) or refuses it in one line, and
    ``inspect`` still reports it, each within 2 s of CPU and 200 MB."""
    c = CRAFTS[name]
    path = tmp_path / f"{name}.ibd"
    path.write_bytes(craft(name))
    sdi = run_cli(("sdi",), path)
    if c.sdi == "ok":
        assert sdi.outcome is Outcome.OK, sdi.describe()
    else:
        assert sdi.outcome is Outcome.CLEAN_ERROR, sdi.describe()
    assert c.expect in sdi.detail or c.sdi == "ok", sdi.describe()
    inspect = run_cli(("inspect", "--json"), path)
    assert inspect.outcome is Outcome.OK, inspect.describe()


@pytest.mark.parametrize(
    "name", ["record-points-to-itself", "leaf-chain-loops", "zip-node-points-to-itself"]
)
def test_sdi_loop_is_read_once_and_warned(name: str, tmp_path: Path) -> None:
    """The looping walk gives each record once (compared with the undamaged file's records: a
    prefix of them, in order), says where it stopped, once."""
    path = tmp_path / f"{name}.ibd"
    path.write_bytes(craft(name))
    with Tablespace(path) as ts:
        got = ts.sdi()
        warnings = ts.sdi_warnings
    with Tablespace(path_of(CRAFTS[name].kind)) as ts:
        clean = ts.sdi()
    assert got and got == clean[: len(got)]
    assert len({(e.sdi_type, e.sdi_id) for e in got}) == len(got)
    assert len(warnings) == 1 and CRAFTS[name].expect in warnings[0], warnings


# --- a page whose header lies is the only invalid page ----------------------------------------


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
        with Tablespace(path_of(kind)) as ts:
            victim = ts.page(VICTIM)
        assert victim.index is not None, kind  # an index page, not an empty one
        result = check_file(str(path_of(kind)), jobs=1)
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
        with Tablespace(path_of("mysql8-plain")) as ts:
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
        {"partitions": "p0"},
        {"partitions": [1, {"name": 5}, {"name": "p", "subpartitions": [None, {"name": 2}]}]},
        {"partitions": [{"name": "q", "subpartitions": {"name": "qsp0"}}]},
        [],
    ],
)
def test_hostile_sdi_json_types_give_fewer_facts_not_errors(dd_object: object) -> None:
    from ibdtool.parsers.sdi import SdiEntry
    from ibdtool.tablespace.inspect import summarise_sdi

    summary = summarise_sdi([SdiEntry(1, 7, {"dd_object": dd_object})])
    if isinstance(dd_object, dict):
        assert summary is not None and summary.indexes == {}
        assert summary.row_format is None and summary.table is None
        assert summary.partitions in ([], ["p"], ["q"])
    else:
        assert summary is None
