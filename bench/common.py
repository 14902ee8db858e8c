"""Shared helpers for the benchmarks: machine description, timing of commands, RESULTS.md."""

from __future__ import annotations

import datetime as dt
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
WORK = BENCH / "work"
RESULTS = BENCH / "RESULTS.md"
IBDTOOL = [str(REPO / ".venv" / "bin" / "ibdtool")]


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg()[0]
    return (
        f"{platform.node()}: {cpu}, {os.cpu_count()} cores, Linux {platform.release()}, "
        f"Python {platform.python_version()}, load average {load:.2f} at start"
    )


def run_timed(cmd: list[str], repeat: int = 5) -> tuple[float, float, int]:
    """(best wall s, median wall s, peak RSS of the command and its children in KiB)."""
    walls = []
    peak = 0
    for _ in range(repeat):
        probe = (
            "import resource,subprocess,sys,time;t=time.perf_counter();"
            "r=subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL);"
            "w=time.perf_counter()-t;"
            "print(w, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, r.returncode)"
        )
        out = subprocess.run(
            [sys.executable, "-c", probe, *cmd], capture_output=True, text=True, check=True
        ).stdout.split()
        wall, rss, rc = float(out[0]), int(out[1]), int(out[2])
        if rc not in (0, 1):
            raise SystemExit(f"{cmd} exited {rc}")
        walls.append(wall)
        peak = max(peak, rss)
    return min(walls), statistics.median(walls), peak


def warm(path: Path) -> None:
    """Read the file once so every contender starts from the page cache."""
    with path.open("rb") as f:
        while f.read(1 << 24):
            pass


def append_results(title: str, body: str) -> None:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    section = f"\n## {title} ({stamp})\n\nMachine: {machine()}\n\n{body.strip()}\n"
    # replace an earlier section with the same title
    pattern = re.compile(rf"\n## {re.escape(title)} \(.*?(?=\n## |\Z)", re.S)
    text = pattern.sub("", text)
    RESULTS.write_text(text.rstrip() + "\n" + section)


def rusage_self_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def now() -> float:
    return time.perf_counter()
