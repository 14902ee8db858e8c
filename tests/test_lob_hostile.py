"""Externally stored values whose pages lie: chains that loop, streams that inflate without end.

``records`` follows the 20-byte reference of an off-page column into BLOB, ZBLOB/ZBLOB2 and LOB
pages (:mod:`ibdtool.parsers.lob`). The pages here are laid out as FORMATS.md and the server's
sources describe them (FIL header, FIL_PAGE_NEXT at 12, type at 24; a ZBLOB chain is one zlib stream
from byte 38 of each page), then made hostile. What must hold, whatever the pages say
(README, "Hostile input"): a chain that comes back to a page it visited is an error naming the
page, never a hang; what one value inflates is capped at the caller's limit, so a zlib bomb
split across ZBLOB pages costs the limit, not its 64 MiB; a page of the wrong type or beyond
the file ends the chain with an error. The same reads on real ZBLOB pages, made by MariaDB,
are in ``tests/test_crypt_mariadb.py`` (a real chain made to loop).
"""

from __future__ import annotations

import random
import time
import tracemalloc
import zlib

import pytest

from ibdtool.parsers.lob import ExternRef, LobError, read_extern
from tests.bombs import zlib_zeros

PAGE = 16384
MIB = 1 << 20


def _page(no: int, ptype: int, body: bytes, next_no: int = 0xFFFFFFFF) -> bytes:
    head = bytearray(38)
    head[4:8] = no.to_bytes(4, "big")
    head[12:16] = next_no.to_bytes(4, "big")
    head[24:26] = ptype.to_bytes(2, "big")
    return bytes(head) + body.ljust(PAGE - 38, b"\0")[: PAGE - 38]


def _zblob_chain(stream: bytes, first: int, links: list[int]) -> dict[int, bytes]:
    """``stream`` cut into the bodies of ZBLOB (11, the first) and ZBLOB2 (12) pages numbered
    ``first, first + 1, …``; ``links[i]`` is page i's FIL_PAGE_NEXT."""
    cut = PAGE - 38
    parts = [stream[i : i + cut] for i in range(0, len(stream), cut)]
    return {
        first + i: _page(first + i, 11 if i == 0 else 12, part, links[i])
        for i, part in enumerate(parts)
    }


def _reader(pages: dict[int, bytes], n_pages: int = 1000):  # type: ignore[no-untyped-def]
    def get(no: int) -> bytes:
        if not 0 <= no < n_pages:
            raise ValueError(f"page {no} beyond the end of the file")
        return pages.get(no, _page(no, 17855, b""))  # anything else: an INDEX page

    return get


def _random_stream(n: int) -> tuple[bytes, bytes]:
    value = random.Random(n).randbytes(n)
    return value, zlib.compress(value)


def test_a_good_zblob_chain_reads_whole_and_cut() -> None:
    value, stream = _random_stream(50_000)  # random: four pages
    pages = _zblob_chain(stream, 10, [11, 12, 13, 0xFFFFFFFF])
    get = _reader(pages)
    assert read_extern(get, ExternRef(1, 10, 0, len(value)), MIB) == (value, False)
    assert read_extern(get, ExternRef(1, 10, 0, len(value)), 1000) == (value[:1000], True)


@pytest.mark.parametrize(
    "links, loops_at",
    [([10, 0, 0, 0], 10), ([11, 10, 0, 0], 10), ([11, 12, 11, 0], 11)],
    ids=["self", "back-to-first", "back-to-second"],
)
def test_a_zblob_chain_that_loops_is_an_error(links: list[int], loops_at: int) -> None:
    value, stream = _random_stream(50_000)
    get = _reader(_zblob_chain(stream, 10, links))
    with pytest.raises(LobError, match=f"loops at page {loops_at}"):
        read_extern(get, ExternRef(1, 10, 0, len(value)), MIB)


def test_a_zblob_bomb_costs_the_limit_not_its_size() -> None:
    bomb = zlib_zeros(64)  # 64 MiB of zeros in about 64 KiB: five pages
    n = -(-len(bomb) // (PAGE - 38))
    pages = _zblob_chain(bomb, 20, [21 + i for i in range(n - 1)] + [0xFFFFFFFF])
    tracemalloc.start()
    start = time.process_time()
    data, cut = read_extern(_reader(pages), ExternRef(1, 20, 0, 0xFFFFFFFF), MIB)
    cpu = time.process_time() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert data == bytes(MIB) and cut
    assert peak < 8 * MIB and cpu < 1.0, (peak, cpu)


@pytest.mark.parametrize(
    "link, message",
    [(5, "not a ZBLOB page"), (5000, "beyond the end of the file"), (0xFFFFFFFF, "of 50000 bytes")],
    ids=["index-page", "past-the-file", "ends-early"],
)
def test_a_zblob_chain_that_leaves_its_pages_is_an_error(link: int, message: str) -> None:
    value, stream = _random_stream(50_000)
    pages = _zblob_chain(stream, 10, [link, 12, 13, 0xFFFFFFFF])
    with pytest.raises(LobError, match=message):
        read_extern(_reader(pages), ExternRef(1, 10, 0, len(value)), MIB)


def test_an_old_blob_chain_that_loops_is_an_error() -> None:
    part = (PAGE - 38 - 8 - 8).to_bytes(4, "big")
    pages = {
        30: _page(30, 10, part + (31).to_bytes(4, "big") + bytes(100)),
        31: _page(31, 10, part + (30).to_bytes(4, "big") + bytes(100)),
    }
    with pytest.raises(LobError, match="loops at page 30"):
        read_extern(_reader(pages), ExternRef(1, 30, 38, 10 * PAGE), MIB)
