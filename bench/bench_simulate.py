"""Issue 3 benchmark: simulate throughput against the bare codecs, and sampled vs full scans.

Run by hand:  .venv/bin/python bench/bench_simulate.py [FILE] [--algorithms a,b,...]
FILE defaults to bench/work/big-plain.ibd (:func:`common.make_bench_file`).

1. For each algorithm: pages/s of `simulate --full` on the whole file, against the same
   library compressing the same (decoded) pages in a bare loop, times the cores.
   Target: at least 85% of bare speed x cores.
2. A default sampled run against the full scan of the same algorithms: time ratio (target
   < 10%) and whether the full-scan figure lies inside the sample's 95% interval.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from common import IBDTOOL, append_results, make_bench_file, warm
from sidebyside import Contender, Goal, Row, run_row, table

from ibdtool.advise import BlockSpec, parse_algorithms, simulate_path

DEFAULT = "mariadb:lz4,mariadb:snappy,mariadb:lzo,mariadb:zlib,mysql:zlib,zstd:3"
BARE = Path(__file__).resolve().parent / "bare.py"


def simulate_row(path: Path, algo: str) -> Row:
    """``simulate --full -a ALGO`` beside the bare codec compressing every written page of
    ``path`` on every core (bench/bare.py); goal ≥ 85% of its speed."""
    scenario = parse_algorithms([algo])[0]
    codec = f"{scenario.server}:{scenario.algorithm}"  # the vendor's build, its bytes
    bare = [sys.executable, str(BARE), "compress", codec, str(scenario.level or 0)]
    return Row(
        f"simulate --full {algo}",
        [
            Contender(f"bare {scenario.algorithm} × cores", [*bare, str(path)], splits=True),
            Contender(
                f"`ibdtool simulate --full -a {algo}`",
                [*IBDTOOL, "simulate", "--full", "--json", "-a", algo, str(path)],
                splits=True,
                goal=Goal("share", 0.85),
            ),
        ],
    )


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    path = Path(args[0]) if args else make_bench_file("big-plain.ibd")
    algos = DEFAULT
    if "--algorithms" in sys.argv:
        algos = sys.argv[sys.argv.index("--algorithms") + 1]
    if not path.is_file():
        raise SystemExit(f"{path}: missing")
    warm(path)
    rows = [run_row(simulate_row(path, a), repeat=1) for a in algos.split(",")]
    lines = [
        f"File: `{path.name}`, {path.stat().st_size:,} bytes; the rows at the file's block size, "
        "one run each; the sampling below at 4K.",
        "",
        *table(rows),
        "",
        *(v for r in rows for v in r.verdicts),
    ]
    t = time.perf_counter()
    full = simulate_path(path, parse_algorithms([algos]), [BlockSpec(4096)], full=True)
    full_total = time.perf_counter() - t
    full_results = {r.scenario: r.predicted for r in full.results}
    t = time.perf_counter()
    sampled = simulate_path(path, parse_algorithms([algos]), [BlockSpec(4096)])
    sample_wall = time.perf_counter() - t
    lines += [
        "",
        f"Sampled run (default size, {sampled.pages_sampled} of {sampled.pages} pages, all the "
        f"algorithms above at once): {sample_wall:.1f} s; a full scan of them all took "
        f"{full_total:.1f} s: **{100 * sample_wall / full_total:.1f}%** (target < 10%).",
        "",
        "| algorithm | full-scan prediction | sample's 95% interval | inside |",
        "|---|---:|---:|---|",
    ]
    for res in sampled.results:
        label = res.scenario.label
        truth = full_results.get(res.scenario)
        if truth is None or res.ci95 is None:
            continue
        inside = "yes" if res.ci95[0] <= truth <= res.ci95[1] else "NO"
        lines.append(f"| {label} | {truth:,} | {res.ci95[0]:,} – {res.ci95[1]:,} | {inside} |")
    lines.append(
        f"\nCommand: `.venv/bin/python bench/bench_simulate.py {path} --algorithms {algos}`"
    )
    body = "\n".join(lines)
    append_results("Simulate: throughput and sampling", body)
    print(body)


if __name__ == "__main__":
    main()
