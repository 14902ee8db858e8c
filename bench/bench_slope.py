"""Issue 24 item 4: full_crc32 ``inspect`` against its inflate floor, per page and per file.

Run by hand:  PYTHONPATH=$PWD .venv/bin/python bench/bench_slope.py [--pages 89088,250000]
              [--rounds 4] [--before TREE]

``bench_all``'s inflate row compares one file of 89,088 pages, where what a file costs once
(start-up, the pool's fork, the SDI, index names and the JSON) weighs as much as a tenth of
the pages. This one runs ``bench/bare.py inflate-fcrc32`` (the anchor) and ``ibdtool inspect
--json`` on two files of the same pages (``common.make_bench_file``: full_crc32 zlib, punched
as MariaDB punches them, one extent a page) of two sizes, interleaved, and splits each
command's best wall and CPU seconds into a slope (µs a page) and a constant (s a file): the
slope's ratio is what a 100 GB table (6.5 million pages) sees, the constant what a small file
adds. Prints a Markdown table (append it to bench/RESULTS.md by hand, with its analysis).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from common import IBDTOOL, machine, make_bench_file, measure, warm

BARE = str(Path(__file__).resolve().parent / "bare.py")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", default="89088,250000", help="two page counts, a,b")
    ap.add_argument("--rounds", type=int, default=4, help="interleaved runs of each command")
    ap.add_argument(
        "--before",
        help="a tree (bench_all's --before worktree, byte-compiled) whose inspect runs beside",
    )
    args = ap.parse_args()
    small, large = (int(n) for n in args.pages.split(","))
    files = {n: make_bench_file("big-fcrc32-zlib.ibd", n) for n in (small, large)}
    commands = {
        "bare zlib inflate × cores (`bare.py inflate-fcrc32`)": lambda f: [
            sys.executable, BARE, "inflate-fcrc32", str(f)
        ],
        "`ibdtool inspect --json`": lambda f: [*IBDTOOL, "inspect", "--json", str(f)],
    }  # fmt: skip
    if args.before:  # its ibdtool first on the path (as bench_issue24.ibdtool)
        code = (
            f"import sys; sys.path.insert(0, {args.before!r}); "
            "from ibdtool.cli.main import main; main(prog_name='ibdtool')"
        )
        name = f"`ibdtool inspect --json` (before: {Path(args.before).name})"
        commands = {
            **dict(list(commands.items())[:1]),
            name: lambda f: [sys.executable, "-c", code, "inspect", "--json", str(f)],
            **dict(list(commands.items())[1:]),
        }
    for f in files.values():
        warm(f)
    best: dict[tuple[str, int], tuple[float, float]] = {}
    for _ in range(args.rounds):
        for n, f in files.items():
            for label, cmd in commands.items():
                m = measure(cmd(f), repeat=1)
                w, c = best.get((label, n), (float("inf"), float("inf")))
                best[label, n] = (min(w, m["wall_min"]), min(c, m["cpu_min"]))
    print(f"Machine: {machine()}; {args.rounds} interleaved rounds, best of each.\n")
    print(
        f"| command | {small:,} pages wall / CPU s | {large:,} pages wall / CPU s "
        "| slope µs a page wall / CPU | constant s a file wall / CPU |"
    )
    print("|---|---:|---:|---:|---:|")
    slopes = {}
    for label in commands:
        (ws, cs), (wl, cl) = best[label, small], best[label, large]
        sw, sc = (wl - ws) / (large - small), (cl - cs) / (large - small)
        slopes[label] = (sw, sc)
        print(
            f"| {label} | {ws:.3f} / {cs:.3f} | {wl:.3f} / {cl:.3f} | "
            f"{sw * 1e6:.2f} / {sc * 1e6:.2f} | {ws - sw * small:.3f} / {cs - sc * small:.3f} |"
        )
    (aw, ac), *ours = slopes.values()
    for label, (iw, ic) in zip(list(commands)[1:], ours, strict=True):
        print(f"\n{label}: a page {iw / aw:.2f}× the bare inflate in wall, {ic / ac:.2f}× in CPU.")


if __name__ == "__main__":
    main()
