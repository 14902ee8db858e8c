"""When a migration may start its next statement, gh-ost style.

Before each table and each statement the executor asks :meth:`Pacing.check`:

* ``critical_load`` (``--critical-load Threads_running=200``): a global status at or above its
  threshold stops the batch cleanly (nothing more starts; the running table has finished);
* a pause: the pause file exists (``--pause-file PATH``) or :meth:`Pacing.pause` was called
  (SIGUSR1 in the CLI; SIGUSR2 resumes) — wait;
* ``max_load`` (``--max-load Threads_running=25,Threads_connected=500``): a global status at or
  above its threshold — wait;
* ``max_lag`` (``--max-lag 10``): a replica more seconds behind, or whose lag is unknown
  (:mod:`ibdtool.server.replicas`) — wait.

Thresholds are parsed by :func:`parse_load`; the status values come from SHOW GLOBAL STATUS.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

from ibdtool.errors import InputError
from ibdtool.server.connection import ConnectionOptions
from ibdtool.server.replicas import Lag, read_lag


def parse_load(text: str | None, option: str) -> dict[str, int]:
    """``Threads_running=25,Threads_connected=500`` → {name: threshold}."""
    out: dict[str, int] = {}
    if not text:
        return out
    for part in text.split(","):
        m = re.fullmatch(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(\d+)\s*", part)
        if not m:
            raise InputError(
                f"{option} {text}: expected STATUS=N[,STATUS=N…], e.g. Threads_running=25"
            )
        out[m.group(1)] = int(m.group(2))
    return out


@dataclass
class Verdict:
    """What to do now: ``go``, ``wait`` or ``stop``, and why."""

    action: str
    reason: str = ""


@dataclass
class Pacing:
    max_load: dict[str, int] = field(default_factory=dict)
    critical_load: dict[str, int] = field(default_factory=dict)
    pause_file: Path | None = None
    max_lag: float | None = None  # seconds; replicas below
    replicas: list[ConnectionOptions] = field(default_factory=list)
    _paused: threading.Event = field(default_factory=threading.Event)

    def pause(self) -> None:
        """Hold before the next statement until :meth:`resume` (thread- and signal-safe)."""
        self._paused.set()

    def resume(self) -> None:
        self._paused.clear()

    @property
    def names(self) -> list[str]:
        return sorted(set(self.max_load) | set(self.critical_load))

    def lags(self) -> list[Lag]:
        """Each replica's lag now (none without ``max_lag``)."""
        if self.max_lag is None:
            return []
        return [read_lag(r) for r in self.replicas]

    def check(self, status: dict[str, str], lags: list[Lag] | None = None) -> Verdict:
        """``status``: SHOW GLOBAL STATUS values of :attr:`names`; ``lags``: :meth:`lags`."""
        for name, limit in self.critical_load.items():
            value = _int(status.get(name))
            if value is not None and value >= limit:
                return Verdict("stop", f"critical load: {name}={value} >= {limit}")
        if self._paused.is_set():
            return Verdict("wait", "paused (SIGUSR1; SIGUSR2 resumes)")
        if self.pause_file is not None and self.pause_file.exists():
            return Verdict("wait", f"paused while {self.pause_file} exists")
        for name, limit in self.max_load.items():
            value = _int(status.get(name))
            if value is not None and value >= limit:
                return Verdict("wait", f"{name}={value} >= {limit}")
        if self.max_lag is not None:
            for lag in lags or []:
                if lag.seconds is None or lag.seconds > self.max_lag:
                    return Verdict("wait", f"replica lag: {lag.text} (--max-lag {self.max_lag:g})")
        return Verdict("go")


def _int(value: str | None) -> int | None:
    try:
        return None if value is None else int(value)
    except ValueError:
        return None
