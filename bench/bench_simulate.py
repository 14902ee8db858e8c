"""Issue 3 benchmark: simulate throughput against the bare codecs, and sampled vs full scans.

Run by hand:  .venv/bin/python bench/bench_simulate.py [FILE] [--algorithms a,b,...]
         or:  .venv/bin/python bench/bench_simulate.py --default [--before CHECKOUT]
FILE defaults to bench/work/big-plain.ibd (:func:`common.make_bench_file`).

1. For each algorithm: pages/s of `simulate --full` on the whole file, against the same
   library compressing the same (decoded) pages in a bare loop, times the cores.
   Target: at least 85% of bare speed x cores.
2. A default sampled run against the full scan of the same algorithms: time ratio (target
   < 10%) and whether the full-scan figure lies inside the sample's 95% interval.
3. ``--default``: the default run's wall time at 10 MiB, 100 MiB and 1 GiB beside another
   checkout's (:func:`default_section`).
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


DEFAULT_SIZES = {"10 MiB": 640, "100 MiB": 6400, "1 GiB": 65536}


def default_section(before: Path, repeat: int, check_full: bool = True) -> str:
    """``ibdtool simulate --json FILE`` with its defaults (every codec, the file's block
    size) at 10 MiB, 100 MiB and 1 GiB (:func:`common.make_bench_file`), this checkout beside
    ``before``; the widest interval of the run, and whether a full scan's figures (a second
    computation) lie inside the intervals (not at 1 GiB: minutes of every codec)."""
    import json
    import os
    import subprocess

    from common import measure

    here = Path(__file__).resolve().parent.parent
    rows = [
        "| file | checkout | wall best s | wall median s | CPU s | pages sampled per codec "
        "| widest ± | full scan inside |",
        "|---|---|---:|---:|---:|---|---:|---|",
    ]
    for label, pages in DEFAULT_SIZES.items():
        # every page in use: the rebuild plan reads what a real table's would
        path = make_bench_file("big-plain.ibd", pages, all_used=True)
        warm(path)
        full = None
        if pages <= 6400 and check_full:
            full = simulate_path(path, full=True, costs=False, row_compressed=False)
        for name, checkout in (("before", before), ("after", here)):
            # -m puts the working directory first on sys.path: run from the checkout
            env_cmd = ["env", "-C", str(checkout), f"PYTHONPATH={checkout}", *IBDTOOL]
            m = measure([*env_cmd, "simulate", "--json", str(path)], repeat=repeat)
            out = subprocess.run(
                [*env_cmd, "simulate", "--json", str(path)],
                capture_output=True,
                text=True,
                env={**os.environ, "PYTHONPATH": str(checkout)},
                cwd=checkout,
                check=True,
            ).stdout
            doc = json.loads(out)
            res = doc["results"]
            widest = max(
                (
                    (r["ci95"][1] - r["ci95"][0]) / 2 / r["predicted_allocated"]
                    for r in res
                    if r["ci95"]
                ),
                default=0.0,
            )
            per = sorted({r.get("pages_sampled", doc["pages_sampled"]) for r in res})
            inside = "–"
            if full is not None:
                truth = {(f.scenario.label, f.block.size): f.predicted for f in full.results}
                ok = sum(
                    1
                    for r in res
                    if (r["ci95"] or [r["predicted_allocated"]] * 2)[0]
                    <= truth[(_label(r), r["block_size"])]
                    <= (r["ci95"] or [r["predicted_allocated"]] * 2)[1]
                )
                inside = f"{ok}/{len(res)}"
            rows.append(
                f"| {label} ({pages:,} pages) | {name} | {m['wall_min']:.1f} | "
                f"{m['wall_med']:.1f} | {m['cpu_med']:.1f} | "
                f"{per[0]:,}–{per[-1]:,} of {doc['pages']:,} | "
                f"{'exact' if not widest else f'{100 * widest:.2f}%'} | {inside} |"
            )
            print(rows[-1], flush=True)
    return "\n".join(rows)


def _label(r: dict[str, object]) -> str:
    lvl = f":{r['level']}" if r["level"] is not None else ""
    return f"{r['server']}:{r['algorithm']}{lvl}"


def main() -> None:
    if "--default" in sys.argv:
        i = sys.argv.index("--before") + 1 if "--before" in sys.argv else 0
        before = Path(sys.argv[i]) if i else Path("/work/main")
        repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 3
        check_full = "--no-full" not in sys.argv
        body = (
            "`ibdtool simulate --json FILE` with its defaults (eleven codecs, the file's block "
            f"size; costs and the ROW_FORMAT=COMPRESSED what-if included), {repeat} run(s) each, "
            "files of the samples' MariaDB pages with every page in use "
            "(`common.make_bench_file(all_used=True)`: the rebuild plan reads them). Each codec "
            "sampled until its interval is ±1% or 3 s of scanning after a first round have "
            "passed. *full scan inside*: figures whose interval holds the `--full` figure "
            "(a second computation; not run at 1 GiB).\n\n"
            + default_section(before, repeat, check_full)
            + "\n\nCommand: `PYTHONPATH=$PWD .venv/bin/python bench/bench_simulate.py --default`"
        )
        append_results("Simulate: default run at 10 MiB, 100 MiB, 1 GiB", body)
        print(body)
        return
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
