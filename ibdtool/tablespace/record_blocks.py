"""``records`` split over cores: the leaf chain cut into runs of pages, each decoded and
formatted by a forked process, written in the chain's order.

The leaf chain is a linked list, so its order comes first, from the page headers
:func:`~ibdtool.tablespace.records.scan_indexes` has read (each level-0 page's
FIL_PAGE_NEXT, followed from the leftmost leaf with a visited set). The first leaf is read
here, by the general reader (it may hold MariaDB's metadata record, which sets what later pages
mean); then the rest of the order is cut into runs of :data:`RUN_PAGES` pages handed to
:func:`ibdtool.tablespace.parallel.ordered_map` (this process takes every ``jobs``-th run,
forked children the others, results in run order). A run reads its pages as the single walk
(:meth:`RecordsRun.walk`) does — the compiled plan where it applies, the general reader
elsewhere — checks that each page is a leaf of the index whose FIL_PAGE_NEXT is the next page
of the order, and gives its rows to the caller's ``fmt`` to turn into output (bytes, or what
the caller batches).

A run is *clean* when all of that holds and none of its records is damaged or misfits (no
problem, misfit, field error, truncated value). The key order check spans runs: each run
reports its first and last key and the direction it saw, and this process joins them as one
walk would. At the first run that is not clean, or whose keys do not join, the rest is the
single walk's: :meth:`RecordsRun.walk` from the start, its items for pages already written
left out — so a damaged chain or record gives the single walk's events, messages and stop.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

from ibdtool.errors import InputError
from ibdtool.parsers.constants import FIL_NULL
from ibdtool.parsers.records import IndexReader, RecordsError
from ibdtool.parsers.rowplan import PagePlan, compile_plan
from ibdtool.tablespace.parallel import ordered_map
from ibdtool.tablespace.reader import Tablespace
from ibdtool.tablespace.records import (
    MAX_LEAF_PAGES,
    NOT_LEAF,
    FastRows,
    Item,
    PageSource,
    RecordEvent,
    RecordsRun,
)

#: leaf pages a process reads at a time (~5,000 rows of a plain table: a few hundred KB out)
RUN_PAGES = 48
#: below this many leaf pages the forks cost more than they save
PARALLEL_MIN_PAGES = 64

Fmt = Callable[[list[Item]], Any]


@dataclass(slots=True)
class Block:
    """What ``fmt`` made of the rows of a run of clean pages, to be written as it is."""

    data: Any


def leaf_order(run: RecordsRun) -> array[int]:
    """The leaf pages in chain order as the headers tell it, up to where the walk would stop
    (a loop, a page not a leaf by its header, a pointer out of the file); 4 bytes a page,
    and a byte a page for the visited set."""
    nxt = run.pages.next_of
    order = array("I")
    if not run.pages.leaves:
        return order
    seen = bytearray(len(nxt))
    no = min(run.pages.leaves)
    while no < len(nxt) and nxt[no] != NOT_LEAF and not seen[no] and len(order) <= MAX_LEAF_PAGES:
        seen[no] = 1
        order.append(no)
        no = nxt[no]
    return order


def _clean(ev: RecordEvent) -> bool:
    return ev.problem is None and ev.misfit is None and not ev.errors and not ev.truncated


@dataclass(slots=True)
class _Run:
    """One run's answer: its output, or ``clean=False``; the keys that join it to the rest."""

    clean: bool
    data: Any = None
    first_key: bytes | None = None
    last_key: bytes | None = None
    direction: int = 0


@dataclass(slots=True)
class _Ctx:
    run: RecordsRun
    src: PageSource
    reader: IndexReader
    plan: PagePlan
    order: array[int]
    fmt: Fmt


def _read_run(ts: Tablespace, a: int, b: int, *, ctx: _Ctx) -> _Run:
    """Pages ``order[a:b]`` (``ts`` is ``ctx.run.ts``, inherited by a forked child)."""
    run, reader, order = ctx.run, ctx.reader, ctx.order
    key = reader.key_order
    key.last, key.direction, key.first = None, 0, None
    items: list[Item] = []
    for i in range(a, b):
        no = order[i]
        try:
            page = ctx.src.index_page(no)
        except (RecordsError, InputError):
            return _Run(False)
        want = order[i + 1] if i + 1 < len(order) else FIL_NULL
        if not run.is_leaf(page) or int.from_bytes(page[12:16], "big") != want:
            return _Run(False)
        rows = ctx.plan.rows(page)
        if rows is not None:
            items.append(FastRows(no, rows, ctx.plan.names, ctx.plan.styles))
            continue
        for ev in run.page_events(reader, no, page, False):
            if not _clean(ev):
                return _Run(False)
            items.append(ev)
    return _Run(True, ctx.fmt(items), key.first, key.last, key.direction)


def _step(a: bytes | None, b: bytes | None) -> int:
    if a is None or b is None or a == b:
        return 0
    return 1 if b > a else -1


def read_blocks(run: RecordsRun, fmt: Fmt, jobs: int) -> Iterator[Block | RecordEvent]:
    """The records of ``run`` in leaf-chain order: :class:`Block` for runs of clean pages
    (``fmt`` of their items: :class:`FastRows` and clean :class:`RecordEvent`), and from the
    first doubt on, the single walk's items (a :class:`FastRows` page as a Block, every event
    as itself, for the caller's own handling)."""
    written: set[int] = set()
    order = leaf_order(run) if run.table is not None else array("I")
    src = PageSource(run.ts)
    reader = run.make_reader(src) if len(order) >= 2 else None
    if reader is None:
        yield from _single(run, fmt, written)
        return
    first = order[0]
    try:
        page = src.index_page(first)
    except (RecordsError, InputError):
        page = b""
    ok = (
        bool(page) and run.is_leaf(page) and int.from_bytes(page[12:16], "big") == order[1]
    )  # fmt: skip
    events = list(run.page_events(reader, first, page, True)) if ok else []
    plan = compile_plan(reader) if ok and all(_clean(ev) for ev in events) else None
    if plan is None:
        yield from _single(run, fmt, written)
        return
    yield Block(fmt(list(events)))
    written.add(first)
    key = reader.key_order
    last, direction = key.last, key.direction
    n = len(order)
    ranges = [(a, min(n, a + RUN_PAGES)) for a in range(1, n, RUN_PAGES)]
    if n < PARALLEL_MIN_PAGES:
        jobs = 1
    ctx = _Ctx(run, src, reader, plan, order, fmt)
    results = ordered_map(run.ts, partial(_read_run, ctx=ctx), ranges, jobs)
    try:
        for (a, b), res in zip(ranges, results, strict=True):
            steps = {direction, _step(last, res.first_key), res.direction} - {0}
            if not res.clean or len(steps) > 1:
                break
            direction = next(iter(steps), 0)
            last = res.last_key if res.last_key is not None else last
            yield Block(res.data)
            written.update(order[a:b])
        else:
            return
    finally:
        results.close()  # the children are killed and reaped
    yield from _single(run, fmt, written)


def _single(run: RecordsRun, fmt: Fmt, written: set[int]) -> Iterator[Block | RecordEvent]:
    """The single walk, leaving out the records of the pages in ``written`` (all clean: its
    first pages; a chain that loops back to one is a problem at that page, and kept)."""
    for item in run.walk(compile_plan):
        if item.page in written and (isinstance(item, FastRows) or item.problem is None):
            continue
        if isinstance(item, FastRows):
            yield Block(fmt([item]))
        else:
            yield item
