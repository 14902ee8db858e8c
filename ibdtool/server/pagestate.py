"""How far a tablespace's pages really are in the format its table options promise.

``ALTER TABLE … COMPRESSION=`` (MySQL) only tags the table; pages change when rewritten. A
MariaDB classic table picks ``innodb_compression_algorithm`` at each write. So the truth is
page by page: :func:`page_state` reads the FIL header of every page (42 bytes each, no
decompression: seconds for gigabytes; a seeded sample above :data:`FULL_SCAN_PAGES`) and counts
data pages by stored compression. :func:`verify` then checks a finished conversion: every data
page carries the target format, except pages the server stores plain by design, which it
proves by recompressing them the way the server would (:mod:`ibdtool.advise.simulate`).
"""

from __future__ import annotations

import os
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ibdtool.errors import InputError
from ibdtool.fs import DropCost, drop_cost
from ibdtool.parsers.constants import (
    FIL_PAGE_TYPE_FSP_HDR,
    FIL_PAGE_TYPE_XDES,
    Algorithm,
)
from ibdtool.parsers.envelope import HEADER_BYTES, read_envelope
from ibdtool.parsers.vendor import Vendor
from ibdtool.tablespace import Tablespace

FULL_SCAN_PAGES = 1 << 18  # 4 GiB of 16K pages read whole; above that a sample
SAMPLE_PAGES = 1 << 15
MAX_PROOFS = 256  # plain pages recompressed to prove the server would store them plain
NEVER_COMPRESSED_TYPES = frozenset({FIL_PAGE_TYPE_FSP_HDR, FIL_PAGE_TYPE_XDES})


def _plain_type(head: bytes) -> int:
    return int.from_bytes(head[24:26], "big")


@dataclass
class PageState:
    """Data pages (not empty, not page 0, not FSP_HDR/XDES) by stored compression."""

    path: str
    space_id: int
    pages: int
    page_size: int
    physical_size: int
    key_block_size: int | None
    full_crc32: bool
    declared_algorithm: str | None  # full_crc32 FSP flags
    scanned: int
    empty: int = 0
    data_pages: int = 0
    by_algorithm: Counter[str] = field(default_factory=Counter)
    #: plain data pages and their stored types, for the proofs of :func:`verify`
    plain_pages: list[int] = field(default_factory=list)
    file_size: int = 0
    allocated_size: int = 0
    fs_block_size: int = 0
    #: what freeing the file's extents costs (DROP TABLE; None without FIEMAP)
    drop_cost: DropCost | None = None

    @property
    def sampled(self) -> bool:
        return self.scanned < self.pages

    @property
    def uncompressed(self) -> int:
        return self.by_algorithm.get(Algorithm.NONE.value, 0)

    @property
    def uncompressed_fraction(self) -> float:
        return self.uncompressed / self.data_pages if self.data_pages else 0.0

    @property
    def algorithms(self) -> dict[str, int]:
        return {k: v for k, v in self.by_algorithm.most_common() if k != Algorithm.NONE.value}

    def summary(self) -> str:
        """``62% of data pages uncompressed`` / ``zlib 98%, none 2%`` (``~`` when sampled)."""
        if self.key_block_size:
            return f"ROW_FORMAT=COMPRESSED pages of {self.key_block_size // 1024}K"
        if not self.data_pages:
            return "no data pages yet"
        approx = "~" if self.sampled else ""
        parts = [
            f"{name} {approx}{100 * n / self.data_pages:.0f}%"
            for name, n in self.by_algorithm.most_common()
        ]
        return ", ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "space_id": self.space_id,
            "pages": self.pages,
            "scanned_pages": self.scanned,
            "sampled": self.sampled,
            "page_size": self.page_size,
            "physical_page_size": self.physical_size,
            "key_block_size": self.key_block_size,
            "full_crc32": self.full_crc32,
            "declared_algorithm": self.declared_algorithm,
            "empty_pages": self.empty,
            "data_pages": self.data_pages,
            "by_algorithm": dict(self.by_algorithm.most_common()),
            "uncompressed_fraction": round(self.uncompressed_fraction, 4),
            "file_size": self.file_size,
            "allocated_size": self.allocated_size,
            "drop_cost": None if self.drop_cost is None else self.drop_cost.to_json(),
        }


