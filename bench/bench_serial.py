"""Issue 24: the serial part of a split scan: the CPU a command's parent spends before its
first fork (what no core can share), beside its whole CPU and its children's.

Run by hand:  PYTHONPATH=$PWD .venv/bin/python bench/bench_serial.py FILE [FILE ...]
              [--before DIR]   (another checkout, run the same way, interleaved)
              [--commands "inspect --json;checksum;report --format json"] [--repeat N]

Each command runs in a fresh interpreter (``--child``) that imports the scan's modules first,
so start-up is not counted (another row's: bench_startup.py), then runs the command in
process with ``os.fork`` wrapped to note the parent's CPU clock (``time.process_time``) and
wall clock at the first fork. The children's CPU is ``RUSAGE_CHILDREN``. A command that never
forks shows its whole CPU as serial.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: imported before the clock starts: the scan's modules, not start-up
PRELOAD = (
    "ibdtool.cli.main",
    "ibdtool.tablespace.inspect",
    "ibdtool.tablespace.checksum",
    "ibdtool.tablespace.parallel",
    "ibdtool.report.batch",
    "ibdtool.cli.report",
    "ibdtool.fs.allocation",
)


def child(tree: str, args: list[str]) -> None:
    """In a fresh interpreter: one command of ``tree``, its clocks printed as one line."""
    sys.path.insert(0, tree)
    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    from ibdtool.cli.main import main

    t0, w0 = time.process_time(), time.perf_counter()
    at_fork: list[tuple[float, float]] = []
    real_fork = os.fork

    def fork() -> int:
        if not at_fork:
            at_fork.append((time.process_time() - t0, time.perf_counter() - w0))
        return real_fork()

    os.fork = fork
    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):
        main(args=args, prog_name="ibdtool", standalone_mode=False)
    cpu, wall = time.process_time() - t0, time.perf_counter() - w0
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    serial = at_fork[0] if at_fork else (cpu, wall)
    print(*serial, cpu, kids.ru_utime + kids.ru_stime, wall)


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3:])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--before", help="another checkout, run beside this one")
    ap.add_argument("--commands", default="inspect --json;checksum;report --format json")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    trees = [("before", args.before)] if args.before else []
    trees.append(("this tree", str(REPO)))
    print(f"load average {os.getloadavg()[0]:.2f}")
    print(
        "| file | command | tree | serial CPU s (min–max) | serial wall s (min) "
        "| parent CPU s | children CPU s |"
    )
    print("|---|---|---|---:|---:|---:|---:|")
    for path in args.files:
        for command in args.commands.split(";"):
            runs: dict[str, list[list[float]]] = {label: [] for label, _ in trees}
            for _ in range(args.repeat):  # interleaved: a busy moment hurts both trees alike
                for label, tree in trees:
                    out = subprocess.run(
                        [sys.executable, __file__, "--child", tree, *command.split(), path],
                        capture_output=True, text=True, check=True,
                    ).stdout  # fmt: skip
                    runs[label].append([float(x) for x in out.split()])
            for label, got in runs.items():
                serial = [r[0] for r in got]
                print(
                    f"| {Path(path).parent.name}/{Path(path).name} | `{command}` | {label} "
                    f"| {min(serial):.4f}–"
                    f"{max(serial):.4f} | {min(r[1] for r in got):.4f} "
                    f"| {min(r[2] for r in got):.3f} | {min(r[3] for r in got):.3f} |"
                )


if __name__ == "__main__":
    main()
