"""A conversion under a write load: how long writers wait, with and without --flush-for-export.

On a throwaway MariaDB 10.11 (performance_schema on), a table of the samples' rows is converted
to ``page:zlib`` and back to ``none`` while two client threads update and insert rows of it
(``tests/writeload.py``). Recorded per run: the rebuild's wall time, the whole table's time,
how long FLUSH TABLES … FOR EXPORT held its lock (with the flag) and each writer's longest
statement (its longest stall). Target (issue 13): without the flag no writer stalls longer than
the ALTER's own metadata-lock moments, i.e. well below the stall the flush causes.

Run by hand: ``.venv/bin/python bench/bench_migrate_load.py [--rows-doublings N]``; appends a
section to ``bench/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import append_results
from samples import servers
from tests.server_fixtures import FAST, make_table, run_migration
from tests.writeload import WriteLoad


def one_run(srv: servers.ThrowawayServer, target: str, flush: bool) -> dict[str, float]:
    with WriteLoad(srv, "bench", "t", threads=2, limit=900) as load:
        _, m = run_migration(
            srv, [("bench", "t")], target, poll=0.5, flush_for_export=flush, flush_wait=10
        )
    r = m.results[0]
    if not r.ok or load.errors:  # done, or awaiting_flush (no flush asked for)
        raise SystemExit(f"{target}: {r.status} {r.message} {load.errors}")
    rebuild = next(s.seconds for s in r.statements if s.sql.startswith(("ALTER", "OPTIMIZE")))
    return {
        "rebuild": rebuild,
        "table": r.seconds,
        "lock": r.lock_seconds or 0.0,
        "stall": load.max_stall,
        "writes": float(sum(w.statements for w in load.writers)),
        "unflushed": float(r.unflushed_pages or 0),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows-doublings", type=int, default=4, help="20,000 rows × 2^N")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    run = [*FAST, "--innodb-doublewrite=0", "--performance-schema=ON"]
    runs: dict[bool, list[dict[str, float]]] = {False: [], True: []}
    with servers.mariadb_server(plugins=["provider_lz4"], run_options=run) as srv:
        make_table(srv, "bench", "t", rows=20000, doublings=args.rows_doublings)
        size = srv.file_path("bench", "t").stat().st_size
        n = srv.query("SELECT COUNT(*) FROM bench.t")[0][0]
        for _ in range(args.repeat):  # interleaved: drift hits both ways alike
            for flush in (False, True):
                for target in ("page:zlib", "none"):
                    runs[flush].append(one_run(srv, target, flush))
        version = srv.version
    lines = [
        "| verification | runs | rebuild s (median) | table s (median) | write lock s (max) "
        "| longest writer stall s (max) | writes | pages not on disk at the check (median) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for flush, label in ((False, "default (no lock)"), (True, "`--flush-for-export`")):
        rs = runs[flush]
        lines.append(
            f"| {label} | {len(rs)} | {statistics.median(r['rebuild'] for r in rs):.2f} "
            f"| {statistics.median(r['table'] for r in rs):.2f} "
            f"| {max(r['lock'] for r in rs):.2f} | {max(r['stall'] for r in rs):.3f} "
            f"| {sum(r['writes'] for r in rs):,.0f} "
            f"| {statistics.median(r['unflushed'] for r in rs):,.0f} |"
        )
    quiet = max(r["stall"] for r in runs[False])
    locked = max(r["stall"] for r in runs[True])
    verdict = f"Longest stall without the flag {quiet:.3f} s, with it {locked:.3f} s: " + (
        "target met." if quiet < locked else "target NOT met."
    )
    body = (
        f"Table: {n:,} rows, {size / 1e6:.0f} MB file, MariaDB {version}; `page:zlib` and back "
        "to `none`, two writers (UPDATE/INSERT, autocommit, 5 ms apart) throughout.\n\n"
        + "\n".join(lines)
        + "\n\n"
        + verdict
        + "\n\nCommand: `.venv/bin/python bench/bench_migrate_load.py`"
    )
    append_results("Migrate under a write load: writer stalls with and without the flush", body)
    print(body)


if __name__ == "__main__":
    main()
