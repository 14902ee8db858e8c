"""Issue 24 item 4: where each process's time goes in a scan split over processes.

Run by hand:  PYTHONPATH=TREE /work/main/.venv/bin/python bench/bench_split.py [--rounds 3]
              -- inspect --json FILE   (or checksum FILE, report --format json FILE…)

Runs the ibdtool command of the tree on PYTHONPATH in this process (``TREE``: this worktree,
or a ``--before`` tree of bench_all) with :func:`ibdtool.tablespace.parallel.map_ranges`
wrapped: every call of the scan function, in this process and in the forked children, notes
its pages and its own CPU seconds (``time.process_time``) and ``time.monotonic`` marks, and the
split's entry and return are marked in this process. CPU clocks and marks, not wall time at
load: a process's time in its windows, its start after the split began (the fork, the child's
copy-on-write faults), its end, and how long this process waits for the others after its own
last window (the children pickle and send their results then). Prints a Markdown table a round
(best round first by the split's wall time).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import resource
import sys
import tempfile
import time
from collections import defaultdict
from typing import Any


def _cpu_children() -> float:
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


def one_round(argv: list[str]) -> dict[str, Any]:
    """Run ``ibdtool argv`` once here; the marks of its splits."""
    import ibdtool.tablespace.parallel as parallel
    from ibdtool.cli.main import main

    tmp_fd, tmp_path = tempfile.mkstemp(prefix="bench-split-")
    os.close(tmp_fd)
    fd = os.open(tmp_path, os.O_WRONLY | os.O_APPEND)  # the children's lines never overlap
    parent = os.getpid()
    splits: list[tuple[float, float, float, float]] = []
    real = parallel.map_ranges

    def timed(fn: Any) -> Any:
        def call(ts: Any, start: int, stop: int) -> Any:
            c0, t0 = time.process_time(), time.monotonic()
            out = fn(ts, start, stop)
            c1, t1 = time.process_time(), time.monotonic()
            line = f"{os.getpid()} {start} {stop} {c0} {c1} {t0} {t1}\n"
            os.write(fd, line.encode())  # one short appended write a window
            return out

        return call

    def wrapped(ts: Any, fn: Any, *args: Any, **kw: Any) -> Any:
        c0, k0, t0 = time.process_time(), _cpu_children(), time.monotonic()
        out = real(ts, timed(fn), *args, **kw)
        splits.append((t0, time.monotonic(), time.process_time() - c0, _cpu_children() - k0))
        return out

    parallel.map_ranges = wrapped  # type: ignore[assignment]
    c0, k0, t0 = time.process_time(), _cpu_children(), time.monotonic()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
            main(args=argv, prog_name="ibdtool")
    finally:
        parallel.map_ranges = real  # type: ignore[assignment]
    total = (time.monotonic() - t0, time.process_time() - c0, _cpu_children() - k0)
    os.close(fd)
    with open(tmp_path) as f:
        calls = [line.split() for line in f]
    os.unlink(tmp_path)
    return {"parent": parent, "splits": splits, "calls": calls, "total": total}


def report(r: dict[str, Any]) -> None:
    wall, cpu_self, cpu_children = r["total"]
    print(
        f"command: wall {wall:.3f} s, CPU {cpu_self:.3f} s here + {cpu_children:.3f} s "
        f"in children; {len(r['splits'])} split(s)"
    )
    print()
    print(
        "| split | process | windows | pages | CPU in windows s | wall in windows s "
        "| first start s | last end s | wait after own last s |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for k, (t0, t1, cpu_here, cpu_kids) in enumerate(r["splits"]):
        per: dict[int, list[list[str]]] = defaultdict(list)
        for c in r["calls"]:
            if t0 <= float(c[5]) <= t1:
                per[int(c[0])].append(c)
        own_end = max(
            (float(c[6]) for c in per.get(r["parent"], [])), default=t0
        )  # this process's last window
        for pid, calls in sorted(per.items(), key=lambda kv: kv[0] != r["parent"]):
            who = "parent" if pid == r["parent"] else f"child {pid}"
            pages = sum(int(c[2]) - int(c[1]) for c in calls)
            cpu = sum(float(c[4]) - float(c[3]) for c in calls)
            w = sum(float(c[6]) - float(c[5]) for c in calls)
            first = min(float(c[5]) for c in calls) - t0
            last = max(float(c[6]) for c in calls) - t0
            wait = f"{t1 - own_end:.3f}" if pid == r["parent"] else ""
            print(
                f"| {k} (wall {t1 - t0:.3f}, CPU {cpu_here:.3f} + {cpu_kids:.3f}) | {who} "
                f"| {len(calls)} | {pages:,} | {cpu:.3f} | {w:.3f} | {first:.3f} | {last:.3f} "
                f"| {wait} |"
            )
    print()


def summary(r: dict[str, Any]) -> str:
    """One line of a round, its splits added up: wall of the splits, the longest CPU a process
    spent in its windows (the split's critical path), CPU in all windows, this process's waits
    after its own last window."""
    wall = crit = cpu = wait = 0.0
    for t0, t1, _a, _b in r["splits"]:
        per: dict[str, float] = defaultdict(float)
        own_end = t0
        for c in r["calls"]:
            if t0 <= float(c[5]) <= t1:
                per[c[0]] += float(c[4]) - float(c[3])
                if int(c[0]) == r["parent"]:
                    own_end = max(own_end, float(c[6]))
        wall += t1 - t0
        crit += max(per.values(), default=0.0)
        cpu += sum(per.values())
        wait += t1 - own_end
    return f"split wall {wall:.3f} critical CPU {crit:.3f} window CPU {cpu:.3f} wait {wait:.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--summary", action="store_true", help="a line a round (see summary())")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- and ibdtool's arguments")
    args = ap.parse_args()
    argv = args.command[1:] if args.command[:1] == ["--"] else args.command
    rounds = []
    for _ in range(args.rounds):
        rounds.append(one_round(argv))
    if args.summary:
        for r in rounds:
            print(summary(r))
        return
    print(f"`ibdtool {' '.join(argv)}`, load {os.getloadavg()[0]:.2f}, {sys.executable}")
    print()
    rounds.sort(key=lambda r: sum(t1 - t0 for t0, t1, _a, _b in r["splits"]))
    for r in rounds:
        report(r)


if __name__ == "__main__":
    main()
