"""A report's rows are the reference decoder's, figure for figure (issue 24: the fast paths of
a fleet report must not change its JSON).

The reference is the decoder itself: every page of every file decoded whole
(:func:`ibdtool.parsers.page.decode_page` through :meth:`Tablespace._decode`) and added to the
tally one :class:`~ibdtool.parsers.page.PageInfo` at a time, in place of
:func:`ibdtool.tablespace.inspect_tally.tally_run` (the inline path: pages tallied from their
stored bytes, page-compressed images and zip pages included). Each row's JSON text must be
the same, byte for byte, on trees of real samples: the data directory of ``test_report``
(copies sparse and dense, damaged, fragmented one extent a page, partitions, FULLTEXT, system
files) and the fleet tree of the benchmarks (one sample of each format a fleet holds).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from ibdtool.report.batch import ScanOptions, discover, scan_one
from ibdtool.tablespace import inspect as inspect_module
from ibdtool.tablespace.page_tally import PageTally
from ibdtool.tablespace.reader import Tablespace
from tests.fleet_tree import SOURCES, build_fleet_tree
from tests.test_report import build_datadir


def _decoded_tally(
    ts: Tablespace,
    first: int,
    end: int,
    tally: PageTally,
    per_page: Sequence[int],
    free: bytearray,
) -> None:
    """The reference for ``tally_run``: each page of [first, end) decoded whole, added."""
    block = ts.allocation.fs_block_size
    for page_no in range(first, end):
        info = ts._decode(ts.stored_page(page_no), page_no, None)
        tally.add(info, per_page[page_no - first], block, bool(free[page_no - first]))


def _rows(root: Path) -> dict[str, str]:
    opts = ScanOptions()
    return {t.path: json.dumps(scan_one(t, opts), indent=2, default=str) for t in discover([root])}


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    base = tmp_path_factory.mktemp("reference")
    return [
        build_datadir(base / "datadir"),
        build_fleet_tree(base / "fleet", schemas=len(SOURCES), per_schema=2),
    ]


def test_report_rows_are_the_reference_decoders(
    trees: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = {p: r for root in trees for p, r in _rows(root).items()}
    monkeypatch.setattr(inspect_module, "tally_run", _decoded_tally)
    reference = {p: r for root in trees for p, r in _rows(root).items()}
    assert len(fast) > 30
    assert fast.keys() == reference.keys()
    for path in fast:
        assert fast[path] == reference[path], path
    # the rows are real ones: compressed, zip and damaged files among them
    docs = [json.loads(r) for r in fast.values()]
    assert sum(1 for d in docs if d.get("compressed_pages")) >= 4
    assert sum(1 for d in docs if d.get("key_block_size")) >= 2
    assert sum(1 for d in docs if "checksum" in (d.get("flags") or [])) >= 1
