"""Predict what page compression (or ROW_FORMAT=COMPRESSED) would allocate for a tablespace.

Each page is brought back to its uncompressed image (decompressing it if the file is already
compressed), recompressed the way each server would (:mod:`ibdtool.parsers.layout`), and the bytes a
filesystem with a given block size allocates for the result are summed. A seeded random
sample gives every figure with a 95% confidence interval; a full scan is exact and runs in
worker processes. CPU cost per page is measured apart from the scan, on the same few of
its pages for every algorithm, repeated, as median and spread (:mod:`ibdtool.advise.cpu_cost`).

The scan needs each page's bytes, not its verdicts: pages are read in chunks into one reused
buffer and handed on as views of it (decompressed only where stored compressed,
:func:`ibdtool.parsers.page.logical_image`), each codec's payload length comes from a sizer the
codec registry makes once per worker (:meth:`ibdtool.parsers.codecs.Codec.sizer`), and lengths are
counted per scenario; block sizes are applied once per distinct length at the end. A full scan also
tallies the stored pages for the current-state figures as it reads them.
"""

from __future__ import annotations

import itertools
import math
import os
import random
import threading
import time
import zlib
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from ibdtool.advise.cpu_cost import CLOCK, Cost, CostRun, measure
from ibdtool.advise.cpu_cost import MAX_PAGES as MAX_COST_PAGES
from ibdtool.advise.estimate import Estimate
from ibdtool.advise.rebuild import (
    PLAN_TARGET,
    SAMPLE_ABOVE_PAGES,
    SAMPLE_LEAVES,
    RebuiltImage,
    plan_rebuild,
)
from ibdtool.errors import InputError
from ibdtool.fs import (
    DropCost,
    Layout,
    dense_extents,
    drop_cost,
    filesystem_of,
    predict_between,
    rate_for,
)
from ibdtool.parsers.codecs import WHAT_IF, Codec, codec, vendor_codecs
from ibdtool.parsers.codecs import names as codec_names
from ibdtool.parsers.constants import (
    FIL_PAGE_INDEX,
    FIL_PAGE_RTREE,
    FIL_PAGE_TYPE_ALLOCATED,
    FIL_PAGE_TYPE_FSP_HDR,
    FIL_PAGE_TYPE_XDES,
    Algorithm,
)
from ibdtool.parsers.envelope import read_envelope, sized_pages
from ibdtool.parsers.layout import (
    MYSQL_HEADER,
    allocated_for_image,
    ntfs_allocated,
    server_stored_size,
)
from ibdtool.parsers.page import logical_image
from ibdtool.parsers.space import SpaceFormat
from ibdtool.parsers.vendor import Vendor
from ibdtool.tablespace import RUN_PAGES, Tablespace
from ibdtool.workers import WorkerPool

if TYPE_CHECKING:  # ibdtool.parsers.keyring loads construct and cryptography: only with --keyring
    from ibdtool.parsers.keyring import Keyring

Z95 = 1.959963984540054
PILOT_PAGES = 64  # the default run's first round, every scenario on the same pages
TARGET_REL_HALF_WIDTH = 0.01  # ±1%
SMALL_FILE_PAGES = 400  # files of at most this many pages are scanned whole by default
#: the ROW_FORMAT=COMPRESSED what-if deflates each of its pages a hundred times over: it looks
#: at about this many pages
ZIP_SUBSAMPLE_TARGET = 300
#: the default (adaptive) run: seconds of scanning it allows itself after the first round; a
#: scenario whose interval is not within ±1% by then keeps the wider one, said in a note
SAMPLE_BUDGET = 3.0
ROUND_GROWTH = 32  # a round at most this many times a scenario's pages so far
MIN_ROUND_PAGES = 16  # fewer pages than this are not worth a round
ADAPTIVE_ZIP_PAGES = 100  # the ROW_FORMAT=COMPRESSED what-if's pages in the default run
MAX_ADAPTIVE_PAGES = 1 << 17  # the sample's ceiling, whatever the file's size


# --- what is simulated -----------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class Scenario:
    """One way to store pages: a vendor's page compression with a codec and level.

    ``server`` is the vendor (``mysql``, ``mariadb``, ``what-if``) and ``algorithm`` a codec of
    the registry (:mod:`ibdtool.parsers.codecs`), which does the work."""

    server: Vendor | Literal["what-if"]  # "what-if": a codec no server offers (zstd)
    algorithm: str  # a codec name: an Algorithm value, or "zstd"
    level: int | None = None

    def __post_init__(self) -> None:
        if self.server != WHAT_IF:  # also takes the plain name ("mysql")
            object.__setattr__(self, "server", Vendor(self.server))

    @property
    def label(self) -> str:
        lvl = f":{self.level}" if self.level is not None else ""
        return f"{self.server}:{self.algorithm}{lvl}"

    @property
    def codec(self) -> Codec:
        return codec(self.algorithm)

    def compress(self, data: bytes) -> bytes:
        # mysqld links its own bundled zlib and lz4 builds; the Python codecs come closest
        return codec(self.algorithm).compress(data, self.level, self.server)

    def decompress(self, payload: bytes, size: int) -> bytes:
        return codec(self.algorithm).decompress(payload, size)

    def keeps_plain(self, page_no: int, page_type: int) -> bool:
        """Pages the server never compresses: page 0, FSP_HDR and XDES pages; MySQL's R-trees
        (they use bytes 26..33, §2.1); MariaDB's type-0 pages (§3)."""
        if page_no == 0 or page_type in (FIL_PAGE_TYPE_FSP_HDR, FIL_PAGE_TYPE_XDES):
            return True
        if self.server is Vendor.MYSQL:
            return page_type == FIL_PAGE_RTREE
        return page_type == FIL_PAGE_TYPE_ALLOCATED

    def compressed_part(self, page: bytes) -> bytes:
        """The bytes the server compresses: MySQL keeps the 38-byte header (§2.1)."""
        return page[MYSQL_HEADER:] if self.server is Vendor.MYSQL else page

    def stored_size(
        self, payload: int, page_size: int, block: int, *, full_crc32: bool = True
    ) -> int | None:
        """Bytes the server writes for a ``payload``-byte compressed page; None: stored plain.
        What-if codecs are laid out as MariaDB's full_crc32 without a length byte."""
        vendor = Vendor.MYSQL if self.server is Vendor.MYSQL else Vendor.MARIADB
        algo = self.codec.algorithm or Algorithm.NONE
        return server_stored_size(vendor, algo, payload, page_size, block, full_crc32=full_crc32)

    def would_store(
        self, page: bytes, page_no: int, block: int, *, full_crc32: bool = True
    ) -> int | None:
        """What the server would store for this uncompressed ``page``: the bytes it writes, or
        None when it writes the page plain."""
        if self.keeps_plain(page_no, int.from_bytes(page[24:26], "big")):
            return None
        payload = self.compress(self.compressed_part(page))
        return self.stored_size(len(payload), len(page), block, full_crc32=full_crc32)


MYSQL_CODECS = codec_names(Vendor.MYSQL)
MARIADB_CODECS = codec_names(Vendor.MARIADB)
WHAT_IF_CODECS = codec_names(WHAT_IF)
WHAT_IF_LEVELS = (1, 3, 9)  # zstd: fast, its default, strong
DEFAULT_SCENARIOS: tuple[Scenario, ...] = (
    *(
        Scenario(v, c.name, c.default_level)
        for v in (Vendor.MYSQL, Vendor.MARIADB)
        for c in vendor_codecs(v)
    ),
    *(Scenario(WHAT_IF, c.name, lv) for c in vendor_codecs(WHAT_IF) for lv in WHAT_IF_LEVELS),
)


def _items(specs: Iterable[str]) -> Iterator[str]:
    """The comma-separated, lower-cased items of repeatable options (``-a zlib,lz4 -a zstd``)."""
    for spec in specs:
        for item in spec.split(","):
            item = item.strip().lower()
            if item:
                yield item


#: the ``-a`` item that asks for the ROW_FORMAT=COMPRESSED what-if (``all`` includes it)
ROW_COMPRESSED = "row"


def wants_row_compressed(specs: Iterable[str]) -> bool:
    """Whether ``-a`` asks for the ROW_FORMAT=COMPRESSED what-if: when it is not given, or
    names ``all`` or ``row``. ``-a zlib,lz4`` asks for page codecs only, and the what-if (a
    dozen deflates per index page it looks at) is not run."""
    items = list(_items(specs))
    return not items or "all" in items or ROW_COMPRESSED in items


def parse_algorithms(specs: Iterable[str]) -> list[Scenario]:
    """``mysql:zlib:1``, ``mariadb:lzma``, ``zstd:9``, or a bare codec for every server
    (``row``, the ROW_FORMAT=COMPRESSED what-if, is no page codec: see
    :func:`wants_row_compressed`)."""
    out: list[Scenario] = []
    valid = (
        [f"mysql:{c}" for c in MYSQL_CODECS]
        + [f"mariadb:{c}" for c in MARIADB_CODECS]
        + [*WHAT_IF_CODECS, "all", ROW_COMPRESSED]
        + sorted(set(MYSQL_CODECS) | set(MARIADB_CODECS))
    )
    for item in _items(specs):
        if item == "all":
            out.extend(DEFAULT_SCENARIOS)
            continue
        if item == ROW_COMPRESSED:
            continue
        parts = item.split(":")
        level: int | None = None
        if parts[-1].isdigit():
            level = int(parts.pop())
        if parts[0] in ("what-if", "whatif"):
            parts = parts[1:]
        if len(parts) == 1 and parts[0] in WHAT_IF_CODECS:
            what_if = codec(parts[0])
            lv = level or what_if.default_level
            lo, hi = what_if.levels or (0, 0)
            if lv is None or not lo <= lv <= hi:
                raise InputError(f"{what_if.name} level {lv} is not {lo}..{hi}")
            out.append(Scenario(WHAT_IF, what_if.name, lv))
            continue
        if len(parts) == 1 and parts[0] in MARIADB_CODECS:
            servers = (
                [Vendor.MYSQL, Vendor.MARIADB] if parts[0] in MYSQL_CODECS else [Vendor.MARIADB]
            )
            parts = [servers[0], parts[0]] if len(servers) == 1 else parts
            if len(servers) == 2:
                for server in servers:
                    out.append(_scenario(server, parts[0], level))
                continue
        if len(parts) != 2 or parts[0] not in (Vendor.MYSQL, Vendor.MARIADB):
            raise InputError(f"unknown algorithm {item!r}; valid: {', '.join(valid)}")
        out.append(_scenario(Vendor(parts[0]), parts[1], level))
    seen: dict[Scenario, None] = {}
    for s in out:
        seen.setdefault(s)
    return list(seen)


