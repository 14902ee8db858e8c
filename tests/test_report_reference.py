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
import os
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


def _damaged_type14_copies(folder: Path) -> None:
    """MySQL 8 and 5.7 zlib tables (type-14 images) with their images damaged a different
    way each: the payload (libdeflate refuses it, or it inflates to the wrong page), the
    metadata (version, algorithm, sizes), the inner checksum and the trailer's copy of it,
    a zero length, a length past the page; and a clean copy one extent a page."""
    from tests.samples_manifest import sample

    page = 16384

    def damage(data: bytearray, n: int, how: int) -> None:
        off = n * page
        if how == 0:
            data[off + 38 + 40] ^= 0x5A  # inside the zlib stream
        elif how == 1:
            data[off + 26] = 3  # metadata version
        elif how == 2:
            data[off + 27] = 2  # lz4, say the metadata
        elif how == 3:
            data[off + 30 : off + 32] = (page - 39).to_bytes(2, "big")  # original size
        elif how == 4:
            data[off + 1] ^= 0x01  # the inner page's checksum (its header is the image's)
        elif how == 5:
            data[off + 32 : off + 34] = b"\0\0"  # payload length 0
        elif how == 6:
            data[off + 32 : off + 34] = (page - 37).to_bytes(2, "big")  # past the page
        elif how == 7:
            data[off + 38] = 0x58  # another zlib window size in the stream's header
        elif how == 8:
            data[off + 20] ^= 0x10  # the LSN word the trailer must repeat

    for rel in ("mysql80/zlib.ibd", "mysql57/zlib.ibd"):
        data = bytearray(sample(rel).read_bytes())
        name = rel.replace("/", "-")
        (folder / f"clean-{name}").write_bytes(data)
        pages = [
            n for n in range(len(data) // page) if data[n * page + 24 : n * page + 26] == b"\0\x0e"
        ]
        assert len(pages) >= 9, rel
        for k, n in enumerate(pages):
            damage(data, n, k % 9)
        (folder / f"damaged-{name}").write_bytes(data)
        frag = folder / f"fragmented-{name}"
        with frag.open("wb") as fh:  # one extent a page: every other page written first
            clean = sample(rel).read_bytes()
            for n in [*range(0, len(clean) // page, 2), *range(1, len(clean) // page, 2)]:
                fh.seek(n * page)
                fh.write(clean[n * page : (n + 1) * page])
                fh.flush()
                os.fsync(fh.fileno())


def test_type14_images_damaged_every_way_are_the_reference_decoders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "db"
    folder.mkdir()
    _damaged_type14_copies(folder)

    def inspected() -> dict[str, str]:
        """Each file's row, and its whole ``inspect --json`` document (stored sizes too)."""
        files = sorted(folder.iterdir())
        docs = {
            str(p): json.dumps(inspect_module.inspect_path(p, jobs=1).to_json(), default=str)
            for p in files
        }
        return {p: r + docs[p] for p, r in _rows(tmp_path).items()}

    fast = inspected()
    monkeypatch.setattr(inspect_module, "tally_run", _decoded_tally)
    reference = inspected()
    assert len(fast) == 6 and fast.keys() == reference.keys()
    for path in fast:
        if "damaged-" in path:
            # the same figures; the order of keys with equal counts (most_common's ties:
            # crc32 1, empty 1) follows when each was first tallied, and the inline path
            # tallies its verified pages after the decoder's, as it did before type 14's own path
            decoder = json.JSONDecoder()
            assert decoder.raw_decode(fast[path]) == decoder.raw_decode(reference[path]), path
            row_end = decoder.raw_decode(fast[path])[1]
            assert json.loads(fast[path][row_end:]) == json.loads(reference[path][row_end:])
        else:
            assert fast[path] == reference[path], path
    damaged = [json.JSONDecoder().raw_decode(r)[0] for p, r in fast.items() if "damaged-" in p]
    assert all(d["checksum"]["invalid"] >= 8 for d in damaged), [d["checksum"] for d in damaged]
