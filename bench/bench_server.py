"""Benchmarks of the live-server side: page-state scans, and what watching an ALTER costs.

1. ``pagestate.page_state`` (42-byte header reads) against decoding every page
   (``Tablespace.pages()``, which decompresses and verifies), on the 1 GB files of
   ``samples/make_samples.py --big bench/work`` from the page cache. Target: the header scan
   reads a 1 GB table's page state in under a second.
2. A real rebuild on a throwaway MariaDB 10.11 (performance_schema on): wall time of the bare
   ``ALTER TABLE … FORCE`` against the same ALTER run by :class:`ibdtool.server.Migration`
   polling performance_schema every 0.5 s / 0.2 s and the ``#sql`` file every 0.2 s. Target:
   watching costs under 5% of the rebuild.

Run by hand: ``.venv/bin/python bench/bench_server.py [--rows-doublings N]``; appends a section
to ``bench/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import WORK, append_results, warm
from ibdtool.server.pagestate import page_state
from ibdtool.tablespace import Tablespace
from samples import servers
from tests.server_fixtures import FAST, make_table, run_migration


def scan_section(repeat: int) -> str:
    rows = [
        "| file | pages | header scan best s | GB/s | full decode s | GB/s | ratio |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name in ("big-p16k-plain.ibd", "big-p16k-pc_zlib.ibd"):
        path = WORK / name
        if not path.is_file():
            rows.append(f"| {name} | missing: run samples/make_samples.py --big {WORK} | | | | | |")
            continue
        warm(path)
        size = path.stat().st_size
        best = min(_timed(lambda p=path: page_state(p)) for _ in range(repeat))
        state = page_state(path)
        t0 = time.perf_counter()
        with Tablespace(path) as ts:
            n = sum(1 for _ in ts.pages())
        full = time.perf_counter() - t0
        rows.append(
            f"| {name} | {n:,} | {best:.3f} | {size / best / 1e9:.2f} | {full:.1f} | "
            f"{size / full / 1e9:.2f} | {full / best:.0f}× |"
        )
        rows.append(f"| | | {state.summary()} | | | | |")
    return "\n".join(rows)


def _timed(fn: object) -> float:
    t0 = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - t0


def alter_section(doublings: int, repeat: int) -> str:
    run = [*FAST, "--innodb-doublewrite=0", "--performance-schema=ON"]
    lines = [
        "| how the ALTER ran | runs | median s | min–max s | vs bare | progress readings |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    configs = (
        ("bare `ALTER TABLE … FORCE`", None, 0.0),
        ("Migration, performance_schema every 0.5 s", "performance_schema", 0.5),
        ("Migration, performance_schema every 0.2 s", "performance_schema", 0.2),
        ("Migration, #sql file every 0.2 s", "file", 0.2),
    )
    walls: dict[str, list[float]] = {c[0]: [] for c in configs}
    readings: dict[str, int] = {c[0]: 0 for c in configs}
    with servers.mariadb_server(run_options=run) as srv:
        make_table(srv, "bench", "t", rows=20000, doublings=doublings)
        n = srv.query("SELECT COUNT(*) FROM bench.t")[0][0]
        srv.query("ALTER TABLE bench.t FORCE, ALGORITHM=INPLACE, LOCK=NONE")  # warm-up
        for _ in range(repeat):  # interleaved, so that drift hits every way alike
            for label, source, poll in configs:
                if source is None:
                    t0 = time.perf_counter()
                    srv.query("ALTER TABLE bench.t FORCE, ALGORITHM=INPLACE, LOCK=NONE")
                    walls[label].append(time.perf_counter() - t0)
                    continue
                events, m = run_migration(
                    srv, [("bench", "t")], "none", progress=source, poll=poll,
                    flush_for_export=False,
                )  # fmt: skip
                rebuild = [s for s in m.results[0].statements if "FORCE" in s.sql]
                walls[label].append(rebuild[0].seconds)
                readings[label] += sum(1 for e in events if e.kind == "progress")
        base = statistics.median(walls[configs[0][0]])
        for label, source, _ in configs:
            med = statistics.median(walls[label])
            seen = f"{readings[label] // repeat}" if source else ""
            spread = f"{min(walls[label]):.2f}–{max(walls[label]):.2f}"
            lines.append(
                f"| {label} | {repeat} | {med:.2f} | {spread} | {med / base:.2f} | {seen} |"
            )
        lo, hi = min(walls[configs[0][0]]), max(walls[configs[0][0]])
        inside = all(statistics.median(w) <= hi for w in walls.values())
        verdict = (
            f"Every watched median is within the bare runs' {lo:.2f}–{hi:.2f} s: no cost "
            "measurable above this machine's run-to-run noise."
            if inside
            else "Some watched medians are slower than every bare run (see the table)."
        )
        size = srv.file_path("bench", "t").stat().st_size
    head = f"Table: {n:,} rows of the samples' definition, {size / 1e6:.0f} MB file, MariaDB " + (
        f"{srv.version}, performance_schema on, rebuild to the same format (`--to none`)."
    )
    return head + "\n\n" + "\n".join(lines) + "\n\n" + verdict


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows-doublings", type=int, default=4, help="20,000 rows × 2^N")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    scans = scan_section(args.repeat)
    alters = alter_section(args.rows_doublings, args.repeat)
    body = (
        "Page state of a tablespace (`server tables`, `migrate` verification) from the page "
        "cache: 42-byte header reads against decoding every page.\n\n"
        + scans
        + "\n\nWhat watching a rebuild costs:\n\n"
        + alters
        + "\n\nCommand: `.venv/bin/python bench/bench_server.py`"
    )
    append_results("Server: page-state scans and the cost of watching an ALTER", body)
    print(body)


if __name__ == "__main__":
    main()