def page_state(path: str | os.PathLike[str], *, seed: int = 1) -> PageState:
    """Count every data page of ``path`` by stored compression (a sample for huge files)."""
    with Tablespace(path) as ts:
        fmt = ts.format
        n = ts.n_pages
        if n <= FULL_SCAN_PAGES:
            numbers: range | list[int] = range(1, n)
        else:
            numbers = sorted(random.Random(seed).sample(range(1, n), SAMPLE_PAGES))
        alloc = ts.allocation
        state = PageState(
            path=str(path),
            space_id=fmt.space_id,
            pages=n,
            page_size=fmt.logical_size,
            physical_size=fmt.physical_size,
            key_block_size=fmt.key_block_size,
            full_crc32=fmt.full_crc32,
            declared_algorithm=fmt.fcrc32_algorithm.value if fmt.fcrc32_algorithm else None,
            scanned=len(numbers) + 1,
            file_size=ts.size,
            allocated_size=alloc.allocated,
            fs_block_size=alloc.fs_block_size,
            drop_cost=drop_cost(path, alloc.extents, ts.size),
        )
        zero = bytes(HEADER_BYTES)
        psize = fmt.physical_size
        for page_no in numbers:
            head = ts.read(page_no * psize, HEADER_BYTES)
            if head == zero:
                state.empty += 1
                continue
            algo = read_envelope(head, fmt).algorithm
            if algo is Algorithm.NONE and _plain_type(head) in NEVER_COMPRESSED_TYPES:
                continue
            state.data_pages += 1
            state.by_algorithm[algo.value] += 1
            if algo is Algorithm.NONE:
                state.plain_pages.append(page_no)
    return state


@dataclass
class Verification:
    """A finished conversion checked against the pages on disk."""

    ok: bool
    message: str
    state: PageState
    plain_by_design: int = 0
    plain_unexplained: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "message": self.message,
            "plain_by_design": self.plain_by_design,
            "plain_unexplained": self.plain_unexplained,
            "pages": self.state.to_json(),
        }


def _stored_plain_by_design(
    ts: Tablespace, page_no: int, server: Vendor, algorithm: str, level: int | None, block: int
) -> bool:
    """Would this server store this page uncompressed? Recompress it and lay it out."""
    from ibdtool.advise import Scenario

    _, _, page = ts.page_with_data(page_no)
    scenario = Scenario(server, algorithm, level)
    return scenario.would_store(page, page_no, block, full_crc32=ts.format.full_crc32) is None


def verify(
    path: str | os.PathLike[str],
    *,
    server: Vendor,
    kind: str,
    algorithm: str | None = None,
    level: int | None = None,
    key_block_size: int | None = None,
) -> Verification:
    """Check ``path`` is in the target format: ``kind`` "page" (with ``algorithm``), "row"
    (with ``key_block_size`` in bytes) or "none"."""
    state = page_state(path)
    if kind == "row":
        ok = state.key_block_size == key_block_size and not state.algorithms
        kbs = f"{key_block_size // 1024}K" if key_block_size else "?"
        got = f"{state.physical_size // 1024}K" if state.key_block_size else "uncompressed"
        msg = (
            f"ROW_FORMAT=COMPRESSED {kbs} pages on disk"
            if ok
            else f"expected {kbs} ROW_FORMAT=COMPRESSED pages, found {got} pages"
        )
        return Verification(ok, msg, state)
    if kind == "none":
        ok = not state.algorithms and state.key_block_size is None
        msg = "no compressed page left" if ok else f"still compressed: {state.summary()}"
        return Verification(ok, msg, state)
    assert algorithm is not None
    other = {a: n for a, n in state.algorithms.items() if a != algorithm}
    by_design = unexplained = 0
    if state.plain_pages and not state.sampled:
        block = state.fs_block_size
        with Tablespace(path) as ts:
            for page_no in state.plain_pages[:MAX_PROOFS]:
                try:
                    plain = _stored_plain_by_design(ts, page_no, server, algorithm, level, block)
                except (InputError, ValueError):
                    plain = False
                if plain:
                    by_design += 1
                else:
                    unexplained += 1
        unexplained += max(0, len(state.plain_pages) - MAX_PROOFS)
    elif state.plain_pages:
        unexplained = state.uncompressed
    target_pages = state.by_algorithm.get(algorithm, 0)
    declared_ok = not state.full_crc32 or state.declared_algorithm == algorithm
    ok = not other and unexplained == 0 and declared_ok and state.key_block_size is None
    approx = "~" if state.sampled else ""
    msg = f"{approx}{target_pages} of {approx}{state.data_pages} data pages are {algorithm}"
    if by_design:
        msg += f", {by_design} stored plain because compressing them saves no block"
    if unexplained:
        msg += f", {unexplained} still uncompressed"
    if other:
        msg += ", still " + ", ".join(f"{a} {n}" for a, n in other.items())
    if not declared_ok:
        msg += f"; the tablespace flags say {state.declared_algorithm}"
    return Verification(ok, msg, state, by_design, unexplained)