def _scenario(server: Vendor, name: str, level: int | None) -> Scenario:
    codecs = codec_names(server)
    if name not in codecs:
        raise InputError(f"{server} has no {name!r} page compression; it has {', '.join(codecs)}")
    levels = codec(name).levels
    if levels is not None:
        level = codec(name).default_level if level is None else level
        if level is None or not levels[0] <= level <= levels[1]:
            raise InputError(f"{server}:{name} level {level} is not {levels[0]}..{levels[1]}")
    elif level is not None:
        raise InputError(f"{server}:{name} takes no level")
    return Scenario(server, name, level)


@dataclass(frozen=True, order=True)
class BlockSpec:
    """A filesystem allocation rule: plain blocks, or NTFS clusters freed per 16-cluster unit."""

    size: int
    ntfs_unit: int | None = None

    @property
    def label(self) -> str:
        base = _human_size(self.size)
        return f"ntfs:{base}" if self.ntfs_unit else base

    def allocated(self, stored: int, page_size: int) -> int:
        if self.ntfs_unit:
            return ntfs_allocated(stored, page_size, self.ntfs_unit)
        return allocated_for_image(stored, page_size, self.size)


def _human_size(n: int) -> str:
    return f"{n // 1024}K" if n >= 1024 and n % 1024 == 0 else str(n)


BLOCK_SIZES = (512, 1024, 2048, 4096, 8192, 16384, 65536)
NTFS_CLUSTERS = (512, 1024, 2048, 4096)


def parse_block_sizes(specs: Iterable[str]) -> list[BlockSpec]:
    out: list[BlockSpec] = []
    valid = [_human_size(b).lower() for b in BLOCK_SIZES] + [
        "ntfs:" + _human_size(c).lower() for c in NTFS_CLUSTERS
    ]
    for item in _items(specs):
        if item == "all":
            out.extend(BlockSpec(b) for b in BLOCK_SIZES)
            out.extend(BlockSpec(c, 16 * c) for c in NTFS_CLUSTERS)
            continue
        ntfs = item.startswith("ntfs:")
        size = _parse_size(item.removeprefix("ntfs:"))
        if (
            size is None
            or (ntfs and size not in NTFS_CLUSTERS)
            or (not ntfs and size not in BLOCK_SIZES)
        ):
            raise InputError(f"unknown block size {item!r}; valid: {', '.join(valid)}, all")
        out.append(BlockSpec(size, 16 * size if ntfs else None))
    return sorted(set(out), key=lambda b: (b.ntfs_unit is not None, b.size))


def _parse_size(text: str) -> int | None:
    text = text.strip().lower().removesuffix("b").removesuffix("i")
    mult = 1
    if text.endswith("k"):
        mult, text = 1024, text[:-1]
    return int(text) * mult if text.isdigit() else None


# --- per-page measurement --------------------------------------------------------------------


@dataclass
class Accumulator:
    """Sums over the pages seen, enough for means and confidence intervals."""

    n: int = 0
    #: pages some scenario compressed (not all zeros, not a page every server keeps plain)
    compressed_pages: int = 0
    cost: dict[tuple[Scenario, BlockSpec], list[float]] = field(default_factory=dict)
    #: pages the ROW_FORMAT=COMPRESSED what-if looked at (a systematic subsample)
    zip_n: int = 0
    zip_cost: dict[int, list[float]] = field(default_factory=dict)  # kbs -> [sum, sumsq]
    zip_index_pages: int = 0
    zip_failures: dict[int, int] = field(default_factory=dict)
    #: pages followed by a punched hole: each ends an extent
    holes: dict[tuple[Scenario, BlockSpec], int] = field(default_factory=dict)
    #: pages by the length of their compressed payload, per scenario (-1: stored plain), not
    #: yet in ``cost`` and ``holes`` (:meth:`settle`)
    lengths: dict[Scenario, dict[int, int]] = field(default_factory=dict)
    #: the stored pages read, for the current state (:attr:`SimConfig.tally_stored`)
    stored: StoredTally | None = None
    #: seconds spent in each scenario's codec (what a page of it costs the adaptive sample)
    seconds: dict[Scenario, float] = field(default_factory=dict)
    #: each page's payload length per scenario, (page numbers, lengths; -2: an all-zero page),
    #: kept when :attr:`SimConfig.per_page` asks (the default run's control variates,
    #: :func:`_controlled`)
    pages_of: dict[Scenario, tuple[array[int], array[int]]] = field(default_factory=dict)

    def page_record(self, s: Scenario) -> tuple[array[int], array[int]]:
        got = self.pages_of.get(s)
        if got is None:
            got = self.pages_of[s] = (array("I"), array("i"))  # 8 bytes a page
        return got

    def add_cost(self, key: tuple[Scenario, BlockSpec], value: float) -> None:
        slot = self.cost.setdefault(key, [0.0, 0.0])
        slot[0] += value
        slot[1] += value * value

    def settle(self, cfg: SimConfig) -> None:
        """Fold :attr:`lengths` into :attr:`cost` and :attr:`holes`: each distinct payload
        length's stored size and allocation worked out once per block size, not per page
        (sums in exact integers, as the page-by-page sums were while below 2**53)."""
        psize = cfg.page_size
        for s, hist in self.lengths.items():
            for b in cfg.blocks:
                total = total_sq = holes = 0
                for length, count in hist.items():
                    stored = None if length < 0 else s.stored_size(length, psize, b.size)
                    cost = b.allocated(stored if stored is not None else psize, psize)
                    total += cost * count
                    total_sq += cost * cost * count
                    if 0 < cost < psize:
                        holes += count
                slot = self.cost.setdefault((s, b), [0.0, 0.0])
                slot[0] += total
                slot[1] += total_sq
                if holes:
                    self.holes[(s, b)] = self.holes.get((s, b), 0) + holes
        self.lengths = {}  # a new dict: a meter adding to the old one looks its lists up again

    def merge(self, other: Accumulator) -> None:
        for scenario, hist in other.lengths.items():
            mine = self.lengths.setdefault(scenario, {})
            for length, count in hist.items():
                mine[length] = mine.get(length, 0) + count
        self.n += other.n
        self.compressed_pages += other.compressed_pages
        for key, (s, s2) in other.cost.items():
            slot = self.cost.setdefault(key, [0.0, 0.0])
            slot[0] += s
            slot[1] += s2
        for key, v in other.holes.items():
            self.holes[key] = self.holes.get(key, 0) + v
        for kbs, v in other.zip_failures.items():
            self.zip_failures[kbs] = self.zip_failures.get(kbs, 0) + v
        for kbs, (s, s2) in other.zip_cost.items():
            slot = self.zip_cost.setdefault(kbs, [0.0, 0.0])
            slot[0] += s
            slot[1] += s2
        self.zip_index_pages += other.zip_index_pages
        self.zip_n += other.zip_n
        for sc, (pages, lengths) in other.pages_of.items():
            mine_p, mine_l = self.page_record(sc)
            mine_p.extend(pages)
            mine_l.extend(lengths)
        for sc, t in other.seconds.items():
            self.seconds[sc] = self.seconds.get(sc, 0.0) + t
        if other.stored is not None:
            if self.stored is None:
                self.stored = StoredTally()
            self.stored.merge(other.stored)


KEY_BLOCK_SIZES = (1024, 2048, 4096, 8192, 16384)


@dataclass(frozen=True)
class SimConfig:
    scenarios: tuple[Scenario, ...]
    blocks: tuple[BlockSpec, ...]
    page_size: int
    clustered_ids: frozenset[int] = frozenset()
    #: look at every n-th page for the ROW_FORMAT=COMPRESSED what-if (it deflates a page
    #: several times over; 0: never)
    zip_every: int = 1
    #: tally the stored pages for the current state too (a full scan: it reads every page)
    tally_stored: bool = False
    #: keep each page's payload length per scenario (:attr:`Accumulator.pages_of`)
    per_page: bool = False


#: :attr:`Accumulator.pages_of`'s length for an all-zero page (-1: a page stored plain)
ZERO_PAGE = -2


def _page_cost(s: Scenario, b: BlockSpec, psize: int, length: int) -> int:
    """What a page whose payload is ``length`` bytes allocates (as :meth:`Accumulator.settle`
    counts it; -1: stored plain, :data:`ZERO_PAGE`: all zeros)."""
    if length == ZERO_PAGE:
        return _zero_page_cost(s, b, psize)
    stored = None if length < 0 else s.stored_size(length, psize, b.size)
    return b.allocated(stored if stored is not None else psize, psize)


def _zero_page_cost(s: Scenario, b: BlockSpec, psize: int) -> int:
    # A never-written page: MySQL extends files with posix_fallocate and punches holes only
    # when it writes a page, so the page stays allocated; MariaDB extends page-compressed
    # files sparsely, so it is a hole (seen on the samples' live files).
    return b.allocated(psize, psize) if s.server is Vendor.MYSQL else 0


def measure_zero_pages(first: int, end: int, cfg: SimConfig, acc: Accumulator) -> None:
    """What :meth:`_Meter.pages` adds for each all-zero page of [first, end), added at once:
    a file's holes cost nothing to read and must cost nothing per page to count."""
    count = end - first
    acc.n += count
    if cfg.per_page:
        for s in cfg.scenarios:
            pages, lengths = acc.page_record(s)
            pages.extend(range(first, end))
            lengths.extend(itertools.repeat(ZERO_PAGE, count))
    for s in cfg.scenarios:
        for b in cfg.blocks:
            cost = _zero_page_cost(s, b, cfg.page_size)
            slot = acc.cost.setdefault((s, b), [0.0, 0.0])
            slot[0] += cost * count
            slot[1] += cost * cost * count
    if cfg.zip_every > 0:
        # pages n with n % zip_every == 0 in [first, end); their what-if cost is 0
        zips = (end - 1) // cfg.zip_every - (first - 1) // cfg.zip_every if end > first else 0
        acc.zip_n += zips
        if zips:
            for kbs in KEY_BLOCK_SIZES:
                _zip_add(acc, kbs, 0.0)


