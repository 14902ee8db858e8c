"""Rows of contenders run side by side, interleaved, and the verdict on each row's goals.

A :class:`Row` is one line of issue 14's table: an anchor (the first contender: innochecksum,
dd, cp, a bare codec…) and the ibdtool commands measured against it. :func:`run_row` runs
every contender ``repeat`` times in turn — anchor, ibdtool, anchor, ibdtool… — so a busy moment
on a shared machine hits both, and keeps wall and CPU seconds (user + system of the command and
its children, from ``wait4``) of each run, the 1-minute load average at the row's start and the
CPU the rest of the machine used meanwhile (``/proc/stat`` less our own).

:func:`verdict` is the rule: on an idle machine (load average < :data:`IDLE_LOAD` at the row's
start) the goals compare best wall times; on a busy one wall time grows with everyone else's
work, so they compare CPU seconds, over the cores for a command that splits a large file over
every core (``splits``) — an estimate that assumes the split scales — and the line says so.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

#: at or above this 1-minute load average, a row's verdict is a CPU-based estimate
IDLE_LOAD = 1.5


@dataclass
class Goal:
    """``kind``: "at_most" — the contender's time over the anchor's ≤ ``limit``; "share" — the
    anchor's time over the contender's (a throughput share) ≥ ``limit``; "seconds" — the
    contender's own time, times ``scale`` (e.g. to 1 GB), ≤ ``limit``."""

    kind: str
    limit: float
    scale: float = 1.0
    note: str = ""


@dataclass
class Contender:
    """One command of a row. ``cmd``: an argv, or a string for ``sh -c``; or ``fn``, which runs
    once and returns its own (wall s, CPU s). ``before`` runs untimed before each run (a fresh
    destination), ``after`` untimed after it with the run's index (a byte check)."""

    label: str
    cmd: Sequence[str] | str | None = None
    fn: Callable[[], tuple[float, float]] | None = None
    splits: bool = False
    goal: Goal | None = None
    before: Callable[[], None] | None = None
    after: Callable[[int], None] | None = None
    env: dict[str, str] | None = None
    cwd: str | None = None
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)

    def run(self) -> tuple[float, float]:
        if self.fn is not None:
            return self.fn()
        assert self.cmd is not None
        return run_once(self.cmd, env=self.env, cwd=self.cwd)


@dataclass
class Row:
    name: str
    contenders: list[Contender]  # the first is the anchor
    repeat: int | None = None  # runs of this row, when not the run's --repeat
    load: float = 0.0
    others: float = 0.0  # cores the rest of the machine kept busy during the row, on average
    verdicts: list[str] = field(default_factory=list)


