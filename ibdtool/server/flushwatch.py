"""Converted tables whose new file the server has not finished writing, checked as the batch
goes on.

A rebuild leaves pages of the new file in the buffer pool, written later by the page cleaner;
reading the file before that sees zeros or nothing. Instead of waiting after each table (a
2-second ALTER could wait a minute and prove nothing) or blocking writes with ``FLUSH TABLES …
FOR EXPORT``, the executor hands each such table to a :class:`FlushWatch` and goes on with the
next. The conversion's own pages are those changed before its statement returned: the server's
LSN is read then (:func:`~ibdtool.server.bufferpool.current_lsn`), and a table is ready once no
page of its spaces holds a change older than that LSN unwritten
(:func:`~ibdtool.server.bufferpool.unwritten_pages`): a writer's later changes do not hold it
back. When the server writes none of their pages for a while (:meth:`FlushWatch.stalled`), the
page cleaner may be nudged (:meth:`~ibdtool.server.dialects.base.Dialect.flush_nudge`,
server-wide, no lock), and put back once none waits.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ibdtool.server.bufferpool import unwritten_pages
from ibdtool.server.connection import Session
from ibdtool.server.dialects import Dialect


@dataclass
class Waiting:
    """One converted table waiting for its pages to reach its file."""

    name: str
    space_ids: list[int]
    lsn: int  # the server's LSN when its conversion ended
    since: float = field(default_factory=time.monotonic)
    unwritten: int | None = None  # pages of the conversion not on disk at the last reading
    payload: Any = None  # the executor's own (plan and result of the table)


class FlushWatch:
    """The tables waiting; :meth:`poll` returns those whose pages are all written."""

    def __init__(self) -> None:
        self.waiting: list[Waiting] = []
        self._best: int | None = None  # the fewest pages left seen since the last add
        self._since = time.monotonic()  # when that count was first seen

    def __bool__(self) -> bool:
        return bool(self.waiting)

    def add(self, item: Waiting) -> None:
        self.waiting.append(item)
        self._best, self._since = None, time.monotonic()

    def stalled(self, after: float) -> bool:
        """Tables wait and the server has written none of their pages for ``after`` seconds
        (an idle page cleaner: MariaDB's writes nothing below its thresholds)."""
        return bool(self.waiting) and time.monotonic() - self._since >= after

    @property
    def unwritten(self) -> int:
        return sum(w.unwritten or 0 for w in self.waiting)

    def poll(self, session: Session, dialect: Dialect) -> list[Waiting]:
        """One reading of the buffer pool for every waiting table; the ready ones leave the
        watch and are returned in the order they were added. Raises ServerError."""
        if not self.waiting:
            return []
        pairs = [(sid, w.lsn) for w in self.waiting for sid in w.space_ids]
        by_space = unwritten_pages(session, dialect, pairs)
        ready: list[Waiting] = []
        for w in self.waiting:
            w.unwritten = sum(by_space.get(sid, 0) for sid in w.space_ids)
            if not w.unwritten:
                ready.append(w)
        self.waiting = [w for w in self.waiting if w.unwritten]
        left = self.unwritten
        if self._best is None or left < self._best or ready:
            self._best, self._since = left, time.monotonic()
        return ready

    def take_all(self) -> list[Waiting]:
        """Every table still waiting (the deadline passed, or the batch was cancelled)."""
        out, self.waiting = self.waiting, []
        return out
