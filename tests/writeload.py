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
