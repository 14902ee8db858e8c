"""Small hostile tablespaces, one per class of bug fixed, made from real files on demand.

Nothing here is committed as a binary: each craft starts from a corpus file and changes a few
fields. ``python -m tests.fuzz.crafts DIR`` writes them all to DIR (for a look with the CLI);
the regression tests in ``tests/test_fuzz.py`` build them in a temporary folder.

Each :class:`Craft` names the file it starts from, how it damages it, and what ibdtool must
answer: ``sdi`` either reads (``"ok"``: the loop is warned and read once) or refuses with a
one-line error containing ``expect`` (``"error"``), in bounded time and memory.
"""

from __future__ import annotations

import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.fuzz.mutators import (
    SDI_RECORD_DATA,
    _first_record,
    _sdi_record_data,
    be,
    hostile_json,
    put,
)
from tests.fuzz.originals import Original, original


@dataclass(frozen=True)
class Craft:
    kind: str  # the original (tests.fuzz.originals)
    make: Callable[[bytearray, Original], None]
    sdi: str  # "ok" or "error"
    expect: str  # text of the warning (ok) or of the error


def _sdi_at(o: Original) -> tuple[int, int]:
    """(page base, first record origin) of the SDI root in the file."""
    assert o.sdi_root is not None
    base = o.sdi_root * o.physical
    return base, base + _first_record(bytearray(o.data), base)


def record_points_to_itself(data: bytearray, o: Original) -> None:
    """The issue's first example: printed 10,000 times (126 MB)."""
    _, at = _sdi_at(o)
    put(data, at - 2, 0, 2)


def record_list_loops_back(data: bytearray, o: Original) -> None:
    """The second record points back to the first."""
    base, at = _sdi_at(o)
    second = (at - base + be(data, at - 2, 2)) & 0xFFFF
    put(data, base + second - 2, (at - base - second) & 0xFFFF, 2)


def leaf_chain_loops(data: bytearray, o: Original) -> None:
    assert o.sdi_root is not None
    put(data, o.sdi_root * o.physical + 12, o.sdi_root, 4)


def blob_chain_loops(data: bytearray, o: Original) -> None:
    """The first SDI record stored externally on a page whose BLOB next page is itself: it took
    14 s and 3.2 GB for a 128 KB file."""
    _, at = _sdi_at(o)
    blob = o.n_pages - 1
    base = blob * o.physical
    put(data, base + 24, 18, 2)  # SDI_BLOB
    put(data, base + 38, o.physical - 46 - 8, 4)  # a full part
    put(data, base + 42, blob, 4)  # next: itself
    data[at - 6] = 0x80 | 0x40  # stored externally, 20 local bytes: the reference alone
    data[at - 7] = 20
    put(data, at + 29, 0xFFFFFFF0, 4)  # compressed length the chain would have to reach
    ref = at + SDI_RECORD_DATA
    put(data, ref, 0, 4)
    put(data, ref + 4, blob, 4)
    put(data, ref + 8, 38, 4)
    put(data, ref + 12, 0xFFFFFFF0, 8)


def record_inflates_past_budget(data: bytearray, o: Original) -> None:
    """A record of 15 MiB of ``[0,0,…]``: 7.8M JSON values, each an object in memory."""
    _sdi_record_data(data, o, *hostile_json("zeros", 15 << 20))


def record_declares_4_gib(data: bytearray, o: Original) -> None:
    """An uncompressed length of 4 GiB with a stream of zeros behind it."""
    _, at = _sdi_at(o)
    blob = zlib.compress(bytes(1 << 20), 9)
    _sdi_record_data(data, o, 1 << 20, blob)
    put(data, at + 25, 0xFFFFFFFF, 4)


def json_3000_deep(data: bytearray, o: Original) -> None:
    """RecursionError: a traceback and exit 1, which scripts read as a checksum failure."""
    _sdi_record_data(data, o, *hostile_json("deep", 3000))


def json_500_deep(data: bytearray, o: Original) -> None:
    """Parses, and prints; refused all the same, as no SDI nests a tenth as deep (a reader of
    the output, or a later Python with a lower C recursion limit, would recurse that deep)."""
    _sdi_record_data(data, o, *hostile_json("deep", 500))


