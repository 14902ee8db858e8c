"""A bounded write load on a real server: client threads that update and insert rows of one
table, one autocommit statement at a time, and record how long each statement took.

The longest statement of a writer is its longest stall: while a lock blocks writes to the
table, the statement waiting for it is that long. Used by the migrate tests and the load bench.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from samples.servers import ThrowawayServer

ID_BASE = 10_000_000  # inserted ids start here, away from the loaded rows
_RUNS = itertools.count()  # each load inserts its own ids


@dataclass
class Writer:
    number: int
    statements: int = 0
    latencies: list[tuple[float, float]] = field(default_factory=list)  # (start, seconds)
    error: str | None = None
    conn_id: int | None = None  # the server's id of its connection (PROCESSLIST.ID)

    @property
    def max_stall(self) -> float:
        return max((s for _, s in self.latencies), default=0.0)


class WriteLoad:
    """``threads`` writers on ``schema.table`` until :meth:`stop` or ``limit`` seconds."""

    def __init__(
        self, srv: ThrowawayServer, schema: str, table: str, threads: int = 2, limit: float = 300
    ) -> None:
        self.srv, self.schema, self.table = srv, schema, table
        self.limit = limit
        self.base = ID_BASE + 100_000_000 * next(_RUNS)
        self.writers = [Writer(i) for i in range(threads)]
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._run, args=(w,), daemon=True) for w in self.writers
        ]

    def __enter__(self) -> WriteLoad:
        for t in self._threads:
            t.start()
        time.sleep(0.3)  # every writer connected and writing
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(self.limit)

    def _run(self, w: Writer) -> None:
        ref = f"`{self.schema}`.`{self.table}`"
        deadline = time.monotonic() + self.limit
        conn: Any = self.srv.connect(timeout=self.limit)
        w.conn_id = conn.thread_id()
        try:
            with conn.cursor() as cur:
                cur.execute("SET SESSION lock_wait_timeout = 600, autocommit = 1")
                n = 0
                while not self._stop.is_set() and time.monotonic() < deadline:
                    n += 1
                    start = time.monotonic()
                    if n % 2:
                        cur.execute(
                            f"UPDATE {ref} SET amount = amount + 1 WHERE id = %s", (1 + n % 1000,)
                        )
                    else:
                        cur.execute(
                            f"INSERT INTO {ref} (id, created, updated, customer, email, city, "
                            "amount, notes) VALUES (%s, NOW(), NOW(), 'load', 'l@x', 'x', 1, "
                            "'written during the conversion')",
                            (self.base + 1_000_000 * w.number + n,),
                        )
                    w.latencies.append((start, time.monotonic() - start))
                    w.statements += 1
                    time.sleep(0.005)
        except Exception as exc:  # the test reports it
            w.error = f"{type(exc).__name__}: {exc}"
        finally:
            conn.close()

    @property
    def max_stall(self) -> float:
        return max(w.max_stall for w in self.writers)

    @property
    def errors(self) -> list[str]:
        return [w.error for w in self.writers if w.error]


#: what a connection waiting for a lock shows in PROCESSLIST.STATE on MariaDB and MySQL:
#: metadata locks, FLUSH TABLES (… FOR EXPORT, WITH READ LOCK), table locks, MariaDB's backup
#: lock: what a tool's statement takes. Row locks are left out: the writers update the same
#: rows and wait for each other's, which is not the tool's doing
LOCK_STATES = ("Waiting for table", "Waiting for global read lock", "Waiting for backup lock",
               "Waiting for commit lock")  # fmt: skip


#: how long a writer may still show the lock state of a wait that ended: the server releases a
#: statement's metadata lock before its client hears the statement end, and the woken writer
#: updates its own STATE only once it gets a core (a loaded two-core machine took ms for that)
WAKE_GRACE = 0.25


@dataclass
class Poll:
    asked: float  # time.monotonic() when the question left: the answer is no older
    at: float  # time.monotonic() when the answer came (the writers' clock)
    waiting: dict[int, str]  # connection id -> the lock it waited for


class LockWatch:
    """Asks the server, every ``every`` seconds while a :class:`WriteLoad` runs, which of its
    writers wait for a lock: the server's own account of a stall's cause, where a statement's
    length alone cannot tell a lock from a slow disk or a starved client thread."""

    def __init__(self, srv: ThrowawayServer, load: WriteLoad, every: float = 0.01) -> None:
        self.srv, self.load, self.every = srv, load, every
        self.polls: list[Poll] = []
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> LockWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        ids = [w.conn_id for w in self.load.writers if w.conn_id is not None]
        if not ids:
            self.error = "no writer connected"
            return
        marks = ", ".join(str(int(i)) for i in ids)
        like = " OR ".join(f"STATE LIKE '{s}%%'" for s in LOCK_STATES)
        conn: Any = self.srv.connect()
        try:
            with conn.cursor() as cur:
                while not self._stop.is_set():
                    asked = time.monotonic()
                    cur.execute(
                        f"SELECT ID, STATE FROM information_schema.PROCESSLIST "
                        f"WHERE ID IN ({marks}) AND ({like})"
                    )
                    waiting = {int(i): str(st) for i, st in cur.fetchall()}
                    self.polls.append(Poll(asked, time.monotonic(), waiting))
                    self._stop.wait(self.every)
        except Exception as exc:  # the test reports it
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            conn.close()

    def waits(self, since: float, until: float = float("inf")) -> list[tuple[float, int, str]]:
        """Every (time, connection id, lock) seen between ``since`` and ``until``."""
        return [
            (p.at, i, lock)
            for p in self.polls
            if since <= p.at <= until
            for i, lock in p.waiting.items()
        ]

    def waits_begun(self, since: float, grace: float = WAKE_GRACE) -> list[tuple[float, int, str]]:
        """Every (time, connection id, lock) of a wait that is not one which ended by ``since``.

        A wait is seen as a run of polls that found the writer in a lock state. The run is a wait
        of its own, not the tail of one that ended by ``since``, when a poll asked at or after
        ``since`` first found the writer free, or when a poll asked ``grace`` seconds after
        ``since`` still finds it waiting (a woken writer shows its old state until it runs).
        """
        ids = {i for p in self.polls for i in p.waiting}
        found: list[tuple[float, int, str]] = []
        for i in sorted(ids):
            free_since = float("-inf")  # when a poll last began that found the writer free
            run: list[Poll] = []
            for p in [*self.polls, None]:
                if p is not None and i in p.waiting:
                    run.append(p)
                    continue
                if run and (free_since >= since or any(q.asked >= since + grace for q in run)):
                    found += [(q.at, i, q.waiting[i]) for q in run if q.at >= since]
                run = []
                if p is not None:
                    free_since = p.asked
        return sorted(found)

    def seen(self, since: float, until: float) -> int:
        """How many answers came between ``since`` and ``until``."""
        return sum(1 for p in self.polls if since <= p.at <= until)
