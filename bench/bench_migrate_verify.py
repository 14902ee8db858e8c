"""Batch time of ``migrate --execute`` and how many conversions end verified: today's checkout
against another (``--before DIR``, default ``/work/main``), on throwaway servers.

For each server (MariaDB 10.11 and MySQL 8.0.33 by default) and each checkout, ``N`` tables of
the samples' rows are made afresh, then converted in one ``migrate`` run (its defaults, JSON
lines); the row gives the wall time of the run, the sum of its statements' own times (the
ALTERs), the tail (the rest) and how many tables ended ``verified``.

Run by hand: ``PYTHONPATH=$PWD .venv/bin/python bench/bench_migrate_verify.py [--tables N]
[--rows R] [--before DIR]``; replaces its section of ``bench/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import append_results
from samples import servers
from tests.server_fixtures import FAST, PLUGINS, conn_args, make_table

HERE = Path(__file__).resolve().parent.parent
PYTHON = Path("/work/main/.venv/bin/python")


def run_batch(checkout: Path, srv: servers.ThrowawayServer, names: list[str]) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MYSQL_")}
    env["PYTHONPATH"] = str(checkout)
    cmd = [
        str(PYTHON), "-m", "ibdtool.cli", "migrate", *names, "--to", "page:zlib",
        "--execute", "--yes", "--json", *conn_args(srv),
    ]  # fmt: skip
    t0 = time.perf_counter()
    started = None
    events = []
    with subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=checkout
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            if not line.startswith("{"):
                continue
            ev = json.loads(line)
            events.append(ev)
            if ev.get("event") == "batch_start" and started is None:
                started = time.perf_counter()
    wall = time.perf_counter() - t0
    done = [e for e in events if e.get("event") == "table_done"]
    alters = sum(s["seconds"] for e in done for s in e["result"]["statements"])
    verified = sum(1 for e in done if e["result"]["verified"] is True)
    batch = wall - (started - t0) if started is not None else wall
    return {
        "wall": wall,
        "batch": batch,
        "alters": alters,
        "verified": verified,
        "rc": proc.returncode,
    }


def server(kind: str) -> servers.ThrowawayServer:
    run = [*FAST, "--innodb-doublewrite=0"]
    if kind == "mariadb":
        return servers.mariadb_server(
            plugins=PLUGINS, run_options=[*run, "--performance-schema=ON"]
        )
    return servers.mysql_server(kind, run_options=run)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tables", type=int, default=5)
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--before", type=Path, default=Path("/work/main"))
    ap.add_argument("--servers", default="mariadb,8.0.33")
    args = ap.parse_args()
    rows = [
        "| server | checkout | tables | run s | batch s | ALTERs s | tail s | verified | exit |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for kind in args.servers.split(","):
        with server(kind) as srv:
            label = f"{srv.flavor} {srv.server_version}"
            for checkout, name in ((args.before, "before"), (HERE, "after")):
                names = [f"bv.t{i}" for i in range(args.tables)]
                for n in names:
                    make_table(srv, "bv", n.split(".")[1], rows=args.rows)
                time.sleep(2)
                r = run_batch(checkout, srv, names)
                rows.append(
                    f"| {label} | {name} ({checkout}) | {args.tables} | {r['wall']:.1f} | "
                    f"{r['batch']:.1f} | {r['alters']:.1f} | {r['batch'] - r['alters']:.1f} | "
                    f"{r['verified']:.0f}/{args.tables} | {r['rc']:.0f} |"
                )
                print(rows[-1], flush=True)
    body = (
        f"Command: `PYTHONPATH=$PWD .venv/bin/python bench/bench_migrate_verify.py --tables "
        f"{args.tables} --rows {args.rows} --servers {args.servers}`. Each table: "
        f"{args.rows:,} of the samples' rows, "
        "made afresh and converted to page:zlib by one `migrate --execute --yes --json` with "
        "its defaults. *before*: the checkout it is compared with (`--before`); *after*: "
        "this one. Both verify each table once its pages are written while the batch goes "
        "on and nudge the page cleaner meanwhile (put back after); main lowers "
        "innodb_max_dirty_pages_pct_lwm after 5 s without a page written; this branch, on "
        "MariaDB, also raises innodb_io_capacity to innodb_io_capacity_max and turns "
        "innodb_adaptive_flushing OFF, at once when the mark is 0 (MySQL: as before). *run*: "
        "the whole command "
        "(start-up, plan and its prediction included); *batch*: from the batch's first event "
        "to the end; tail = batch − the statements' own "
        "time (waits, reading back).\n\n" + "\n".join(rows)
    )
    append_results("migrate: batch time and verified conversions", body)


if __name__ == "__main__":
    main()
