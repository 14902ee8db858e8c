"""The command log (``@``, as lazygit has): every file operation and SQL statement the app ran.

Workers record from their threads, so the log takes a lock; a listener (the app) is told after
each change and posts a Textual message to refresh whatever shows the log. Entries are kept in
memory, the newest last, up to :data:`MAX_ENTRIES`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime

MAX_ENTRIES = 5000


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One operation: when, what kind (``file``, ``sql``), on what, how long, how it ended."""

    started: datetime
    kind: str
    text: str
    seconds: float | None
    outcome: str = "ok"


@dataclass
class Running:
    """Handed to the body of :meth:`CommandLog.timed`: set ``detail`` to say what was found."""

    detail: str = ""
    outcome: str = "ok"


@dataclass
class CommandLog:
    """A thread-safe, bounded list of :class:`LogEntry`."""

    listener: Callable[[LogEntry], None] | None = None
    _entries: list[LogEntry] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, entry: LogEntry) -> None:
        with self._lock:
            self._entries.append(entry)
            del self._entries[:-MAX_ENTRIES]
        if self.listener is not None:
            self.listener(entry)

    def entries(self) -> list[LogEntry]:
        with self._lock:
            return list(self._entries)

    @contextmanager
    def timed(self, kind: str, text: str) -> Iterator[Running]:
        """Time the body and log it, with its detail and outcome (an exception is logged too)."""
        started = datetime.now()
        t0 = time.perf_counter()
        run = Running()
        try:
            yield run
        except BaseException as exc:
            run.outcome = _outcome_of(exc)
            raise
        finally:
            full = f"{text}: {run.detail}" if run.detail else text
            self.add(LogEntry(started, kind, full, time.perf_counter() - t0, run.outcome))


class Cancelled(Exception):
    """Raised inside a worker's loop when the user cancelled it (logged as ``cancelled``)."""


def _outcome_of(exc: BaseException) -> str:
    if isinstance(exc, Cancelled):
        return "cancelled"
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return f"error: {message}"
