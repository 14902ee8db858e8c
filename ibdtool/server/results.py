"""What a migration reports: the events it streams and the result of each table.

:class:`Event` is one thing that happened (``kind`` says which fields matter); a
:class:`TableResult` gathers a table's statements with their wall time, the catalog sizes before
and after (:class:`Sizes`) and the page-level verification.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ibdtool.present import hms, human_bytes
from ibdtool.server.pagestate import Verification
from ibdtool.server.progress import Reading


@dataclass
class Event:
    """One thing that happened; ``kind`` says which fields matter."""

    kind: str
    table: str | None = None
    message: str = ""
    sql: str | None = None
    fraction: float | None = None
    elapsed: float | None = None
    eta: float | None = None
    reading: Reading | None = None
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def eta_text(self) -> str:
        """``ETA 1:05``; ``ETA unknown`` when only our size estimate measures progress;
        ``past the estimate`` once the new file is bigger than that estimate."""
        if self.data.get("past_estimate"):
            return "past the estimate, ETA unknown"
        if self.data.get("eta_unknown"):
            return "ETA unknown"
        return f"ETA {hms(self.eta)}" if self.eta is not None else "ETA ?"

    @property
    def detail_text(self) -> str:
        """What the progress source measured: stage, amount, source."""
        r = self.reading
        if r is None:
            return ""
        if r.unit == "bytes":
            what = "of the predicted " if r.estimated else "/"
            amount = f"{human_bytes(int(r.done))} {what}{human_bytes(int(r.total or 0))}"
        elif r.unit != "%":
            amount = f"{r.done:,.0f}/{r.total or 0:,.0f} {r.unit}"
        else:
            amount = ""
        return f"{r.stage or ''} {amount} [{r.source}]".strip()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"event": self.kind}
        for key in ("table", "message", "sql", "fraction", "elapsed", "eta"):
            value = getattr(self, key)
            if value not in (None, ""):
                out[key] = round(value, 4) if isinstance(value, float) else value
        if self.reading is not None:
            r = self.reading
            out.update(source=r.source, stage=r.stage, done=r.done, total=r.total, unit=r.unit)
        out.update(self.data)
        return out


@dataclass
class Sizes:
    file_size: int | None
    allocated_size: int | None
    space_ids: list[int]

    def to_json(self) -> dict[str, Any]:
        return {
            "file_size": self.file_size,
            "allocated_size": self.allocated_size,
            "space_ids": self.space_ids,
        }


@dataclass
class StatementResult:
    sql: str
    seconds: float
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"sql": self.sql, "seconds": round(self.seconds, 3), "error": self.error}


@dataclass
class TableResult:
    table: str
    #: "done" | "awaiting_flush" | "failed" | "interrupted" | "skipped" | "refused" | "stopped";
    #: ``awaiting_flush``: converted, but the server still holds pages of the new file in its
    #: buffer pool, so the file cannot be verified yet (a success, neither failed nor verified)
    status: str
    message: str = ""
    statements: list[StatementResult] = field(default_factory=list)
    before: Sizes | None = None
    after: Sizes | None = None
    verifications: list[Verification] = field(default_factory=list)
    unflushed_pages: int | None = None  # dirty pages of the new space when it was read
    lock_seconds: float | None = None  # FLUSH TABLES … FOR EXPORT held this long
    verify_error: str | None = None  # why the file could not be read back
    hint: str = ""  # what the user can do about the outcome (awaiting_flush: how to verify)

    @property
    def awaiting_flush(self) -> bool:
        """Converted, not verifiable yet: the server had not written every page of the new
        file when the bounded wait ended (what is on disk was read, but it is not the table)."""
        return bool(self.unflushed_pages)

    @property
    def verified(self) -> bool | None:
        """True/False: the file's pages are / are not in the target format; None: unknown
        (not read, or read while the server still held pages of it unwritten)."""
        if not self.verifications or self.awaiting_flush:
            return None
        return all(v.ok for v in self.verifications)

    @property
    def ok(self) -> bool:
        """Converted: done, or done and waiting for the server to write the pages."""
        return self.status in ("done", "awaiting_flush")

    @property
    def seconds(self) -> float:
        return sum(s.seconds for s in self.statements)

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "status": self.status,
            "message": self.message,
            "seconds": round(self.seconds, 3),
            "statements": [s.to_json() for s in self.statements],
            "before": self.before.to_json() if self.before else None,
            "after": self.after.to_json() if self.after else None,
            "verified": self.verified,
            "unflushed_pages": self.unflushed_pages,
            "awaiting_flush": self.awaiting_flush,
            "hint": self.hint or None,
            "write_lock_seconds": (
                None if self.lock_seconds is None else round(self.lock_seconds, 3)
            ),
            "verification": [v.to_json() for v in self.verifications],
        }
