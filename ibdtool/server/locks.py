"""What each statement of a plan locks, and for how long, in words a DBA can check.

gh-ost states its cut-over before it runs; a plan here does the same for every statement:
the metadata lock (MDL) an online ALTER takes at its start and its end, the table lock
``ALGORITHM=COPY, LOCK=SHARED`` holds all along, and the shared lock of
``FLUSH TABLES … FOR EXPORT`` when the verification asks for it, and the shared metadata
lock of each read of the workload probe. Facts are the servers' own
rules (the "Online DDL" chapters of the MySQL and MariaDB manuals): an INPLACE rebuild with
``LOCK=NONE`` takes an exclusive MDL briefly to prepare and again to commit, and each of those
waits behind every open transaction on the table (up to ``lock_wait_timeout``) while queries
that arrive after it queue behind it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Lock:
    """One lock a statement takes: what, when and what it blocks."""

    what: str  # "metadata lock (exclusive)", "table lock (shared)", "none"
    when: str  # "at start and at end", "whole statement", "until UNLOCK TABLES"
    blocks: str  # plain words: what waits while it is held

    def to_json(self) -> dict[str, str]:
        return {"lock": self.what, "when": self.when, "blocks": self.blocks}

    @property
    def text(self) -> str:
        return f"{self.what}, {self.when}: {self.blocks}"


_MDL_MOMENTS = Lock(
    "metadata lock (exclusive)",
    "for a moment at start and again at commit",
    "waits for open transactions on the table (up to lock_wait_timeout), and every query on "
    "the table that arrives meanwhile queues behind it; reads and writes go on in between",
)
_NO_LOCK = Lock("none", "-", "nothing (a variable, not a table)")


def step_locks(kind: str, statement: str, timeout: int) -> list[Lock]:
    """The locks of one plan statement (``kind`` as in :class:`~ibdtool.server.plan.Step`)."""
    text = statement.upper()
    if kind in ("session", "set_global"):
        return [_NO_LOCK]
    if kind == "attribute":
        return [
            Lock(
                "metadata lock (exclusive)",
                "for the whole statement (it changes the definition only: milliseconds)",
                f"waits for open transactions on the table (up to lock_wait_timeout={timeout}s); "
                "queries arriving meanwhile queue behind it",
            )
        ]
    if "ALGORITHM=COPY" in text or "LOCK=SHARED" in text:
        return [
            Lock(
                "table lock (shared, LOCK=SHARED)",
                "for the whole copy",
                "every write to the table waits until the copy ends; reads go on",
            ),
            _MDL_MOMENTS,
        ]
    mdl = Lock(_MDL_MOMENTS.what, _MDL_MOMENTS.when, _MDL_MOMENTS.blocks)
    if text.startswith("OPTIMIZE"):
        # OPTIMIZE TABLE on InnoDB is ALTER TABLE … FORCE, INPLACE and LOCK=NONE when it can
        return [
            Lock(
                "none on rows (INPLACE rebuild, as ALTER TABLE … FORCE)",
                "while the rebuild runs",
                "reads and writes go on; the server falls back to a copy (blocking writes) only "
                "for tables with a FULLTEXT index on old servers, which the preflight reports",
            ),
            mdl,
        ]
    return [
        Lock(
            "none on rows (ALGORITHM=INPLACE, LOCK=NONE)",
            "while the rebuild runs",
            "reads and writes go on; the server refuses the statement rather than take more",
        ),
        mdl,
    ]


def verify_locks(flush_for_export: bool, seconds: float | None = None) -> list[Lock]:
    """The locks the check after a conversion takes."""
    if not flush_for_export:
        return [
            Lock(
                "none",
                "after the rebuild",
                "nothing: the file is read once the server has written the conversion's "
                "pages, while the batch goes on with the next table (the page cleaner nudged "
                "meanwhile, server-wide, put back after: innodb_max_dirty_pages_pct_lwm "
                "lowered; on MariaDB also innodb_io_capacity raised to innodb_io_capacity_max "
                "and innodb_adaptive_flushing OFF; --no-nudge leaves them), the batch's end "
                "waiting at most --flush-wait seconds",
            )
        ]
    length = f" (expected ~{seconds:.0f}s)" if seconds is not None else ""
    return [
        Lock(
            "table lock (shared, FLUSH TABLES … FOR EXPORT)",
            f"until UNLOCK TABLES, while every dirty page of the table is written{length}",
            "every write to the table waits; reads go on",
        )
    ]


def probe_locks(lock_wait: int) -> list[Lock]:
    """What the workload probe's statements lock (:mod:`~ibdtool.server.probe`): reads only."""
    return [
        Lock(
            "metadata lock (shared read), for each read of the table",
            f"for the statement (milliseconds), after at most {lock_wait}s waiting "
            "(lock_wait_timeout)",
            "nothing that reads or writes rows; a DDL's exclusive lock waits for the running "
            "read to end, and the probe's next read waits behind that DDL (or gives up)",
        ),
        Lock(
            "none on rows (consistent non-locking reads, a read-only transaction)",
            "-",
            "nothing: no row or gap lock, no write; catalog, SHOW STATUS and "
            "performance_schema reads lock no table",
        ),
    ]


def locks_json(locks: list[Lock]) -> list[dict[str, Any]]:
    return [lk.to_json() for lk in locks]