def run_once(
    cmd: Sequence[str] | str, env: dict[str, str] | None = None, cwd: str | None = None
) -> tuple[float, float]:
    """(wall s, CPU s of the command and its children) of ``cmd`` (a string: ``sh -c``), its
    output discarded; a failure ends the bench."""
    argv = ["sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):  # 1: the checksum and inspect verdict "corrupt pages found"
        raise SystemExit(f"{argv} exited {code}")
    return wall, usage.ru_utime + usage.ru_stime


def _machine_busy_s() -> float:
    """CPU seconds every core has spent not idle since boot (``/proc/stat``, steal included)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _our_cpu_s() -> float:
    ru_self = os.times()
    return ru_self.user + ru_self.system + ru_self.children_user + ru_self.children_system


def settle(limit_s: float) -> None:
    """Wait up to ``limit_s`` for the load average to fall under :data:`IDLE_LOAD` — mostly our
    own previous row's, which a 1-minute average keeps for a while. The kernel updates it every
    5 s; when an update does not lower it, the load is someone else's and waiting is useless."""
    end = time.monotonic() + limit_s
    last = os.getloadavg()[0]
    while last >= IDLE_LOAD and time.monotonic() < end:
        time.sleep(5)
        now = os.getloadavg()[0]
        if now > 0.97 * last:
            return
        last = now


def run_row(row: Row, repeat: int, settle_s: float = 0.0) -> Row:
    """Every contender ``repeat`` times (the row's own count if it has one), interleaved."""
    settle(settle_s)
    row.load = os.getloadavg()[0]
    busy0, ours0, t0 = _machine_busy_s(), _our_cpu_s(), time.perf_counter()
    for i in range(row.repeat or repeat):
        for c in row.contenders:
            if c.before:
                c.before()
            wall, cpu = c.run()
            c.walls.append(wall)
            c.cpus.append(cpu)
            if c.after:
                c.after(i)
    elapsed = time.perf_counter() - t0
    others = (_machine_busy_s() - busy0) - (_our_cpu_s() - ours0)
    row.others = max(0.0, others / elapsed)
    cores = os.cpu_count() or 1
    anchor = row.contenders[0]
    row.verdicts = [
        f"- {row.name}: {c.label}: {verdict(c.goal, c, anchor, row.load, cores)}"
        for c in row.contenders
        if c.goal is not None
    ]
    return row


def _time(c: Contender, busy: bool, cores: int) -> float:
    """Best wall time; on a busy machine the CPU median, over the cores if ``c`` splits."""
    if not busy:
        return min(c.walls)
    return statistics.median(c.cpus) / (cores if c.splits else 1)


def verdict(goal: Goal, mine: Contender, anchor: Contender, load: float, cores: int) -> str:
    """The verdict line's text for ``mine`` against its goal (see the module docstring)."""
    busy = load >= IDLE_LOAD
    how = f"machine busy (load {load:.1f}): CPU-based estimate, " if busy else "wall, best runs: "
    t = _time(mine, busy, cores)
    if goal.kind == "seconds":
        value, good = t * goal.scale, t * goal.scale <= goal.limit
        shown = f"{value * 1000:.0f} ms" if goal.limit < 1 else f"{value:.2f} s"
        limit = f"{goal.limit * 1000:.0f} ms" if goal.limit < 1 else f"{goal.limit:g} s"
        text = f"{how}{shown}{goal.note} (goal ≤ {limit})"
    elif goal.kind == "share":
        value = _time(anchor, busy, cores) / t
        good = value >= goal.limit
        shown = _near(value, goal.limit, "{:.0%}", "{:.1%}")
        text = f"{how}{shown} of the speed of {anchor.label} (goal ≥ {goal.limit:.0%})"
    elif goal.kind == "at_most":
        value = t / _time(anchor, busy, cores)
        good = value <= goal.limit
        shown = _near(value, goal.limit, "{:.2f}", "{:.3f}")
        text = f"{how}{shown}× {anchor.label} (goal ≤ {goal.limit:.1f}×)"
    else:
        raise ValueError(goal.kind)
    return f"{text}: {'met' if good else '**not met**'}"


def _near(value: float, limit: float, short: str, long: str) -> str:
    """``value`` in the ``short`` format, or the ``long`` one where the short would read as the
    limit itself (84.9% is not 85%)."""
    return long.format(value) if short.format(value) == short.format(limit) else short.format(value)


def table(rows: Sequence[Row]) -> list[str]:
    """The Markdown table of every contender of ``rows``."""
    out = [
        "| row | command | runs | wall min s | wall median s | CPU min s | CPU median s | "
        "load | others' cores |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        for i, c in enumerate(row.contenders):
            first = i == 0
            name = row.name if first else ""
            load = f"{row.load:.2f}" if first else ""
            others = f"{row.others:.2f}" if first else ""
            out.append(
                f"| {name} | {c.label} | {len(c.walls)} | {_s(min(c.walls))} | "
                f"{_s(statistics.median(c.walls))} | {_s(min(c.cpus))} | "
                f"{_s(statistics.median(c.cpus))} | {load} | {others} |"
            )
    return out


def _s(x: float) -> str:
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"
