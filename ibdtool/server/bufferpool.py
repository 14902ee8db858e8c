"""Pages of a tablespace that the buffer pool holds modified and its file does not have yet.

After a rebuild, or right after a load, the file lags the table: InnoDB writes modified pages
later, in the page cleaner. Reading the file then sees zeros or older pages. Instead of
forcing the write with ``FLUSH TABLES … FOR EXPORT`` (a shared lock that blocks every write to
the table for as long as the flush takes), :func:`wait_flushed` asks the server how many pages
of the space are still dirty (``information_schema.INNODB_BUFFER_PAGE``, OLDEST_MODIFICATION
above the dialect's ``dirty_above``: MariaDB marks written pages still on its flush list with 1)
and waits, bounded, for the page cleaner to write them on its own. :func:`current_lsn` and
:func:`unwritten_pages` tell the pages a conversion changed from those changed after it (the
executor's :mod:`~ibdtool.server.flushwatch`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ibdtool.server import sql
from ibdtool.server.connection import Session
from ibdtool.server.dialects import Dialect
from ibdtool.server.errors import ServerError

STUCK_AFTER = 5.0  # seconds without a page written: the page cleaner is not at it


@dataclass(frozen=True)
class DirtyReading:
    """Dirty pages of the spaces asked about, ``elapsed`` seconds into the wait."""

    pages: int | None  # None: the server would not say (no PROCESS privilege, …)
    elapsed: float
    error: str | None = None
    stuck: bool = False  # the count has not gone down for a while: the cleaner is idle


def dirty_pages(session: Session, dialect: Dialect, space_ids: list[int]) -> int | None:
    """Modified pages of these tablespaces not yet in their files; None if unknown."""
    if not space_ids:
        return None
    try:
        rows = session.query(dialect.dirty_pages_query(len(space_ids)), tuple(space_ids))
    except ServerError:
        return None
    return sum(int(r["dirty"] or 0) for r in rows)


def wait_flushed(
    session: Session,
    dialect: Dialect,
    space_ids: list[int],
    timeout: float,
    poll: float,
    sleep: Callable[[float], bool],
    stuck_after: float = STUCK_AFTER,
) -> Iterator[DirtyReading]:
    """Readings until no page is dirty, the server cannot say, ``timeout`` passes or the count
    stops going down for ``stuck_after`` seconds (an idle page cleaner: MariaDB's writes
    nothing while the share of dirty pages is below its thresholds, which a rebuild of one
    table rarely passes).

    ``sleep(seconds)`` waits and returns True to stop early (a cancel)."""
    start = time.monotonic()
    best: int | None = None
    since = start
    while True:
        try:
            rows = session.query(dialect.dirty_pages_query(len(space_ids)), tuple(space_ids))
        except ServerError as exc:
            yield DirtyReading(None, time.monotonic() - start, exc.message)
            return
        pages = sum(int(r["dirty"] or 0) for r in rows)
        now = time.monotonic()
        if best is None or pages < best:
            best, since = pages, now
        stuck = pages > 0 and now - since >= stuck_after
        elapsed = now - start
        yield DirtyReading(pages, elapsed, stuck=stuck)
        if pages == 0 or stuck or elapsed >= timeout:
            return
        if sleep(min(poll, max(0.0, timeout - elapsed))):
            return


_LSN = re.compile(r"^Log sequence number\s+(\d+)", re.MULTILINE)


def current_lsn(session: Session) -> int | None:
    """The server's log sequence number now (``SHOW ENGINE INNODB STATUS``, which every
    MySQL and MariaDB prints the same way); None when it will not say."""
    try:
        row = session.query_one(sql.ENGINE_STATUS)
    except ServerError:
        return None
    m = _LSN.search(str((row or {}).get("Status") or ""))
    return int(m.group(1)) if m else None


def unwritten_pages(
    session: Session, dialect: Dialect, spaces: list[tuple[int, int]]
) -> dict[int, int]:
    """For (space id, LSN) pairs: pages of each space holding a change older than its LSN
    that the file does not have yet (spaces with none are absent). Raises ServerError."""
    if not spaces:
        return {}
    args = tuple(x for pair in spaces for x in pair)
    rows = session.query(dialect.unwritten_pages_query(len(spaces)), args)
    return {int(r["space"]): int(r["dirty"] or 0) for r in rows}
