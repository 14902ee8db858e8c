"""Issue 3 benchmark: simulate throughput against the bare codecs, and sampled vs full scans.

Run by hand:  .venv/bin/python bench/bench_simulate.py [FILE] [--algorithms a,b,...]
FILE defaults to bench/work/big-p16k-plain.ibd (samples/make_samples.py --big).

1. For each algorithm: pages/s of `simulate --full` on the whole file, against the same
   library compressing the same (decoded) pages in a bare loop, times the cores.
   Target: at least 85% of bare speed x cores.
2. A default sampled run against the full scan of the same algorithms: time ratio (target
   < 10%) and whether the full-scan figure lies inside the sample's 95% interval.
"""

from __future__ import annotations

import os
import random
import sys
import time
from pathlib import Path

from common import WORK, append_results, warm

from ibdtool.simulate import BlockSpec, parse_algorithms, simulate
from ibdtool.tablespace import Tablespace

DEFAULT = "mariadb:lz4,mariadb:snappy,mariadb:lzo,mariadb:zlib,mysql:zlib,zstd:3"
BARE_PAGES = 3000


def bare_pages_per_s(path: Path, algo: str) -> float:
    """One core compressing decoded pages, nothing else."""
    scenario = parse_algorithms([algo])[0]
    with Tablespace(path) as ts:
        rng = random.Random(5)
        numbers = rng.sample(range(ts.n_pages), min(BARE_PAGES, ts.n_pages))
        pages = [ts.page_with_data(n)[2] for n in numbers]
    data = [p[38:] if scenario.server == "mysql" else p for p in pages if any(p[:64])]
    t = time.perf_counter()
    for d in data:
        scenario.compress(d)
    return len(data) / (time.perf_counter() - t)


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    path = Path(args[0]) if args else WORK / "big-p16k-plain.ibd"
    algos = DEFAULT
    if "--algorithms" in sys.argv:
        algos = sys.argv[sys.argv.index("--algorithms") + 1]
    if not path.is_file():
        raise SystemExit(f"{path}: missing; make it with samples/make_samples.py --big {WORK}")
    warm(path)
    cores = os.cpu_count() or 1
    block = [BlockSpec(4096)]
    lines = [
        f"File: `{path.name}`, {path.stat().st_size:,} bytes; {cores} cores; block 4K.",
        "",
        "| algorithm | simulate pages/s (full, all cores) | bare codec pages/s x cores | ratio |",
        "|---|---:|---:|---:|",
    ]
    full_total = 0.0
    full_results = {}
    for algo in algos.split(","):
        scen = parse_algorithms([algo])
        t = time.perf_counter()
        r = simulate(path, scen, block, full=True)
        wall = time.perf_counter() - t
        full_total += wall
        full_results[algo] = r.results[0].predicted
        sim_rate = r.pages / wall
        bare = bare_pages_per_s(path, algo) * cores
        lines.append(f"| {algo} | {sim_rate:,.0f} | {bare:,.0f} | {sim_rate / bare:.0%} |")
    t = time.perf_counter()
    sampled = simulate(path, parse_algorithms([algos]), block)
    sample_wall = time.perf_counter() - t
    lines += [
        "",
        f"Sampled run (default size, {sampled.pages_sampled} of {sampled.pages} pages, all the "
        f"algorithms above at once): {sample_wall:.1f} s; the full scans took {full_total:.1f} s "
        f"in all: **{100 * sample_wall / full_total:.1f}%** (target < 10%).",
        "",
        "| algorithm | full-scan prediction | sample's 95% interval | inside |",
        "|---|---:|---:|---|",
    ]
    for res in sampled.results:
        label = res.scenario.label
        key = next((a for a in full_results if parse_algorithms([a])[0] == res.scenario), None)
        if key is None or res.ci95 is None:
            continue
        truth = full_results[key]
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
