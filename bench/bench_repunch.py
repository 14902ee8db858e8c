"""Issue 14: re-punching a densified compressed tablespace, beside ``cp`` and ``fallocate -d``.

Run by hand:  PYTHONPATH=$PWD .venv/bin/python bench/bench_repunch.py [--runs N] [--pages N]

The issue-14 files (:func:`common.make_bench_file`: 89,088 16K pages of MariaDB 10.11's own
PAGE_COMPRESSED zlib pages, full_crc32 and classic, punched as the server punches) are
densified with ``cat`` (every byte allocated, as scp leaves them), then, interleaved, each
run from the page cache:

- ``copy``: ``cp --sparse=always SRC DST && sync DST`` against ``ibdtool copy`` (re-punch is
  the default for ``.ibd``; default verification, and ``--verify none``);
- in place: ``fallocate -d FILE && sync FILE`` against ``ibdtool copy --in-place --repunch
  --yes`` (default verification, and ``--verify none``), each on a fresh dense copy made
  before the clock starts.

Wall and CPU seconds (the command and its children, from ``wait4``), min and median, the load
average before each row, and what each leaves allocated go to RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path

from common import BENCH_PAGES, IBDTOOL, WORK, append_results, make_bench_file, warm

FILES = ("big-fcrc32-zlib.ibd", "big-classic-zlib.ibd")


def _run(cmd: str) -> tuple[float, float]:
    """(wall s, CPU s) of the shell command ``cmd``."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(["sh", "-c", cmd])
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd!r} failed ({status})")
    return wall, usage.ru_utime + usage.ru_stime


def _cat(src: Path, dst: Path) -> None:
    """``src`` written densely to ``dst`` and flushed (that file only: a global sync would wait
    for every other job's writes on a shared machine)."""
    dst.unlink(missing_ok=True)
    with dst.open("wb") as out:
        subprocess.run(["cat", str(src)], stdout=out, check=True)
        os.fsync(out.fileno())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--pages", type=int, default=BENCH_PAGES)
    args = ap.parse_args()
    ibd = " ".join(IBDTOOL)
    rows: list[str] = []
    verdicts: list[str] = []
    work = WORK / "repunch"
    work.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        src = make_bench_file(name, args.pages)
        dense = work / f"dense-{name}"
        _cat(src, dense)
        warm(dense)
        dst = work / "out.ibd"
        cases = [
            (
                "copy",
                "`cp --sparse=always && sync`",
                f"cp --sparse=always {dense} {dst} && sync {dst}",
            ),
            ("copy", "`ibdtool copy` (re-punch)", f"{ibd} copy -q {dense} {dst}"),
            ("copy", "`ibdtool copy --verify none`", f"{ibd} copy -q --verify none {dense} {dst}"),
            ("in place", "`fallocate -d && sync`", f"fallocate -d {dst} && sync {dst}"),
            (
                "in place",
                "`ibdtool copy --in-place --repunch`",
                f"{ibd} copy -q --in-place --repunch --yes {dst}",
            ),
            (
                "in place",
                "`ibdtool copy --in-place --repunch --verify none`",
                f"{ibd} copy -q --in-place --repunch --yes --verify none {dst}",
            ),
        ]
        walls: dict[str, list[float]] = {c[1]: [] for c in cases}
        cpus: dict[str, list[float]] = {c[1]: [] for c in cases}
        loads: dict[str, float] = {}
        held: dict[str, int] = {}
        for _ in range(args.runs):  # interleaved: a busy moment hurts every contender alike
            for kind, label, cmd in cases:
                if kind == "in place":
                    _cat(dense, dst)  # a fresh dense file, before the clock starts
                else:
                    dst.unlink(missing_ok=True)
                loads.setdefault(label, os.getloadavg()[0])
                wall, cpu = _run(cmd)
                walls[label].append(wall)
                cpus[label].append(cpu)
                held[label] = os.stat(dst).st_blocks * 512
                if subprocess.run(["cmp", "-s", str(dense), str(dst)]).returncode:
                    raise SystemExit(f"{label}: the result differs from the source")
        anchor = {"copy": cases[0][1], "in place": cases[3][1]}
        for kind, label, _cmd in cases:
            w, c = walls[label], cpus[label]
            a = walls[anchor[kind]]
            ratio = "" if label == anchor[kind] else f"{min(w) / min(a):.2f}"
            rows.append(
                f"| {name} | {kind} | {label} | {min(w):.2f} | {statistics.median(w):.2f} | "
                f"{min(c):.2f} | {statistics.median(c):.2f} | {ratio} | "
                f"{held[label] / (1 << 20):,.1f} | {loads[label]:.1f} |"
            )
        for kind, label, goal in (
            ("copy", cases[1][1], 1.3),
            ("in place", cases[4][1], 1.0),
        ):
            r = min(walls[label]) / min(walls[anchor[kind]])
            verdicts.append(
                f"- {name}, {kind}: {label} {r:.2f}× {anchor[kind]} at best (goal ≤ {goal}×): "
                f"{'met' if r <= goal else '**not met**'}"
            )
        dense.unlink()
        dst.unlink(missing_ok=True)
    shutil.rmtree(work, ignore_errors=True)
    body = "\n".join(
        [
            f"Files: {args.pages:,} pages of 16K each (`common.make_bench_file`), densified with "
            f"`cat`; page cache warm; {args.runs} interleaved runs a row; ratio = best wall over "
            "the anchor's best wall.",
            "",
            "| file | what | command | wall min s | wall median s | CPU min s | CPU median s | "
            "ratio | allocated MiB | load |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
            *rows,
            "",
            *verdicts,
            "",
            "Command: `PYTHONPATH=$PWD .venv/bin/python bench/bench_repunch.py`",
        ]
    )
    append_results("Re-punch: copy and --in-place of densified compressed files", body)
    print(body)


if __name__ == "__main__":
    main()