class _Meter:
    """One scan's per-page work, resolved once per run and thread (:func:`_meter`): each
    scenario's page types kept plain, whether it keeps MySQL's 38-byte header out, and a
    :meth:`ibdtool.parsers.codecs.Codec.sizer` (its codec, build and level chosen once, its context
    and buffers reused page after page). A page adds one count per scenario to a histogram of
    payload lengths; block sizes are applied to the lengths once, at the end
    (:meth:`Accumulator.settle`)."""

    def __init__(self, scenarios: Sequence[Scenario]) -> None:
        self.plans = [
            (
                s,
                kept_plain_types(s),
                MYSQL_HEADER if s.server is Vendor.MYSQL else 0,
                s.codec.sizer(s.level, s.server),
            )
            for s in scenarios
        ]
        #: the histograms being added to (an Accumulator's), and each scenario's among them
        self.lengths: dict[Scenario, dict[int, int]] | None = None
        self.hists: list[dict[int, int]] = []

    def pages(
        self,
        pages: Iterable[tuple[bytes | memoryview, int]],
        cfg: SimConfig,
        acc: Accumulator,
    ) -> None:
        """Add uncompressed logical pages, (bytes or a view valid until the next one, page
        number) pairs; one call a chunk, its lookups made once."""
        zero = _zeros(cfg.page_size)
        every = cfg.zip_every
        if acc.lengths is not self.lengths:  # a new batch (or settled): looked up once
            self.lengths = acc.lengths
            self.hists = [acc.lengths.setdefault(s, {}) for s, *_ in self.plans]
        plans = [
            (i, kept, skip, size, hist)
            for i, ((_s, kept, skip, size), hist) in enumerate(
                zip(self.plans, self.hists, strict=True)
            )
        ]
        spent = [0.0] * len(plans)  # seconds in each scenario's codec
        clock = time.perf_counter
        record = [acc.page_record(s) for s, *_ in self.plans] if cfg.per_page else None
        seen = compressed_pages = 0
        for page, page_no in pages:
            ptype = page[24] << 8 | page[25]
            # an all-zero page has type 0: the type word rules out nearly every other page
            if not ptype and bytes(page) == zero:
                measure_zero_pages(page_no, page_no + 1, cfg, acc)
                continue
            seen += 1
            compressed = False
            for i, kept, skip, size, hist in plans:
                if page_no == 0 or ptype in kept:
                    length = -1
                else:
                    t0 = clock()
                    length = size(page[skip:] if skip else page)
                    spent[i] += clock() - t0
                    compressed = True
                hist[length] = hist.get(length, 0) + 1
                if record is not None:
                    record[i][0].append(page_no)
                    record[i][1].append(length)
            compressed_pages += compressed
            if every > 0 and page_no % every == 0:
                acc.zip_n += 1
                _measure_zip(bytes(page), ptype, cfg, acc)
        acc.n += seen
        acc.compressed_pages += compressed_pages
        for (sc, *_), t in zip(self.plans, spent, strict=True):
            acc.seconds[sc] = acc.seconds.get(sc, 0.0) + t


def kept_plain_types(s: Scenario) -> frozenset[int]:
    """The page types ``s`` stores plain on any page but page 0, as one set to look a page's
    type up in (:meth:`Scenario.keeps_plain` says which; they are among the types some
    server keeps plain)."""
    return frozenset(t for t in _PLAIN_SOMEWHERE if s.keeps_plain(1, t))


_meters = threading.local()


def _meter(scenarios: tuple[Scenario, ...]) -> _Meter:
    """This thread's :class:`_Meter` for ``scenarios``, made on the first batch of a run (in
    the parent before the workers fork, so they inherit it) and kept for the next ones."""
    found: tuple[tuple[Scenario, ...], _Meter] | None = getattr(_meters, "last", None)
    if found is None or found[0] != scenarios:
        found = _meters.last = (scenarios, _Meter(scenarios))
    return found[1]


_ZEROS: dict[int, bytes] = {}


def _zeros(size: int) -> bytes:
    z = _ZEROS.get(size)
    if z is None:
        z = _ZEROS[size] = bytes(size)
    return z


def _zip_add(acc: Accumulator, kbs: int, value: float) -> None:
    slot = acc.zip_cost.setdefault(kbs, [0.0, 0.0])
    slot[0] += value
    slot[1] += value * value


ZIP_PAGE_OVERHEAD = 94 + 8 + 16  # FIL + index header, zlib framing, fields info and log end


def _heap_without_headers(page: bytes, heap_top: int) -> bytes:
    """The record heap [120, heap_top) without the 5-byte record headers, which a compressed
    page keeps in its dense directory instead of the zlib stream (§7.1). Records are found
    by following the compact next pointers from the infimum (§5.2)."""
    if heap_top <= 120:
        return b""
    if not page[42] & 0x80:  # redundant (old-style) page: keep it whole
        return page[120:heap_top]
    origins: list[int] = []
    origin = 99
    for _ in range(8192):
        origin = (origin + int.from_bytes(page[origin - 2 : origin], "big")) & 0xFFFF
        if origin == 112 or not 125 <= origin < heap_top:
            break
        origins.append(origin)
    if not origins:
        return page[120:heap_top]
    origins.sort()
    parts = []
    start = 120
    for o in origins:
        if o - 5 >= start:
            parts.append(page[start : o - 5])
            start = o
    parts.append(page[start:heap_top])
    return b"".join(parts)


def zip_pieces(page: bytes, clustered: bool, kbs: int, logical_size: int) -> float:
    """How many ``kbs``-byte ROW_FORMAT=COMPRESSED pages this index page's records fill.

    The record heap is deflated the way ``page_zip_compress`` does (zlib level 6), with the
    dense directory (2 bytes a record) and the uncompressed columns (13 bytes a record on a
    clustered leaf, 4 on a node-pointer page) beside it (§7.1). InnoDB splits a page when its
    records no longer compress into ``kbs``, and inserts flow on into the next page, so the
    records are packed greedily into pieces, each compressed on its own; the last piece
    counts for the share of a full one it fills. A compressed page also holds no more records
    than its uncompressed image can, so the result is at least this page's fill.
    """
    n_heap = int.from_bytes(page[42:44], "big") & 0x7FFF
    heap_top = int.from_bytes(page[40:42], "big")
    garbage = int.from_bytes(page[46:48], "big")
    level = int.from_bytes(page[64:66], "big")
    n_recs = max(0, n_heap - 2)
    heap = _heap_without_headers(page, heap_top)
    if not n_recs or not heap:
        return 1.0
    fill = max(0, heap_top - 120 - garbage) / (logical_size - 132)
    per_rec = 2 + (4 if level > 0 else 13 if clustered else 0)
    rec_len = len(heap) / n_recs
    whole = len(zlib.compress(heap, 6))
    if ZIP_PAGE_OVERHEAD + whole + n_recs * per_rec <= kbs:
        compressed_share = 0.0  # it fits: the uncompressed page's capacity is the limit
    else:
        # records per piece, from the compression ratio of a piece-sized run of records
        # (small runs deflate worse than the whole heap): estimate, measure, solve again
        room = kbs - ZIP_PAGE_OVERHEAD
        ratio = whole / len(heap)
        per_piece = max(1, int(room / (rec_len * ratio + per_rec)))
        for _ in range(2):
            chunk = heap[: max(1, int(per_piece * rec_len))]
            ratio = len(zlib.compress(chunk, 6)) / len(chunk)
            per_piece = max(1, int(room / (rec_len * ratio + per_rec)))
        compressed_share = n_recs / per_piece
    share = max(fill, compressed_share)
    alone = page[8:12] == b"\xff\xff\xff\xff" and page[12:16] == b"\xff\xff\xff\xff"
    # a page alone on its level (a root, a one-page index) is a whole page however empty
    return max(1.0, share) if alone else share


def _measure_zip(page: bytes, ptype: int, cfg: SimConfig, acc: Accumulator) -> None:
    if ptype != FIL_PAGE_INDEX or cfg.page_size > 16384:
        for kbs in KEY_BLOCK_SIZES:
            if kbs <= cfg.page_size:
                _zip_add(acc, kbs, kbs)
        return
    index_id = int.from_bytes(page[66:74], "big")
    clustered = index_id in cfg.clustered_ids if cfg.clustered_ids else True
    acc.zip_index_pages += 1
    for kbs in KEY_BLOCK_SIZES:
        if kbs > cfg.page_size:
            continue
        pieces = zip_pieces(page, clustered, kbs, cfg.page_size)
        if pieces > 1:
            acc.zip_failures[kbs] = acc.zip_failures.get(kbs, 0) + 1
        _zip_add(acc, kbs, pieces * kbs)


# --- driving a scan --------------------------------------------------------------------------


