"""What a migration reports: the events it streams and the result of each table.

:class:`Event` is one thing that happened (``kind`` says which fields matter); a
:class:`TableResult` gathers a table's statements with their wall time, the catalog sizes before
and after (:class:`Sizes`) and the page-level verification.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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
    status: str  # "done" | "failed" | "interrupted" | "skipped" | "refused"
    message: str = ""
    statements: list[StatementResult] = field(default_factory=list)
    before: Sizes | None = None
    after: Sizes | None = None
    verifications: list[Verification] = field(default_factory=list)

    @property
    def verified(self) -> bool | None:
        if not self.verifications:
            return None
        return all(v.ok for v in self.verifications)

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
            "verification": [v.to_json() for v in self.verifications],
        }