def zip_stream_bomb(data: bytearray, o: Original) -> None:
    """A zip SDI page whose 5 KB stream holds 32 records, each a zlib stream of 60 MiB of JSON
    (nested: 1.9 GiB in all; the issue's 2 GiB took 4.2 GB)."""
    assert o.sdi_root is not None
    text = b'{"dd_object": {}}' + b" " * (60 << 20)
    nested = zlib.compress(text, 9)
    record = (1).to_bytes(4, "big") + (7).to_bytes(8, "big")
    record += len(text).to_bytes(4, "big") + len(nested).to_bytes(4, "big") + nested
    stream = zlib.compress(record * 32, 9)
    assert len(stream) <= o.physical - 94
    base = o.sdi_root * o.physical
    data[base + 94 : base + 94 + len(stream)] = stream


def zip_pages_of_zeros(data: bytearray, o: Original) -> None:
    """21 zip SDI pages chained, each stream inflating to megabytes of zeros (40 s)."""
    assert o.sdi_root is not None
    stream = zlib.compress(bytes(7 << 20), 9)[: o.physical - 94]
    pages = [o.sdi_root, *range(o.n_pages - 20, o.n_pages)]
    for n, nxt in zip(pages, [*pages[1:], 0xFFFFFFFF], strict=True):
        base = n * o.physical
        put(data, base + 24, 17853, 2)
        put(data, base + 12, nxt, 4)
        put(data, base + 64, 0, 2)  # a leaf
        data[base + 94 : base + 94 + len(stream)] = stream


def zip_node_points_to_itself(data: bytearray, o: Original) -> None:
    """A zip SDI root made a node page whose 200 child pointers and next page are all itself:
    read once, warned once (not 200 times)."""
    assert o.sdi_root is not None
    base = o.sdi_root * o.physical
    put(data, base + 64, 1, 2)  # PAGE_LEVEL 1
    put(data, base + 42, 0x8000 | 202, 2)  # PAGE_N_HEAP: 200 user records
    put(data, base + 12, o.sdi_root, 4)
    dir_start = base + o.physical - 2 * 200
    for k in range(200):
        put(data, dir_start - 4 * (k + 1), o.sdi_root, 4)


CRAFTS: dict[str, Craft] = {
    "record-points-to-itself": Craft(
        "mysql8-plain", record_points_to_itself, "ok", "record list loops back"
    ),
    "record-list-loops-back": Craft(
        "mysql8-plain", record_list_loops_back, "ok", "record list loops back"
    ),
    "leaf-chain-loops": Craft("mysql8-plain", leaf_chain_loops, "ok", "leaf chain loops back"),
    "blob-chain-loops": Craft("mysql8-plain", blob_chain_loops, "error", "BLOB chain loops back"),
    "record-inflates-past-budget": Craft(
        "mysql8-plain", record_inflates_past_budget, "error", "JSON values"
    ),
    "record-declares-4-gib": Craft(
        "mysql8-plain", record_declares_4_gib, "error", "past the 16 MiB"
    ),
    "json-3000-deep": Craft("mysql8-plain", json_3000_deep, "error", "nested"),
    "json-500-deep": Craft("mysql8-plain", json_500_deep, "error", "nested deeper than 100"),
    "zip-stream-bomb": Craft("mysql8-zip-kbs8", zip_stream_bomb, "ok", ""),
    "zip-pages-of-zeros": Craft("mysql8-zip-kbs8", zip_pages_of_zeros, "ok", ""),
    "zip-node-points-to-itself": Craft(
        "mysql8-zip-kbs8", zip_node_points_to_itself, "ok", "reached twice"
    ),
}


def craft(name: str) -> bytes:
    """The bytes of the hostile file ``name``."""
    c = CRAFTS[name]
    o = original(c.kind)
    data = bytearray(o.data)
    c.make(data, o)
    return bytes(data)


def write_all(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for name in CRAFTS:
        path = folder / f"{name}.ibd"
        path.write_bytes(craft(name))
        out.append(path)
    return out


if __name__ == "__main__":
    for p in write_all(Path(sys.argv[1] if len(sys.argv) > 1 else "hostile")):
        print(p)