def scan_pages(ts: Tablespace, page_nos: Sequence[int], cfg: SimConfig) -> Accumulator:
    """Measure ``page_nos``; a run of consecutive numbers (a ``range``) is read in big chunks
    into one reused buffer, its pages measured as views of it, and its pages in long holes
    are counted without a read. Pages are neither verified nor decoded: only their logical
    bytes are needed (:func:`ibdtool.parsers.page.logical_image`)."""
    acc = Accumulator()
    meter = _meter(cfg.scenarios)
    tally = acc.stored = StoredTally() if cfg.tally_stored else None
    fmt = ts.format
    psize = ts.physical_size
    dec = ts.decryptor
    zipped = fmt.zip

    def one(stored: memoryview, n: int) -> None:
        if dec is not None:
            plain = dec.decrypt(stored, n)
            if plain is not None:
                stored = memoryview(plain)
        page = logical_image(stored, fmt)
        meter.pages([(_uncompressed(ts, bytes(page)) if zipped else page, n)], cfg, acc)

    if page_nos and page_nos[-1] - page_nos[0] + 1 == len(page_nos):
        # coarse: a worker's batch needs no exact map of a page-compressed file (a hole a
        # page, a second of SEEK_DATA each batch); zero pages read are measured as holes are
        for first, end, has_data in ts.page_runs(page_nos[0], page_nos[-1] + 1, coarse=True):
            if not has_data:
                measure_zero_pages(first, end, cfg, acc)
                continue
            for n, chunk in ts.read_chunks(first, end):
                if tally is not None:
                    tally.add_chunk(chunk, n, fmt)
                if dec is not None or zipped:
                    for i in range(len(chunk) // psize):
                        one(chunk[i * psize : (i + 1) * psize], n + i)
                    continue
                # the pages whose type word cannot mean a compressed image are their own
                # logical image: measured as they lie in the buffer, with no call between
                sized = set(sized_pages(chunk, psize, fmt.full_crc32))
                meter.pages(_views(chunk, n, psize, sized, fmt), cfg, acc)
        ts.check_not_shrunk()
        return acc
    for n in page_nos:
        stored = memoryview(ts.raw_page(n))
        if tally is not None:
            tally.add_chunk(stored, n, fmt)
        one(stored, n)
    return acc


def _views(
    chunk: memoryview, first: int, psize: int, sized: set[int], fmt: SpaceFormat
) -> Iterator[tuple[bytes | memoryview, int]]:
    """The logical pages of a chunk with their numbers: a page whose type word cannot mean a
    compressed image as the view of it in the buffer, the others through logical_image."""
    for i in range(len(chunk) // psize):
        view = chunk[i * psize : (i + 1) * psize]
        yield (logical_image(view, fmt) if i in sized else view), first + i


def _uncompressed(ts: Tablespace, page: bytes) -> bytes:
    """A ROW_FORMAT=COMPRESSED page as the server's uncompressed frame (index pages rebuilt)."""
    if not ts.format.zip:
        return page
    # here, not at import: the rebuild (~10 ms of modules) serves ROW_FORMAT=COMPRESSED alone
    from ibdtool.parsers.zip_page import ZipPageError, zip_logical_image

    try:
        return zip_logical_image(page, ts.logical_size)
    except ZipPageError:  # a damaged index page: its stored bytes, at the logical size
        return page + bytes(ts.logical_size - len(page))


def _batches(ts: Tablespace, page_nos: Sequence[int], size: int) -> Iterator[Sequence[int]]:
    """``page_nos`` in batches of ``size``; a whole range is cut at its holes, each run of
    pages in a hole one batch, however long (it is counted, not read)."""
    if not isinstance(page_nos, range):
        for i in range(0, len(page_nos), size):
            yield page_nos[i : i + size]
        return
    for first, end, has_data in ts.page_runs(page_nos.start, page_nos.stop):
        step = size if has_data else end - first
        for i in range(first, end, step):
            yield range(i, min(end, i + step))


#: a worker's task: path, pages, what to measure, key, and the run it belongs to
_Task = tuple[str, Sequence[int], SimConfig, "Keyring | None", int]
#: the tablespace a worker has open, and the run it was opened for
_worker_open: list[tuple[int, Tablespace]] = []
_runs = itertools.count()


def _worker(args: _Task) -> Accumulator:
    """Measure one batch; the tablespace is opened once per run and worker, not per batch
    (opening it reads page 0 and probes the file's holes: ~2 ms, 32 batches a run)."""
    path, page_nos, cfg, keyring, run = args
    if not _worker_open or _worker_open[0][0] != run:
        while _worker_open:
            _worker_open.pop()[1].close()
        _worker_open.append((run, Tablespace(path, keyring)))
    return scan_pages(_worker_open[0][1], page_nos, cfg)


def _worker_died(args: _Task, why: str) -> Accumulator:
    raise InputError(f"{args[0]}: {why} while simulating pages {args[1][0]}..{args[1][-1]}")


@dataclass
class ScenarioResult:
    scenario: Scenario
    block: BlockSpec
    predicted: int
    ci95: tuple[int, int] | None
    saving_pct: float
    #: CPU per page (:mod:`ibdtool.advise.cpu_cost`); None when no page was timed
    compress: Cost | None = None
    decompress: Cost | None = None
    #: FIEMAP extents the file would have (a punched hole ends one) and their 95% interval
    extents: int | None = None
    extents_ci95: tuple[int, int] | None = None
    #: what a DROP TABLE would then cost (:mod:`ibdtool.fs.extents`)
    drop_cost: DropCost | None = None
    #: pages this scenario was measured on (the default run samples each until ±1%)
    pages_sampled: int = 0
    #: as rebuilt: the same file written uncompressed in this layout (compression's own gain
    #: is measured against it; the saving against today's allocation holds the rebuild's too)
    uncompressed: int | None = None

    @property
    def compress_us(self) -> float | None:
        """Median CPU µs to compress a page."""
        return None if self.compress is None else self.compress.median

    @property
    def decompress_us(self) -> float | None:
        return None if self.decompress is None else self.decompress.median

    @property
    def cost(self) -> Cost | None:
        """Compress + decompress, repetition by repetition: what the advice ranks by."""
        if self.compress is None or self.decompress is None:
            return None
        return self.compress + self.decompress


@dataclass
class ZipResult:
    key_block_size: int
    failure_rate: float
    predicted_size: int
    ci95: tuple[int, int] | None


@dataclass
class SimResult:
    path: str
    pages: int
    pages_sampled: int
    page_size: int
    allocated_size: int
    logical_size: int
    fs_block_size: int
    full: bool
    seed: int
    results: list[ScenarioResult]
    row_compressed: list[ZipResult]
    current: dict[str, Any]
    notes: list[str]
    #: the source is ROW_FORMAT=COMPRESSED: "today" is already compressed
    zip_source: bool = False
    #: pages each codec was timed on, and how many times (0: not timed)
    cost_pages: int = 0
    cost_repetitions: int = 0
    #: the file's extents today and what a DROP TABLE of it would cost now
    drop_now: DropCost | None = None
    #: the file simulated is the one a rebuild writes (:mod:`ibdtool.advise.rebuild`)
    as_rebuilt: bool = False
    #: what the rebuilt file allocates uncompressed (the rebuild alone)
    rebuild: Estimate | None = None
    #: pages the rebuild writes (the rest of its ``pages`` are never-written extent space)
    rebuilt_pages_written: int | None = None

    @property
    def rebuild_saving(self) -> Estimate | None:
        """Bytes the rebuild alone frees (no compression): the bloat of a table's history."""
        r = self.rebuild
        if r is None:
            return None
        a = self.allocated_size
        return Estimate(a - r.value, a - r.high, a - r.low, r.basis)

    def to_json(self) -> dict[str, Any]:
        """The result's own fields: ``simulate --json`` adds the recommendations drawn from them
        (:func:`ibdtool.advise.recommend.simulation_json`)."""
        return {
            "path": self.path,
            "pages": self.pages,
            "pages_sampled": self.pages_sampled,
            "page_size": self.page_size,
            "logical_size": self.logical_size,
            "allocated_size": self.allocated_size,
            "fs_block_size": self.fs_block_size,
            "full_scan": self.full,
            "seed": self.seed,
            "as_rebuilt": self.as_rebuilt,
            "rebuild_alone": None
            if self.rebuild is None
            else {
                "allocated": self.rebuild.to_json(),
                "saving": self.rebuild_saving.to_json() if self.rebuild_saving else None,
                "pages_written": self.rebuilt_pages_written,
            },
            "current": self.current,
            "drop_cost_now": None if self.drop_now is None else self.drop_now.to_json(),
            "cost": None
            if not self.cost_repetitions
            else {"clock": CLOCK, "pages": self.cost_pages, "repetitions": self.cost_repetitions},
            "results": [
                {
                    "server": r.scenario.server,
                    "algorithm": r.scenario.algorithm,
                    "level": r.scenario.level,
                    "block_size": r.block.size,
                    "ntfs_unit": r.block.ntfs_unit,
                    "predicted_allocated": r.predicted,
                    "ci95": list(r.ci95) if r.ci95 else None,
                    "pages_sampled": r.pages_sampled,
                    "saving_pct": round(r.saving_pct, 2),
                    "uncompressed_allocated": r.uncompressed,
                    "compress_us_per_page": None
                    if r.compress_us is None
                    else round(r.compress_us, 1),
                    "decompress_us_per_page": None
                    if r.decompress_us is None
                    else round(r.decompress_us, 1),
                    "compress_cost": None if r.compress is None else r.compress.to_json(),
                    "decompress_cost": None if r.decompress is None else r.decompress.to_json(),
                    "extents_after": r.extents,
                    "extents_after_ci95": list(r.extents_ci95) if r.extents_ci95 else None,
                    "drop_cost_after": None if r.drop_cost is None else r.drop_cost.to_json(),
                    # a cold full scan after: the layout against dense, and the CPU apart
                    "scan_layout_factor_after": None
                    if r.extents is None
                    else round(
                        Layout(
                            r.extents, r.extents, r.predicted, self.logical_size, None
                        ).scan_factor,
                        3,
                    ),
                    "scan_decompress_cpu_s": None
                    if r.decompress_us is None
                    else round(r.decompress_us * self.pages / 1e6, 3),
                }
                for r in self.results
            ],
            "row_compressed": [
                {
                    "key_block_size": z.key_block_size,
                    "failure_rate": round(z.failure_rate, 4),
                    "predicted_size": z.predicted_size,
                    "ci95": list(z.ci95) if z.ci95 else None,
                }
                for z in self.row_compressed
            ],
            "notes": self.notes,
        }


def extent_tree_overhead(extents: int, block: int) -> int:
    """Blocks ext4 spends on the extent tree: the inode holds 4 extents; beyond that each
    index block holds (block - 12) / 12 of them (seen: 1 block for 26 extents, 3 for 1000)."""
    if extents <= 4:
        return 0
    per_block = max(1, (block - 12) // 12)
    return -(-extents // per_block) * block


def _extents_after(
    holes: int, n: int, population: int, full: bool, size: int
) -> tuple[int, tuple[int, int] | None]:
    """The FIEMAP extents a page-compressed file would have: each punched hole ends one (a
    page whose image fills it does not), plus the fewest a dense file has; with a sample, the
    count scaled up and its 95% interval (a proportion's normal approximation)."""
    base = dense_extents(size)
    if n == 0:
        return base, None
    p = holes / n
    est = round(p * population) + base
    if full:
        return est, None
    half = Z95 * math.sqrt(p * (1 - p) / n) * population
    return est, (max(base, round(est - half)), round(est + half))


def _estimate(
    total: float, total_sq: float, n: int, population: int, full: bool, cap: float
) -> tuple[int, tuple[int, int] | None]:
    """The total over ``population`` pages from ``n`` of them, with its 95% interval (None:
    exact); ``cap`` is the most one page can cost (see :func:`_half_width`)."""
    if n == 0:
        return 0, None
    mean, half = _half_width(total, total_sq, n, population, cap)
    predicted = mean * population
    if full or n >= population:
        return round(predicted), None
    return round(predicted), (max(0, round(predicted - half)), round(predicted + half))


def _clustered_index_ids(ts: Tablespace) -> frozenset[int]:
    try:
        from ibdtool.tablespace import summarise_sdi

        summary = summarise_sdi(ts.sdi())
    except InputError:
        return frozenset()
    if summary and summary.indexes:
        # one table's names are bare, several tables' (mysql.ibd) are "table.index"
        primary = [
            i
            for i, name in summary.indexes.items()
            if name == "PRIMARY" or name.endswith(".PRIMARY")
        ]
        return frozenset(primary or [min(summary.indexes)])
    # Without a dictionary: the clustered index is created first, so it has the lowest id
    # among the index roots, which sit in the first pages of a file-per-table tablespace.
    ids = [
        info.index.index_id
        for info in ts.pages(0, min(ts.n_pages, 64))
        if info.index is not None and info.type_name == "INDEX"
    ]
    return frozenset([min(ids)]) if ids else frozenset()


def simulate_path(
    path: str | os.PathLike[str],
    scenarios: Sequence[Scenario] = DEFAULT_SCENARIOS,
    blocks: Sequence[BlockSpec] | None = None,
    *,
    sample: int | None = None,
    full: bool | None = None,
    budget: float = SAMPLE_BUDGET,
    seed: int = 1,
    jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    row_compressed: bool = True,
    keyring: Keyring | None = None,
    costs: bool = True,
    as_rebuilt: bool = True,
    plan_sample_above: int | None = SAMPLE_ABOVE_PAGES,
    plan_sample_leaves: int = SAMPLE_LEAVES,
    plan_target: float | None = PLAN_TARGET,
) -> SimResult:
    """Simulate every scenario × block size on ``path`` (see module doc).

    ``as_rebuilt`` (the default) simulates the file the conversion's rebuild writes
    (:mod:`ibdtool.advise.rebuild`): its pages synthesised from the records, sampled and
    compressed as real pages are, the never-written rest of its extents counted as the
    server leaves it, each interval widened by the model's own error. ``as_rebuilt=False``
    simulates the pages as they are (what punching holes alone would do). The rebuild is
    planned from a sample of the leaves when the file has more than ``plan_sample_above``
    index pages (not with ``full``; None: never), ``plan_sample_leaves`` leaves first, then
    more until its count of pages written is within ``plan_target`` (relative; None: the
    first sample is the plan), its page count's interval combined with each codec's
    sampling interval in quadrature (independent estimates of a product's factors); the
    codecs are then sampled to what is left of the ±1% (:func:`_codec_target`).

    ``row_compressed=False`` skips the ROW_FORMAT=COMPRESSED what-if (``row_compressed`` is
    then empty), which costs several deflates per index page (``ibdtool report`` does this).
    ``keyring`` opens an encrypted tablespace (its pages are simulated decrypted).
    ``costs=False`` leaves the CPU cost out (about 0.3 s of CPU a file; ``report`` has no use
    for it).

    By default (neither ``sample`` nor ``full``) each scenario is sampled until its 95%
    interval is within ±1% of its prediction (:func:`_adaptive`), for at most ``budget``
    seconds after a first round of :data:`PILOT_PAGES` pages: a fast codec goes on to more
    pages while a slow one whose pages vary little stops early. A file of at most
    :data:`SMALL_FILE_PAGES` pages is scanned whole.
    """
    with Tablespace(path, keyring) as ts:
        alloc = ts.data_map  # sizes and data ranges; no FIEMAP extent list
        blocks = list(blocks) if blocks else [BlockSpec(alloc.fs_block_size)]
        # which index is clustered matters to the ROW_FORMAT=COMPRESSED what-if alone
        clustered = _clustered_index_ids(ts) if row_compressed else frozenset()
        cfg = SimConfig(tuple(scenarios), tuple(blocks), ts.logical_size, clustered)
        n_pages = ts.n_pages
        rng = random.Random(seed)
        notes: list[str] = []
        image: RebuiltImage | None = None
        if as_rebuilt:
            try:
                image = plan_rebuild(
                    ts,
                    sample_above=None if full else plan_sample_above,
                    sample_leaves=plan_sample_leaves,
                    seed=seed,
                    target=plan_target,
                )
            except InputError:  # no index page: nothing a rebuild would repack
                notes.append("no index page to rebuild: the file simulated as it is")
        if image is not None:
            n_pages = image.data_pages  # sampled: the pages the rebuild writes
            notes += image.notes
            if image.data_pages <= SMALL_FILE_PAGES and full is None and sample is None:
                full = True
        if ts.format.zip and image is None:
            notes.append(
                "ROW_FORMAT=COMPRESSED source: its index pages rebuilt uncompressed, with the rows "
                "each zip page holds (an ALTER to DYNAMIC repacks them), other pages at the "
                "logical size"
            )
        adaptive = full is None and sample is None and n_pages > SMALL_FILE_PAGES
        if full is None:
            full = sample is None and not adaptive
        page_nos: Sequence[int]
        if full:
            page_nos = range(n_pages)  # never a list: a 15 TiB file has a billion pages
        elif adaptive:
            page_nos = rng.sample(range(n_pages), min(n_pages, MAX_ADAPTIVE_PAGES))
        else:
            sample = min(sample or n_pages, n_pages)
            page_nos = sorted(rng.sample(range(n_pages), sample))
            full = sample >= n_pages
        for s in cfg.scenarios:  # load the codec libraries once, before the workers fork
            s.decompress(s.compress(bytes(cfg.page_size)), cfg.page_size)
        zip_every = 1 if adaptive else max(1, len(page_nos) // ZIP_SUBSAMPLE_TARGET)
        # a full scan reads every page: it tallies them for the current state as it goes
        cfg = replace(
            cfg,
            zip_every=zip_every if row_compressed else 0,
            tally_stored=full and image is None,
            per_page=adaptive,
        )
        jobs = jobs or os.cpu_count() or 1
        if threading.current_thread() is not threading.main_thread():
            # forking while other threads run (the TUI's workers) can deadlock the child on a
            # lock another thread held, and a fork server cannot start under Textual (it
            # replaces the standard descriptors): scan in this process instead
            jobs = 1
        scan: _Scan | _RebuiltScan = (
            _Scan(ts, str(path), keyring, jobs, progress)
            if image is None
            else _RebuiltScan(image, str(path), progress)
        )
        with scan:
            if adaptive:
                assert isinstance(page_nos, list)
                target = _codec_target(image)
                acc, per_scenario, page_nos, unsettled = _adaptive(
                    scan, page_nos, cfg, n_pages, budget, target, _stage_one(image)
                )
                if unsettled:
                    widest = max(unsettled.values())
                    rest = (
                        f"; the others ±{100 * target:.2g}%"
                        if len(unsettled) < len(cfg.scenarios)
                        else ""
                    )
                    notes.append(
                        f"sampled for {budget:g}s: {', '.join(x.label for x in unsettled)} "
                        f"within ±{100 * widest:.2g}%{rest} (the sampling's share of the "
                        "interval; --sample N or --full for tighter intervals)"
                    )
            else:
                acc = scan.run(page_nos, cfg, len(page_nos))
                acc.settle(cfg)
                per_scenario = dict.fromkeys(cfg.scenarios, acc.n)
                if acc.n != len(page_nos):  # a worker saw a shorter file: never partial
                    raise InputError(f"{path}: file shrank while reading")
        if cfg.scenarios and not acc.compressed_pages:
            notes.append(
                "no page with data was simulated (every page looked at is all zeros, or one "
                "no server compresses): the prediction is what empty pages cost"
            )
        timing: CostRun[Scenario] | None = None
        if costs and acc.compressed_pages:
            check = (lambda: progress(len(page_nos), len(page_nos))) if progress else None
            timing = _time_codecs(
                ts, page_nos if image is None else range(ts.n_pages), cfg.scenarios, check
            )
        current = _current_state(ts, (acc.stored or StoredTally()) if cfg.tally_stored else None)
        drop_now = drop_cost(path, ts.allocation.extents, ts.size)
        logical_size = ts.size
    allocated = alloc.allocated
    where = filesystem_of(path)
    drop_rate, rate_source = rate_for(where)
    results: list[ScenarioResult] = []
    controlled: dict[Scenario, Scenario] = {}  # the scenarios estimated with a control variate
    index = _PageIndex(acc)
    ctarget = _codec_target(image)
    for s in cfg.scenarios:
        for b in cfg.blocks:
            total, total_sq = acc.cost.get((s, b), [0.0, 0.0])
            n = per_scenario.get(s, 0)
            stage1 = _stage_one(image)
            if stage1 is not None:
                predicted, ci = _two_stage(total, total_sq, n, n_pages, stage1, cfg.page_size)
            else:
                predicted, ci = _estimate(total, total_sq, n, n_pages, full, cfg.page_size)
            c = None
            if ci is not None and ci[1] - ci[0] > 2 * ctarget * predicted:
                c = _controlled(acc, s, b, per_scenario, n_pages, stage1, cfg.page_size, index)
            if c is not None and ci is not None:
                half = Z95 * n_pages * math.sqrt(c.var)
                if half < (ci[1] - ci[0]) / 2:
                    predicted = round(c.mean * n_pages)
                    ci = (max(0, round(predicted - half)), round(predicted + half))
                    controlled.setdefault(s, c.aux)
            holes = acc.holes.get((s, b), 0) * n_pages / n if n else 0
            extents, extents_ci = _extents_after(
                acc.holes.get((s, b), 0), n, n_pages, full or n >= n_pages, logical_size
            )
            drop = predict_between(
                extents,
                *(extents_ci or (extents, extents)),
                logical_size,
                where,
                drop_rate,
                rate_source,
            )
            overhead = extent_tree_overhead(round(holes) + 1, b.size)
            predicted += overhead
            if ci:
                ci = (ci[0] + overhead, ci[1] + overhead)
            plain = None
            if image is not None:
                predicted, ci = _rebuilt_total(image, s, b, predicted, ci, n_pages)
                plain = image.data_pages * b.allocated(cfg.page_size, cfg.page_size) + (
                    image.n_pages - image.data_pages
                ) * _zero_page_cost(s, b, cfg.page_size)
            saving = 100.0 * (allocated - predicted) / allocated if allocated else 0.0
            results.append(
                ScenarioResult(
                    s,
                    b,
                    predicted,
                    ci,
                    saving,
                    timing.compress.get(s) if timing else None,
                    timing.decompress.get(s) if timing else None,
                    extents,
                    extents_ci,
                    drop,
                    n,
                    plain,
                )
            )
    if controlled:
        notes.append(
            "estimated from fewer pages of their own with a codec measured on more as a control "
            "variate (two-phase regression): "
            + ", ".join(f"{s.label} by {a.label}" for s, a in controlled.items())
        )
    zips: list[ZipResult] = []
    for kbs in KEY_BLOCK_SIZES if row_compressed else ():
        if kbs > cfg.page_size:
            continue
        total, total_sq = acc.zip_cost.get(kbs, [0.0, 0.0])
        predicted, ci = _estimate(
            total, total_sq, acc.zip_n, n_pages, full and zip_every == 1, cfg.page_size
        )
        predicted = -(-predicted // kbs) * kbs  # a file of whole pages
        rate = acc.zip_failures.get(kbs, 0) / acc.zip_index_pages if acc.zip_index_pages else 0.0
        zips.append(ZipResult(kbs, rate, predicted, ci))
    if cfg.page_size > 16384:
        notes.append("ROW_FORMAT=COMPRESSED needs a page size of 16K or less")
    rebuild = None
    if image is not None:
        rebuild = image.uncompressed()
        notes.insert(0, _rebuild_note(image))
        if ts.format.zip:
            notes.insert(
                1,
                "ROW_FORMAT=COMPRESSED source: its records rebuilt into uncompressed pages of "
                f"{image.page_size // 1024}K (ROW_FORMAT=DYNAMIC KEY_BLOCK_SIZE=0)",
            )
    return SimResult(
        path=str(path),
        pages=n_pages if image is None else image.n_pages,
        pages_sampled=max(per_scenario.values(), default=acc.n),
        page_size=cfg.page_size,
        allocated_size=allocated,
        logical_size=ts.size,
        fs_block_size=alloc.fs_block_size,
        full=full and (image is None or image.distinct_pages is None),
        seed=seed,
        results=results,
        row_compressed=zips,
        current=current,
        notes=notes,
        zip_source=ts.format.zip,
        cost_pages=timing.pages if timing else 0,
        cost_repetitions=timing.repetitions if timing else 0,
        drop_now=drop_now,
        as_rebuilt=image is not None,
        rebuild=rebuild,
        rebuilt_pages_written=None if image is None else image.data_pages,
    )


def _rebuilt_total(
    image: RebuiltImage,
    s: Scenario,
    b: BlockSpec,
    predicted: int,
    ci: tuple[int, int] | None,
    data_pages: int,
) -> tuple[int, tuple[int, int]]:
    """The rebuilt file's allocation from its written pages' (``predicted``, ``ci``): plus
    the never-written rest of its extents (:func:`_zero_page_cost`), the interval widened by
    the model's error: :attr:`RebuiltImage.model_pages` pages at the mean cost either way,
    and for a MySQL file, whose never-written pages are allocated, an extent of them either
    way (MySQL's file size rule is the model's least sure part).

    The allocation is the pages written times their mean cost: of a sampled plan, two
    independent estimates (the plan's count from its sample of leaves, the mean from the
    codec's sample of pages), so their 95% half widths add in quadrature (the delta method
    for a product), each side apart; the model's error, a third independent one stated as
    a 95% half width, too."""
    psize = image.page_size
    rest = (image.n_pages - image.data_pages) * _zero_page_cost(s, b, psize)
    mean = predicted / data_pages if data_pages else 0.0
    err = mean * image.model_pages
    if s.server is Vendor.MYSQL and image.vendor is Vendor.MYSQL:
        err += image.size_error_pages * _zero_page_cost(s, b, psize)
    low, high = (float(x) for x in ci or (predicted, predicted))
    below, above = [predicted - low, err], [high - predicted, err]
    if image.written_ci is not None and image.n_pages_ci is not None:
        # a sampled plan: the pages written and the file's size at their interval's bounds
        zero = _zero_page_cost(s, b, psize)
        nominal = predicted + rest
        plan_below = plan_above = 0.0
        for written, size in zip(image.written_ci, image.n_pages_ci, strict=True):
            other = mean * written + (size - written) * zero
            plan_below = max(plan_below, nominal - other)
            plan_above = max(plan_above, other - nominal)
        below.append(plan_below)
        above.append(plan_above)
    total = predicted + rest
    low = total - math.sqrt(sum(x * x for x in below))
    high = total + math.sqrt(sum(x * x for x in above))
    return total, (max(round(mean), round(low)), round(high))


def _codec_target(image: RebuiltImage | None) -> float:
    """The relative half width each codec is sampled to: ±1% printed, less the shares a
    sampled plan's count of pages and the rebuild model's error take (all three add in
    quadrature, :func:`_rebuilt_total`), never below half of it (a small file's model error
    alone may reach ±1%)."""
    t = TARGET_REL_HALF_WIDTH
    if image is None or not image.data_pages:
        return t
    model = image.model_pages / image.data_pages
    plan = 0.0
    if image.written_ci is not None:
        lo, hi = image.written_ci
        plan = max(image.data_pages - lo, hi - image.data_pages) / image.data_pages
    return max(t / 2, math.sqrt(max(0.0, t * t - plan * plan - model * model)))


def _stage_one(image: RebuiltImage | None) -> float | None:
    """The first stage's share of the variance of a mean over a sampled plan's pages, per unit
    of the pages' variance (:func:`_two_stage`): ``(1 - f)/D``, its ``D`` distinct pages
    synthesised from a fraction ``f`` of the leaves; None: an exact plan (or none)."""
    if image is None or image.distinct_pages is None or not image.leaves_read:
        return None
    read, leaves = image.leaves_read
    return max(0.0, 1 - read / max(1, leaves)) / max(1, image.distinct_pages)


def _inv(n: int, population: int, stage1: float | None) -> float:
    """The variance of a mean of ``n`` pages per unit of the pages' variance: ``1/n`` finite
    population corrected, plus a sampled plan's first stage (:func:`stage_one`)."""
    return max(0.0, 1 / max(1, n) - 1 / population) + (stage1 or 0.0)


def _two_stage(
    total: float, total_sq: float, n: int, population: int, stage1: float, cap: float
) -> tuple[int, tuple[int, int] | None]:
    """:func:`_estimate` for the pages of a sampled rebuild plan, a two-stage sample: the
    plan's distinct pages stand for the ``population`` written (first stage, ``stage1``:
    :func:`stage_one`), and ``n`` of the image's pages are compressed (second stage, finite
    population corrected); the variance of the mean is the pages' times the sum of both
    (:func:`_inv`), so pages beyond the distinct ones narrow the interval less and less."""
    if n == 0:
        return 0, None
    mean = total / n
    if n < 2:
        return round(mean * population), (0, round(cap * population))
    inv = _inv(n, population, stage1)
    var = max(0.0, (total_sq - n * mean * mean) / (n - 1))
    if var <= 0.0:  # the rule of three, 3 pages in 1/inv
        half = population * 3 * inv * max(mean, cap - mean)
    else:
        half = Z95 * population * math.sqrt(var * inv)
    predicted = mean * population
    return round(predicted), (max(0, round(predicted - half)), round(predicted + half))


def _rebuild_note(image: RebuiltImage) -> str:
    return (
        f"as rebuilt: the pages a rebuild writes ({image.data_pages} of a {image.n_pages}-page "
        f"file, from {image.source_pages} today; records repacked to innodb_fill_factor "
        f"{image.fill_factor}"
        + (", DB_TRX_ID reset" if image.reset_trx else "")
        + "), compressed as the server would; intervals include the model's error (±"
        + f"{image.model_pages} pages: each index's last page, record boundaries"
        + (", an extent of the file's size" if image.vendor is Vendor.MYSQL else "")
        + (
            f"; planned from {image.leaves_read[0]} of {image.leaves_read[1]} leaf pages "
            f"sampled: {image.written_ci[0]}–{image.written_ci[1]} pages written (95%)"
            if image.leaves_read and image.written_ci
            else ""
        )
        + "); --as-is simulates the pages as they are"
    )


class _RebuiltScan:
    """Scans of the pages of a :class:`RebuiltImage`, synthesised on demand, in this process
    (the same meters as :class:`_Scan`)."""

    jobs = 1

    def __init__(
        self, image: RebuiltImage, path: str, progress: Callable[[int, int], None] | None
    ) -> None:
        self.image, self.path, self.progress = image, path, progress
        self.done = 0

    def __enter__(self) -> _RebuiltScan:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def run(self, page_nos: Sequence[int], cfg: SimConfig, total: int) -> Accumulator:
        acc = Accumulator()
        meter = _meter(cfg.scenarios)
        for i in range(0, len(page_nos), 64):
            batch = page_nos[i : i + 64]
            meter.pages(((self.image.page(n), n) for n in batch), cfg, acc)
            self.done += len(batch)
            if self.progress:
                self.progress(min(self.done, total), max(total, self.done))
        return acc


class _Scan:
    """Scans of pages of one open tablespace, on worker processes forked once for all the
    rounds of a run (or in this process: ``jobs`` 1, or few pages)."""

    def __init__(
        self,
        ts: Tablespace,
        path: str,
        keyring: Keyring | None,
        jobs: int,
        progress: Callable[[int, int], None] | None,
    ) -> None:
        self.ts, self.path, self.keyring, self.jobs = ts, path, keyring, jobs
        self.progress = progress
        self.pool: WorkerPool[_Task, Accumulator] | None = None
        self.run_id = next(_runs)
        self.done = 0  # pages scanned by the run so far (for the progress)

    def __enter__(self) -> _Scan:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pool is not None:
            self.pool.__exit__(*exc)  # type: ignore[arg-type]
            self.pool = None

    def run(self, page_nos: Sequence[int], cfg: SimConfig, total: int) -> Accumulator:
        """The pages measured (not settled); ``total``: the run's pages, for the progress."""
        acc = Accumulator()
        if self.jobs > 1 and len(page_nos) >= 256:
            if self.pool is None:
                self.pool = WorkerPool(
                    _worker, self.jobs, died=_worker_died, label=lambda a: a[0]
                ).__enter__()
            step = max(16, len(page_nos) // (self.jobs * 16))
            batches = [page_nos[i : i + step] for i in range(0, len(page_nos), step)]
            tasks = [(self.path, b, cfg, self.keyring, self.run_id) for b in batches]
            for part in self.pool.map_unordered(tasks):
                acc.merge(part)
                self._moved(part.n, total)
        else:
            for batch in _batches(self.ts, page_nos, 64):
                part = scan_pages(self.ts, batch, cfg)
                acc.merge(part)
                self._moved(part.n, total)
        return acc

    def _moved(self, pages: int, total: int) -> None:
        self.done += pages
        if self.progress:
            self.progress(min(self.done, total), max(total, self.done))


def _half_width(
    total: float, total_sq: float, n: int, population: int, cap: float
) -> tuple[float, float]:
    """(mean, the 95% interval's half width on the total) of a sample of ``n`` pages, finite
    population corrected. A sample whose pages all cost the same says little of the pages not
    seen (the normal interval would be 0 wide): its half width is then the rule of three's, 3
    pages in ``n`` off by the most a page can differ from the mean (``cap``: what one page
    can cost at most)."""
    mean = total / n
    if n >= population:
        return mean, 0.0
    if n < 2:
        return mean, math.inf
    var = max(0.0, (total_sq - n * mean * mean) / (n - 1))
    fpc = math.sqrt((population - n) / (population - 1))
    if var <= 0.0:
        return mean, population * 3 / n * max(mean, cap - mean) * fpc
    return mean, Z95 * population * math.sqrt(var / n) * fpc


def _pages_needed(
    total: float,
    total_sq: float,
    n: int,
    population: int,
    cap: float,
    target: float = TARGET_REL_HALF_WIDTH,
    stage1: float | None = None,
) -> int:
    """Pages for a ``target`` (relative) 95% half width, from a sample of ``n`` (finite
    population corrected; the rule of three's when every page so far cost the same,
    :func:`_half_width`). Of a sampled plan's pages (``stage1``, :func:`_two_stage`): what
    the first stage leaves of the target, or when it leaves nothing, the pages whose share
    equals the first stage's (more would narrow the interval little)."""
    mean = total / n
    if mean <= 0:
        return n
    var = max(0.0, (total_sq - n * mean * mean) / (n - 1)) if n > 1 else 0.0
    if var <= 0.0:
        n0 = 3 * max(mean, cap - mean) / mean / target
    else:
        n0 = (Z95 * math.sqrt(var) / mean / target) ** 2
    if stage1:
        room = 1 / n0 - stage1 + 1 / population  # 1/n0: the variance allowed, as a 1/n
        return min(population, math.ceil(1 / room) if room > 0 else math.ceil(1 / stage1))
    return math.ceil(n0 / (1 + (n0 - 1) / population))


def _sample_half(
    total: float, total_sq: float, n: int, population: int, cap: float, stage1: float | None
) -> tuple[float, float]:
    """(mean, half width on the total): :func:`_half_width`, or for the pages of a sampled
    plan (``stage1``), :func:`_two_stage`'s."""
    if stage1 is None:
        return _half_width(total, total_sq, n, population, cap)
    _predicted, ci = _two_stage(total, total_sq, n, population, stage1, cap)
    mean = total / n if n else 0.0
    return mean, (ci[1] - ci[0]) / 2 if ci else 0.0


@dataclass(frozen=True)
class _Controlled:
    """A scenario's mean cost a page by the regression estimator on another scenario measured
    on more pages (a two-phase sample: the other's pages hold this one's, both a prefix of
    one random order): the fast codecs' costs follow the slow ones' page by page, so the
    slow ones' means are known from fewer of their own pages."""

    mean: float
    var: float  # the variance of ``mean``
    sy2: float  # the scenario's own spread, and what is left of it after the regression
    se2: float
    n1: int  # the other scenario's pages
    aux: Scenario


class _PageIndex:
    """The pages' payload lengths of a round's :attr:`Accumulator.pages_of`, as
    :func:`_controlled` looks them up for every scenario and block size: each scenario's
    lengths by page, the histogram of its lengths, and for a pair of scenarios the histogram
    of the pairs of lengths on the first one's pages; each made once, when first asked for."""

    def __init__(
        self,
        acc: Accumulator,
        costs: dict[tuple[Scenario, BlockSpec], dict[int, int]] | None = None,
    ) -> None:
        self.acc = acc
        self.hists: dict[Scenario, list[tuple[int, int]]] = {}
        self.pairs: dict[tuple[Scenario, Scenario], list[tuple[int, int, int]] | None] = {}
        self.by_page: dict[Scenario, dict[int, int]] = {}
        #: each scenario's and block size's cost of a page by its length (kept across
        #: rounds: it depends on the length alone)
        self.costs = {} if costs is None else costs

    def cost_of(self, s: Scenario, b: BlockSpec, psize: int) -> Callable[[int], int]:
        """The cost of a page of ``s`` at ``b`` from its length (:func:`_page_cost`, each
        length worked out once)."""
        memo = self.costs.setdefault((s, b), {})

        def cost(length: int) -> int:
            c = memo.get(length)
            if c is None:
                c = memo[length] = _page_cost(s, b, psize, length)
            return c

        return cost

    def hist(self, s: Scenario) -> list[tuple[int, int]]:
        got = self.hists.get(s)
        if got is None:
            counts: dict[int, int] = {}
            for ln in self.acc.pages_of[s][1]:
                counts[ln] = counts.get(ln, 0) + 1
            got = self.hists[s] = list(counts.items())
        return got

    def pair_hist(self, s: Scenario, a: Scenario) -> list[tuple[int, int, int]] | None:
        """(``a``'s length, ``s``'s length, pages) over ``s``'s pages; None: ``a`` was not
        measured on all of them."""
        if (s, a) in self.pairs:
            return self.pairs[(s, a)]
        of = self.by_page.get(a)
        if of is None:
            pages, lengths = self.acc.pages_of[a]
            of = self.by_page[a] = dict(zip(pages, lengths, strict=True))
        counts: dict[tuple[int, int], int] = {}
        got: list[tuple[int, int, int]] | None
        try:
            for p, ln in zip(*self.acc.pages_of[s], strict=True):
                key = (of[p], ln)
                counts[key] = counts.get(key, 0) + 1
            got = [(x, y, c) for (x, y), c in counts.items()]
        except KeyError:
            got = None  # not nested (never in one run)
        self.pairs[(s, a)] = got
        return got


def _controlled(
    acc: Accumulator,
    s: Scenario,
    b: BlockSpec,
    per: dict[Scenario, int],
    population: int,
    stage1: float | None,
    psize: int,
    index: _PageIndex | None = None,
) -> _Controlled | None:
    """``s``'s mean cost by the two-phase regression estimator (Cochran, Sampling
    Techniques, 12.7) on the scenario, measured on more pages than ``s``, that leaves the
    least variance: ``ȳ₂ + β(x̄₁ - x̄₂)``, of variance ``S²y/n₁ + S²e(1/n₂ - 1/n₁)`` (``e``
    the residuals of the regression of ``s``'s costs on the other's over ``s``'s pages;
    finite population corrected, and a sampled plan's first stage added to the first term,
    :func:`_inv`). Looked for among the :data:`AUX_CANDIDATES` measured on the most pages.
    None when no scenario has more pages, the pages are too few, or the regression would
    not narrow the interval. ``index``: the round's :class:`_PageIndex` (one is made)."""
    n2 = per.get(s, 0)
    got = acc.pages_of.get(s)
    if n2 < 16 or got is None or len(got[0]) != n2:
        return None
    index = index or _PageIndex(acc)
    ycost = index.cost_of(s, b, psize)
    sy = syy = 0.0
    for ln, k in index.hist(s):
        v = ycost(ln)
        sy += k * v
        syy += k * v * v
    ybar = sy / n2
    syy -= sy * ybar  # the sum of squares about the mean
    if syy <= 1e-9 * max(1.0, sy * ybar):
        return None  # no spread to explain: the plain interval's rule of three holds
    sy2 = syy / (n2 - 1)
    best: _Controlled | None = None
    for a, n1 in sorted(per.items(), key=lambda kv: -kv[1])[:AUX_CANDIDATES]:
        other = acc.pages_of.get(a)
        if a == s or n1 <= n2 or other is None or len(other[0]) != n1:
            continue
        pairs = index.pair_hist(s, a)
        if pairs is None:
            continue
        xcost = index.cost_of(a, b, psize)
        sx = sxx = sxy = 0.0
        for xl, yl, k in pairs:
            u = xcost(xl)
            sx += k * u
            sxx += k * u * u
            sxy += k * u * ycost(yl)
        xbar = sx / n2
        sxx -= sx * xbar
        sxy -= sx * ybar
        if sxx <= 1e-9 * max(1.0, sx * xbar):
            continue
        beta = sxy / sxx
        se2 = max(0.0, (syy - beta * sxy) / (n2 - 2))
        total = acc.cost.get((a, b), [0.0, 0.0])[0]
        mean = ybar + beta * (total / n1 - xbar)
        inv1 = _inv(n1, population, stage1)
        var = sy2 * inv1 + se2 * max(0.0, _inv(n2, population, stage1) - inv1)
        if best is None or var < best.var:
            best = _Controlled(mean, var, sy2, se2, n1, a)
    if best is None or best.var >= sy2 * _inv(n2, population, stage1) or best.mean <= 0:
        return None
    return best


#: the scenarios a control variate is looked for among (those measured on the most pages)
AUX_CANDIDATES = 3


def _controlled_needed(c: _Controlled, target: float, population: int, stage1: float | None) -> int:
    """Pages of the scenario for a ``target`` relative half width with ``c``'s regression
    (the other scenario's pages as they are): 0 when its own pages cannot get there."""
    inv1 = _inv(c.n1, population, stage1)
    room = (target * c.mean / Z95) ** 2 - c.sy2 * inv1
    if room <= 0 or c.se2 <= 0:
        return 0 if room <= 0 else 16
    inv = room / c.se2 + inv1 - (stage1 or 0.0)  # what 1/n - 1/N may be
    return math.ceil(1 / (inv + 1 / population))


def _adaptive(
    scan: _Scan | _RebuiltScan,
    order: list[int],
    cfg: SimConfig,
    n_pages: int,
    budget: float,
    target: float = TARGET_REL_HALF_WIDTH,
    stage1: float | None = None,
) -> tuple[Accumulator, dict[Scenario, int], list[int], dict[Scenario, float]]:
    """Sample each scenario until its interval (at every block size) is within ``target``
    (±1%; less when a sampled rebuild plan takes part of it) of its prediction (the pages of
    a sampled plan, a two-stage sample: :func:`_two_stage`'s interval). Scenario
    s measures the first ``per[s]`` pages of ``order`` (a random permutation of page
    numbers): a first round of :data:`PILOT_PAGES` for all (the ROW_FORMAT=COMPRESSED
    what-if on its first :data:`ADAPTIVE_ZIP_PAGES`), then rounds sized per scenario from
    its spread (pages needed) and its cost (seconds a page, measured), so a slow codec whose
    pages vary little stops early and a fast one goes on. The rounds stop when every
    interval is within ``target`` or ``budget`` seconds have passed since the first round
    (the time left goes to the cheapest first); a scenario for which the rest of the file
    costs less than half its share of the time left takes it all (exact). Returns the
    settled sums, each scenario's pages, the pages scanned (sorted) and the scenarios left
    wider than ``target`` with their relative half widths."""
    acc = Accumulator()
    per: dict[Scenario, int] = dict.fromkeys(cfg.scenarios, 0)
    goal: dict[Scenario, int] = dict.fromkeys(cfg.scenarios, min(len(order), PILOT_PAGES))
    zip_pages = min(len(order), ADAPTIVE_ZIP_PAGES) if cfg.zip_every else 0
    start: float | None = None  # the budget runs from the end of the first round
    rel: dict[Scenario, float] = {}
    jobs = max(1, scan.jobs)
    costs: dict[tuple[Scenario, BlockSpec], dict[int, int]] = {}  # a page's, by its length
    while True:
        # the pieces of the order between every scenario's pages and its goal, each scanned
        # once for the scenarios that reach over it (and the what-if on its first pages)
        cuts = sorted({*per.values(), *goal.values(), *([zip_pages] if zip_pages else [])})
        for lo, hi in itertools.pairwise(cuts):
            who = tuple(s for s in cfg.scenarios if per[s] <= lo and goal[s] >= hi)
            with_zip = hi <= zip_pages and acc.zip_n < zip_pages
            if not who and not with_zip:
                continue
            rcfg = replace(cfg, scenarios=who, zip_every=1 if with_zip else 0)
            part = scan.run(sorted(order[lo:hi]), rcfg, max(goal.values()))
            part.settle(rcfg)
            if part.n != hi - lo:
                raise InputError(f"{scan.path}: file shrank while reading")
            acc.merge(part)
        for s in cfg.scenarios:
            per[s] = max(per[s], goal[s])
        needed: dict[Scenario, int] = {}
        index = _PageIndex(acc, costs)  # the pages' lengths, for this round
        for s in cfg.scenarios:
            n = per[s]
            worst, need = 0.0, n
            for b in cfg.blocks:
                total, total_sq = acc.cost.get((s, b), [0.0, 0.0])
                mean, half = _sample_half(total, total_sq, n, n_pages, cfg.page_size, stage1)
                predicted = mean * n_pages
                rel_b = half / predicted if predicted > 0 else 0.0
                need_b = _pages_needed(total, total_sq, n, n_pages, cfg.page_size, target, stage1)
                c = None
                if rel_b > target:  # only where its own pages fall short
                    c = _controlled(acc, s, b, per, n_pages, stage1, cfg.page_size, index)
                if c is not None:  # a faster codec's pages as a control variate
                    rel_b = min(rel_b, Z95 * math.sqrt(c.var) / c.mean)
                    need_c = _controlled_needed(c, target, n_pages, stage1)
                    if need_c:
                        need_b = min(need_b, need_c)
                worst = max(worst, rel_b)
                need = max(need, need_b)
            rel[s] = worst
            if worst > target and n < len(order) and need > n:
                # 10% over the estimate (it comes from a sample too), growth capped
                needed[s] = min(len(order), math.ceil(need * 1.1), n * ROUND_GROWTH) - n
        if start is None:
            start = time.monotonic()
        left = budget - (time.monotonic() - start)
        if not needed or left <= 0:
            break
        # each page of s costs what its codec took so far (the scan runs on ``jobs`` cores):
        # the cheapest get all they ask for while the time left allows, the others share what
        # remains equally
        cost = {s: acc.seconds.get(s, 0.0) / max(1, per[s]) / jobs for s in needed}
        grew = False
        waiting = sorted(needed, key=lambda x: needed[x] * cost[x])
        for i, s in enumerate(waiting):
            more = needed[s]
            share = left / (len(waiting) - i)
            rest = len(order) - per[s]
            if stage1 is None and rest * cost[s] <= share / 2:
                more = rest  # the whole costs little more: exact (a sampled plan never is)
            elif more * cost[s] > share:
                more = int(share / cost[s]) if cost[s] > 0 else more
            left -= more * cost[s]
            if more >= MIN_ROUND_PAGES or more == needed[s]:
                goal[s] = per[s] + more
                grew = grew or more > 0
        if not grew:
            break
    taken = max(per.values(), default=0)
    unsettled = {s: rel[s] for s in cfg.scenarios if rel.get(s, 0.0) > target}
    return acc, per, sorted(order[:taken]), unsettled


def cost_pages(ts: Tablespace, page_nos: Sequence[int], want: int = MAX_COST_PAGES) -> list[bytes]:
    """Up to ``want`` uncompressed pages of ``page_nos`` that every server would compress (not
    all zeros, not page 0, FSP_HDR, XDES, R-tree or type-0 pages), spread over them: the pages
    every codec's CPU cost is measured on.

    Of a whole range (a full scan) only pages with data are looked at (holes are skipped by
    ``SEEK_DATA``, so a file whose rows sit in one corner of a sparse expanse still finds
    them). They are read in an order whose every prefix is spread over them (van der Corput:
    the first, the middle, the quarters, …) until four times ``want`` qualify or
    :data:`COST_READS` times ``want`` were read; ``want`` of those, evenly spaced in file
    order, are kept."""
    count, nth = _pages_with_data(ts, page_nos)
    found: list[tuple[int, bytes]] = []
    for i in _spread(count, COST_READS * want):
        if len(found) >= 4 * want:
            break
        no = nth(i)
        page = _uncompressed(ts, bytes(logical_image(memoryview(ts.stored_page(no)), ts.format)))
        ptype = int.from_bytes(page[24:26], "big")
        if no == 0 or ptype in _PLAIN_SOMEWHERE or page == _zeros(len(page)):
            continue
        found.append((no, page))
    found.sort(key=lambda f: f[0])
    if len(found) > want:
        found = [found[k * len(found) // want] for k in range(want)]
    return [page for _no, page in found]


#: the most pages :func:`cost_pages` reads, in multiples of the pages it wants
COST_READS = 16


def _pages_with_data(ts: Tablespace, page_nos: Sequence[int]) -> tuple[int, Callable[[int], int]]:
    """How many of ``page_nos`` to look at, and the i-th of them: of a whole range, its pages
    outside holes; of a list (a sample), every page."""
    if not isinstance(page_nos, range) or page_nos.step != 1:
        return len(page_nos), page_nos.__getitem__
    firsts: list[int] = []
    upto: list[int] = []  # pages with data up to the end of each run
    total = 0
    for first, end, has_data in ts.page_runs(page_nos.start, page_nos.stop):
        if has_data:
            firsts.append(first)
            total += end - first
            upto.append(total)

    def nth(i: int) -> int:
        run = bisect_right(upto, i)
        return firsts[run] + i - (upto[run - 1] if run else 0)

    return total, nth


def _spread(n: int, count: int) -> Iterator[int]:
    """At most ``count`` distinct indexes of ``range(n)``, in van der Corput order (0, 1/2,
    1/4, 3/4, 1/8, … of the way), so that every prefix is spread over the whole range."""
    limit = min(n, count)
    seen: set[int] = set()
    k = 0
    while len(seen) < limit:  # once 2**bits >= n every index has come up
        v, f, x = 0.0, 0.5, k
        while x:
            v += f * (x & 1)
            f /= 2
            x >>= 1
        k += 1
        i = int(v * n)
        if i not in seen:
            seen.add(i)
            yield i


#: page types some server stores plain (:meth:`Scenario.keeps_plain`)
_PLAIN_SOMEWHERE = frozenset(
    (FIL_PAGE_TYPE_FSP_HDR, FIL_PAGE_TYPE_XDES, FIL_PAGE_RTREE, FIL_PAGE_TYPE_ALLOCATED)
)


def _time_codecs(
    ts: Tablespace,
    page_nos: Sequence[int],
    scenarios: Sequence[Scenario],
    check: Callable[[], None] | None,
) -> CostRun[Scenario] | None:
    """Every scenario's CPU cost per page, on the same pages
    (:func:`ibdtool.advise.cpu_cost.measure`)."""
    pages = cost_pages(ts, page_nos)
    work = {s: (s, [s.compressed_part(p) for p in pages]) for s in scenarios}
    return measure(work, check=check)


@dataclass
class StoredTally:
    """What :func:`_current_state` needs of the stored pages, summed chunk by chunk
    (:meth:`add_chunk`) by whoever reads them: a full scan's workers, or the function itself."""

    whole: int = 0  # pages stored in their whole slot (all-zero pages, never written: not)
    algos: dict[str, int] = field(default_factory=dict)  # compressed images by algorithm
    #: (page number, stored size) of each compressed image
    sized: list[tuple[int, int]] = field(default_factory=list)

    def add_chunk(self, raw: memoryview, first: int, fmt: SpaceFormat) -> None:
        """Tally the whole stored pages of ``raw``, page ``first`` onwards: the type words of
        its pages are sliced out at once, pages whose type word cannot mean a compressed
        image count whole after one comparison, and only the others have their envelope
        read (algorithm and stored size). Nothing is decoded, decompressed or verified."""
        psize = fmt.physical_size
        count = len(raw) // psize
        sized = sized_pages(raw, psize, fmt.full_crc32)
        whole = count - len(sized)
        types = bytes(raw[24::psize])[:count], bytes(raw[25::psize])[:count]
        if 0 in types[0]:  # an all-zero page has a zero type word: look at those alone
            zero, skip = _zeros(psize), set(sized)
            for i, (hi, lo) in enumerate(zip(*types, strict=True)):
                if not hi | lo and i not in skip:
                    whole -= bytes(raw[i * psize : (i + 1) * psize]) == zero
        for i in sized:
            env = read_envelope(raw[i * psize : (i + 1) * psize], fmt)
            if env.algorithm is not Algorithm.NONE and env.stored_size:
                self.algos[env.algorithm.value] = self.algos.get(env.algorithm.value, 0) + 1
                self.sized.append((first + i, env.stored_size))
            else:
                whole += 1
        self.whole += whole

    def merge(self, other: StoredTally) -> None:
        self.whole += other.whole
        for name, count in other.algos.items():
            self.algos[name] = self.algos.get(name, 0) + count
        self.sized.extend(other.sized)


def _current_state(ts: Tablespace, tally: StoredTally | None = None) -> dict[str, Any]:
    """For an already-compressed file: actual allocation against the ideal for its images,
    from ``tally`` (a full scan's, of every page) or from a read of the file."""
    alloc = ts.data_map
    block = alloc.fs_block_size
    psize = ts.physical_size
    if tally is None:
        tally = StoredTally()
        for first, end, has_data in ts.page_runs():
            if has_data:  # all-zero pages in holes: empty, nothing to count
                for n, raw in ts.read_chunks(first, end):
                    tally.add_chunk(raw, n, ts.format)
    ideal = tally.whole * psize
    unpunched = 0
    window, per_page = -1, alloc.per_page_allocated(psize, 0)
    for page_no, stored in sorted(tally.sized):
        need = allocated_for_image(stored, psize, block)
        ideal += need
        if page_no // RUN_PAGES != window:  # the data bytes of each page, a window at a time
            window = page_no // RUN_PAGES
            per_page = alloc.per_page_allocated(psize, RUN_PAGES, window * RUN_PAGES)
        unpunched += per_page[page_no % RUN_PAGES] > need
    compressed = len(tally.sized)
    ideal += extent_tree_overhead(compressed + 1, block)
    return {
        "compressed_pages": compressed,
        "algorithms": tally.algos,
        "ideal_allocated": ideal,
        "actual_allocated": alloc.allocated,
        "unpunched_pages": unpunched,
    }
