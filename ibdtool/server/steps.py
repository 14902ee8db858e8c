"""The vocabulary of a conversion plan: the target asked for, how to run, and the statements.

:class:`Target` (``page:<codec>[:<level>]``, ``row:<kbs>``, ``none``) is what the user asks for,
:class:`PlanSettings` how the rebuild may run, :class:`Step` one statement of a plan. The
statements themselves come from the server's dialect (:mod:`ibdtool.server.dialects`);
:mod:`ibdtool.server.plan` joins them with the preflight checks and the prediction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ibdtool.errors import InputError
from ibdtool.parsers import codecs
from ibdtool.parsers.vendor import Vendor
from ibdtool.server import sql
from ibdtool.server.locks import Lock, locks_json, step_locks

KEY_BLOCK_SIZES = (1, 2, 4, 8, 16)
DEFAULT_LOCK_WAIT_TIMEOUT = 60


@dataclass(frozen=True)
class Target:
    kind: str  # "page" | "row" | "none"
    algorithm: str | None = None
    level: int | None = None
    key_block_size: int | None = None  # KiB

    @property
    def label(self) -> str:
        if self.kind == "page":
            return f"page:{self.algorithm}" + (f":{self.level}" if self.level is not None else "")
        if self.kind == "row":
            return f"row:{self.key_block_size}"
        return "none"


def parse_target(text: str) -> Target:
    """``page:zlib``, ``page:lzma:3``, ``row:8``, ``none``."""
    t = text.strip().lower()
    if t in ("none", "off", "uncompressed"):
        return Target("none")
    m = re.fullmatch(r"page:([a-z0-9]+)(?::(\d+))?", t)
    if m:
        level = int(m.group(2)) if m.group(2) is not None else None
        if level is not None and not 1 <= level <= 9:
            raise InputError(f"--to {text}: the level must be 1..9")
        return Target("page", algorithm=m.group(1), level=level)
    m = re.fullmatch(r"row:(\d+)k?", t)
    if m:
        kbs = int(m.group(1))
        if kbs not in KEY_BLOCK_SIZES:
            raise InputError(f"--to {text}: KEY_BLOCK_SIZE must be one of 1, 2, 4, 8, 16")
        return Target("row", key_block_size=kbs)
    known = ", ".join(codecs.names(Vendor.MARIADB))
    raise InputError(
        f"--to {text}: expected page:<codec>[:<level>] ({known}), row:<1|2|4|8|16> or none"
    )


@dataclass
class Step:
    """One statement of a plan."""

    kind: str  # "session" | "set_global" | "attribute" | "rebuild"
    sql: str
    why: str
    variable: str | None = None
    value: str | int | None = None

    @property
    def args(self) -> tuple[str | int, ...] | None:
        """Parameters of ``sql`` (the value of a SET), else None."""
        return (
            (self.value,)
            if self.kind in ("session", "set_global") and self.value is not None
            else None
        )

    @property
    def display(self) -> str:
        """The statement as the server receives it, without our tag, ready to paste."""
        from pymysql.converters import escape_item

        text = self.sql
        if self.args:
            text = text % tuple(escape_item(a, "utf8mb4") for a in self.args)
        return text.removeprefix(sql.TAG).strip() + ";"

    def locks(self, lock_wait_timeout: int) -> list[Lock]:
        return step_locks(self.kind, self.display, lock_wait_timeout)

    def to_json(self, lock_wait_timeout: int = DEFAULT_LOCK_WAIT_TIMEOUT) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "sql": self.display,
            "why": self.why,
            "locks": locks_json(self.locks(lock_wait_timeout)),
        }


@dataclass
class PlanSettings:
    algorithm: str = "inplace"  # "inplace" | "copy"
    force: bool = False
    predict: bool = True
    lock_wait_timeout: int = DEFAULT_LOCK_WAIT_TIMEOUT
    jobs: int | None = None
    flush_for_export: bool = False  # FLUSH TABLES … FOR EXPORT before predicting and verifying
    #: warn when the rebuild's unlink of the old file or a later DROP is predicted longer
    slow_drop_seconds: float = 60.0
    #: predict a few other ways to store each table beside the target (plan.COMPARE_CODECS)
    compare: bool = True
