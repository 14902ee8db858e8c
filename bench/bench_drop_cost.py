"""Issue 22: what page compression costs besides the space — extents, DROP time, a cold scan —
measured on this machine beside what ibdtool predicts.

Run by hand, as root (loop mounts, dropping a file's pages from the cache):
    PYTHONPATH=$PWD /work/main/.venv/bin/python bench/bench_drop_cost.py [--doublings N]

Part 1, filesystems: a file punched page by page (16 KiB slots keeping 8 KiB, as a 2:1
page-compressed tablespace) and a plain file of the same data, unlinked and timed, on the
machine's own filesystem and on loop-mounted ext4 (with and without ``discard``) and XFS
images; ibdtool's built-in prediction for each beside it.
Part 2, MariaDB 10.11: the samples' table (20,000 rows doubled N times) in three forms —
plain, PAGE_COMPRESSED (zlib), ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8 — each flushed, its
allocation and FIEMAP extents (ibdtool and ``filefrag -v``), a cold raw read of the file and a
cold full scan through the server (restarted, the file dropped from the page cache), then a
timed DROP TABLE beside ``inspect``'s predicted range; then a page-compressed copy dropped after
``drop-prepare`` and freed with ``free``. Results: bench/RESULTS.md, "Issue 22".
Part 3 (``--sysbench``, alone): the issue table's sysbench columns — cold point-select QPS,
cold update QPS with its p99 — for the three forms of sysbench's own table, and ``server
probe``'s cold figures on the same table beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import IBDTOOL, REPO, append_results

sys.path.insert(0, str(REPO))

from samples import servers
from tests.server_fixtures import FAST, make_table
from tests.test_drop_cost import filefrag_extents, punched_file

POSIX_FADV_DONTNEED = 4


def ibdtool_json(*args: str, env: dict[str, str] | None = None) -> Any:
    out = subprocess.run(
        [*IBDTOOL, *args], capture_output=True, text=True, env=env, cwd=REPO, check=False
    )
    if out.returncode not in (0, 1):
        raise SystemExit(f"ibdtool {' '.join(args)}: {out.stderr}")
    return json.loads(out.stdout)


def uncache(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def cold_read(path: Path) -> float:
    """Read every byte of the file (holes read as zeros, as a reader of the raw file sees)
    after dropping it from the page cache."""
    uncache(path)
    t0 = time.perf_counter()
    with open(path, "rb", buffering=0) as fh:
        while fh.read(1 << 20):
            pass
    return time.perf_counter() - t0


def timed_unlink(path: Path) -> float:
    t0 = time.perf_counter()
    os.unlink(path)
    return time.perf_counter() - t0


# --- part 1: filesystems -------------------------------------------------------------------------


def loop_fs(kind: str, options: str, work: Path) -> tuple[Path, Path]:
    image = work / f"{kind}-{options or 'default'}.img"
    mnt = work / f"mnt-{kind}-{options or 'default'}"
    mnt.mkdir()
    subprocess.run(["truncate", "-s", "2G", str(image)], check=True)
    mkfs = ["mkfs.xfs", "-q", str(image)] if kind == "xfs" else ["mkfs.ext4", "-q", str(image)]
    subprocess.run(mkfs, check=True)
    opts = ["-o", f"loop,{options}"] if options else ["-o", "loop"]
    subprocess.run(["mount", *opts, str(image), str(mnt)], check=True)
    return image, mnt


def fs_rows(extents: int, reps: int) -> list[str]:
    work = Path(tempfile.mkdtemp(prefix="ibdtool-bench-fs-", dir="/work"))
    places: list[tuple[str, Path]] = [("machine's own (/)", work / "root")]
    (work / "root").mkdir()
    mounts: list[Path] = []
    for kind, options in (("ext4", "nodiscard"), ("ext4", "discard"), ("xfs", "")):
        try:
            _img, mnt = loop_fs(kind, options, work)
        except (subprocess.CalledProcessError, FileNotFoundError) as exc:
            places.append((f"{kind} {options} (not made: {exc})", Path("/nonexistent")))
            continue
        mounts.append(mnt)
        places.append((f"loop {kind} {options or ''}".strip(), mnt))
    rows = [
        "| filesystem | basis (ibdtool) | unlink, punched file | plain file | µs per extent "
        "(min–max) | ibdtool's prediction | inside |",
        "|---|---|---|---|---|---|---|",
    ]
    try:
        for label, where in places:
            if not where.exists():
                rows.append(f"| {label} | | | | | | |")
                continue
            punched, plain = [], []
            for i in range(reps):
                f = where / f"p{i}.ibd"
                punched_file(f, extents)
                n = filefrag_extents(f)
                punched.append(timed_unlink(f))
                g = where / f"d{i}.ibd"
                with open(g, "wb") as fh:
                    chunk = os.urandom(1 << 20)
                    for _ in range(extents * 8192 >> 20):
                        fh.write(chunk)
                    fh.flush()
                    os.fsync(fh.fileno())
                plain.append(timed_unlink(g))
            f = where / "probe.ibd"
            punched_file(f, extents)
            pred = predicted_for(f, filefrag_extents(f))
            os.unlink(f)
            per = [1e6 * max(0.0, p - q) / n for p, q in zip(punched, plain, strict=True)]
            inside = sum(pred["low"] <= t <= pred["high"] for t in punched)
            rows.append(
                f"| {label} | {pred['rate']} | {statistics.median(punched):.3f} s "
                f"({min(punched):.3f}–{max(punched):.3f}) | {statistics.median(plain):.3f} s | "
                f"{statistics.median(per):.0f} ({min(per):.0f}–{max(per):.0f}) | "
                f"{pred['seconds']:.3f} s ({pred['low']:.3f}–{pred['high']:.3f}) | "
                f"{inside}/{reps} |"
            )
    finally:
        for mnt in mounts:
            subprocess.run(["umount", str(mnt)], check=False)
        shutil.rmtree(work, ignore_errors=True)
    return rows


def predicted_for(path: Path, n: int) -> dict[str, Any]:
    """ibdtool's built-in prediction for ``n`` extents at ``path`` (no state file read)."""
    code = (
        "import json,sys;from ibdtool.fs import extents as e;"
        "c=e.drop_cost(sys.argv[1],int(sys.argv[2]),int(sys.argv[3]));"
        "print(json.dumps(c.to_json()))"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO), XDG_STATE_HOME="/nonexistent")
    out = subprocess.run(
        [sys.executable, "-c", code, str(path), str(n), str(path.stat().st_size)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    doc: dict[str, Any] = json.loads(out)
    return doc


# --- part 2: MariaDB ---------------------------------------------------------------------------

FORMS = {
    "plain": "",
    "PAGE_COMPRESSED zlib": "PAGE_COMPRESSED=1",
    "ROW_FORMAT=COMPRESSED 8K": "ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8",
}


def cold_scan(srv: servers.ThrowawayServer, table: str, path: Path) -> float:
    srv.stop()
    uncache(path)
    srv.start()
    with srv.connect() as conn, conn.cursor() as cur:
        t0 = time.perf_counter()
        cur.execute(f"SELECT COUNT(*), SUM(CRC32(notes)) FROM cost.`{table}`")
        cur.fetchall()
        return time.perf_counter() - t0


def server_rows(doublings: int) -> list[str]:
    run = [
        *FAST,
        "--innodb-doublewrite=0",
        "--innodb-use-native-aio=0",
        "--innodb-buffer-pool-load-at-startup=0",
        "--innodb-buffer-pool-dump-at-shutdown=0",
    ]
    rows = [
        "| form | allocated | extents (ibdtool / filefrag -v rows / filefrag summary) | "
        "predicted DROP | DROP TABLE | cold raw read | predicted layout | cold full scan |",
        "|---|---|---|---|---|---|---|---|",
    ]
    extra: list[str] = []
    with servers.mariadb_server(run_options=run) as srv:
        assert srv.datadir is not None
        facts: dict[str, dict[str, Any]] = {}
        for name, options in FORMS.items():
            table = re.sub(r"\W+", "_", name).lower()
            make_table(srv, "cost", table, rows=20000, options=options, doublings=doublings)
            path = srv.datadir / "cost" / f"{table}.ibd"
            with srv.connect() as conn, conn.cursor() as cur:
                cur.execute(f"FLUSH TABLES cost.`{table}` FOR EXPORT")
                doc = ibdtool_json("inspect", "--json", str(path))
                rows_ff = filefrag_extents(path)
                summary = subprocess.run(
                    ["filefrag", str(path)], capture_output=True, text=True, check=True
                ).stdout.strip()
                cur.execute("UNLOCK TABLES")
            facts[name] = {
                "path": path,
                "table": table,
                "doc": doc,
                "filefrag": rows_ff,
                "summary": summary.rsplit(":", 1)[-1].strip(),
                "raw": cold_read(path),
            }
        for f in facts.values():
            f["scan"] = cold_scan(srv, f["table"], f["path"])
        base_raw, base_scan = facts["plain"]["raw"], facts["plain"]["scan"]
        for name, f in facts.items():
            doc = f["doc"]
            cost = doc["drop_cost"]
            with srv.connect() as conn, conn.cursor() as cur:
                t0 = time.perf_counter()
                cur.execute(f"DROP TABLE cost.`{f['table']}`")
                took = time.perf_counter() - t0
            inside = "yes" if cost["low"] <= took <= cost["high"] else "NO"
            rows.append(
                f"| {name} | {doc['allocated_size'] / 2**20:.0f} MiB | {doc['extents']:,} / "
                f"{f['filefrag']:,} / {f['summary']} | {cost['seconds']:.3f} s "
                f"({cost['low']:.3f}–{cost['high']:.3f}) | {took:.3f} s (inside: {inside}) | "
                f"{f['raw']:.2f} s ({f['raw'] / base_raw:.2f}×) | "
                f"{doc['layout']['scan_layout_factor']:.2f}× | "
                f"{f['scan']:.2f} s ({f['scan'] / base_scan:.2f}×) |"
            )
        # the stall-free DROP
        make_table(
            srv, "cost", "kept", rows=20000, options="PAGE_COMPRESSED=1", doublings=doublings
        )
        path = srv.datadir / "cost" / "kept.ibd"
        with srv.connect() as conn, conn.cursor() as cur:
            cur.execute("FLUSH TABLES cost.kept FOR EXPORT")
            n = filefrag_extents(path)
            cur.execute("UNLOCK TABLES")
        link = ibdtool_json("drop-prepare", "--json", str(path))["link"]
        with srv.connect() as conn, conn.cursor() as cur:
            t0 = time.perf_counter()
            cur.execute("DROP TABLE cost.kept")
            took = time.perf_counter() - t0
        out = subprocess.run(
            [*IBDTOOL, "free", "--json", link], capture_output=True, text=True, cwd=REPO, check=True
        ).stdout.splitlines()
        summary = json.loads(out[-1])["summary"]
        extra.append(
            f"PAGE_COMPRESSED copy with `drop-prepare` first: {n:,} extents; DROP TABLE "
            f"{took:.3f} s; then `free` (256 extents a step, 0.2 s pauses, idle I/O): "
            f"{summary['steps']} steps, longest stall {summary['longest_stall_s']:.3f} s, "
            f"{summary['elapsed_s']:.1f} s in all."
        )
    return [*rows, "", *extra]


# --- part 3: sysbench and the probe, cold --------------------------------------------------------

SYSBENCH_FORMS = {
    "plain": "",
    "PAGE_COMPRESSED zlib": "PAGE_COMPRESSED=1",
    "ROW_FORMAT=COMPRESSED 8K": "ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8",
}


def sysbench(
    srv: servers.ThrowawayServer, test: str, db: str, rows: int, seconds: int
) -> dict[str, float]:
    """One sysbench 1.0.20 run on ``db.sbtest1``: queries a second and the 99th percentile."""
    out = subprocess.run(
        [
            "sysbench",
            test,
            "--db-driver=mysql",
            f"--mysql-socket={srv.socket}",
            "--mysql-user=root",
            f"--mysql-db={db}",
            "--tables=1",
            f"--table-size={rows}",
            "--threads=2",
            f"--time={seconds}",
            "--percentile=99",
            "--report-interval=0",
            "run",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    qps = re.search(r"queries:\s+\d+\s+\(([\d.]+) per sec", out)
    p99 = re.search(r"99th percentile:\s+([\d.]+)", out)
    if not qps or not p99:
        raise SystemExit(f"sysbench {test}: no figures in its report:\n{out}")
    return {"qps": float(qps.group(1)), "p99_ms": float(p99.group(1))}


def cold_restart(srv: servers.ThrowawayServer, paths: list[Path]) -> None:
    """The buffer pool emptied (a restart, no pool load at startup) and the files out of the
    page cache: the next reads come from the disk."""
    srv.stop()
    for p in paths:
        uncache(p)
    srv.start()


def sysbench_rows(rows: int, seconds: int, pool: str) -> list[str]:
    run = [
        *[o for o in FAST if not o.startswith("--innodb-buffer-pool-size")],
        f"--innodb-buffer-pool-size={pool}",
        "--innodb-doublewrite=0",
        "--innodb-use-native-aio=0",
        "--innodb-buffer-pool-load-at-startup=0",
        "--innodb-buffer-pool-dump-at-shutdown=0",
        "--performance-schema=ON",
    ]
    out = [
        "| form | allocated | cold point-select QPS (p99) | cold update QPS (p99) | "
        "probe, cold: first reads p50 / p99 (cold share) | probe: repeats p50 | "
        "probe vs performance_schema p50 |",
        "|---|---|---|---|---|---|---|",
    ]
    with servers.mariadb_server(run_options=run) as srv:
        assert srv.datadir is not None
        dbs = {name: "sb_" + re.sub(r"\W+", "_", name).lower() for name in SYSBENCH_FORMS}
        plain = dbs["plain"]
        srv.query(f"CREATE DATABASE {plain}")
        subprocess.run(
            [
                "sysbench",
                "oltp_point_select",
                "--db-driver=mysql",
                f"--mysql-socket={srv.socket}",
                "--mysql-user=root",
                f"--mysql-db={plain}",
                "--tables=1",
                f"--table-size={rows}",
                "prepare",
            ],
            capture_output=True,
            check=True,
        )
        for name, options in SYSBENCH_FORMS.items():
            if name == "plain":
                continue
            db = dbs[name]
            srv.query(f"CREATE DATABASE {db}")
            srv.query(f"CREATE TABLE {db}.sbtest1 LIKE {plain}.sbtest1")
            srv.query(f"ALTER TABLE {db}.sbtest1 {options}")
            srv.query(f"INSERT INTO {db}.sbtest1 SELECT * FROM {plain}.sbtest1")
        paths = [srv.datadir / db / "sbtest1.ibd" for db in dbs.values()]
        facts: dict[str, dict[str, Any]] = {}
        for name, db in dbs.items():
            f: dict[str, Any] = {"allocated": paths[list(dbs).index(name)].stat().st_blocks * 512}
            cold_restart(srv, paths)
            f["point"] = sysbench(srv, "oltp_point_select", db, rows, seconds)
            cold_restart(srv, paths)
            f["update"] = sysbench(srv, "oltp_update_non_index", db, rows, seconds)
            cold_restart(srv, paths)
            srv.query(
                "UPDATE performance_schema.setup_consumers SET ENABLED = 'YES' "
                "WHERE NAME LIKE 'events_statements%'"
            )
            f["probe"] = ibdtool_json(
                "server",
                "probe",
                "-S",
                str(srv.socket),
                "-u",
                "root",
                f"{db}.sbtest1",
                "--points",
                "200",
                "--ranges",
                "0",
                "--rate",
                "200",
                "--share",
                "0.5",
                "--seed",
                "1",
                "--json",
            )
            f["allocated"] = paths[list(dbs).index(name)].stat().st_blocks * 512
            facts[name] = f
        base = facts["plain"]
        for name, f in facts.items():
            lat = f["probe"]["latency"]
            first, rep, point = lat["first"], lat["repeat"], lat["point"]
            cold_n = lat["cold"]["n"]
            bp, bu = base["point"], base["update"]
            b_first = base["probe"]["latency"]["first"]
            out.append(
                f"| {name} | {f['allocated'] / 2**20:.0f} MiB | {f['point']['qps']:,.0f} "
                f"({f['point']['qps'] / bp['qps']:.2f}×; {f['point']['p99_ms']:.2f} ms) | "
                f"{f['update']['qps']:,.0f} ({f['update']['qps'] / bu['qps']:.2f}×; "
                f"{f['update']['p99_ms']:.2f} ms) | {first['p50_ms']:.2f} / {first['p99_ms']:.2f} "
                f"ms ({first['p50_ms'] / b_first['p50_ms']:.2f}× p50; {cold_n} of "
                f"{point['n']} reads cold) | {rep['p50_ms']:.2f} ms | "
                f"{point['p50_ms']:.2f} / {point['server_p50_ms'] or 0:.2f} ms |"
            )
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--doublings", type=int, default=3)
    ap.add_argument("--extents", type=int, default=8192)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--skip-fs", action="store_true")
    ap.add_argument("--skip-server", action="store_true")
    ap.add_argument("--title", default="Issue 22: extents, DROP time and cold scans")
    ap.add_argument("--sysbench", action="store_true", help="Part 3 only: sysbench and the probe")
    ap.add_argument("--sb-rows", type=int, default=500_000)
    ap.add_argument("--sb-seconds", type=int, default=30)
    ap.add_argument("--sb-pool", default="64M")
    args = ap.parse_args()
    if args.sysbench:
        loads = os.getloadavg()
        lines = sysbench_rows(args.sb_rows, args.sb_seconds, args.sb_pool)
        body = "\n".join(
            [
                f"sysbench 1.0.20, MariaDB 10.11, `sbtest1` of {args.sb_rows:,} rows in three "
                f"forms, buffer pool {args.sb_pool}, 2 threads, {args.sb_seconds} s a run; each "
                "run after a restart with no buffer pool load and the files dropped from the "
                "page cache (cold). The probe: `server probe --points 200 --ranges 0 --rate "
                "200 --share 0.5 --seed 1`, cold too; its p50 beside performance_schema's "
                "timing of the same statements.",
                "",
                *lines,
            ]
        )
        body += (
            f"\n\nLoad average (1/5/15 min) at start {loads[0]:.2f}/{loads[1]:.2f}/{loads[2]:.2f}, "
            f"at end {os.getloadavg()[0]:.2f}."
        )
        print(body)
        append_results("Issue 22: sysbench columns, cold, beside the probe", body)
        return
    load = os.getloadavg()[0]
    parts = []
    if not args.skip_fs:
        parts += [
            f"### Filesystems: unlink of a {args.extents:,}-extent file ({args.reps} runs)",
            "",
            *fs_rows(args.extents, args.reps),
            "",
        ]
    rows = 20000 * 2**args.doublings
    if not args.skip_server:
        parts += [
            f"### MariaDB 10.11: the samples' table, {rows:,} rows, in three forms",
            "",
            *server_rows(args.doublings),
        ]
    body = (
        "\n".join(parts) + f"\n\nLoad average at start {load:.2f}, at end {os.getloadavg()[0]:.2f}."
    )
    print(body)
    append_results(args.title, body)


if __name__ == "__main__":
    main()
