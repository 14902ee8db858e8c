"""Issue 24 item 3: ``records`` rows/s, one process and all cores, against the server's own
``SELECT *`` of the same rows through the ``mariadb`` client, in one run.

Run by hand:

    PYTHONPATH=$PWD /work/main/.venv/bin/python bench/bench_records.py [--rows N]
        [--repeat N] [--before COMMIT] [--no-write]

A throwaway MariaDB 10.11 (:func:`samples.servers.mariadb_server`) makes a plain table of
``--rows`` rows (default 500,000; INT key, INT, CHAR(120), CHAR(60) — sysbench's ``sbtest``
columns — and a nullable DATETIME, DECIMAL(10,2) and VARCHAR(64)), ``FLUSH TABLES … FOR
EXPORT`` writes it, and the .ibd is copied to bench/work. The anchor is the server answering
``mariadb -e 'SELECT * FROM t' > /dev/null`` (the server's CPU counts: it is the server
reading the same rows); each row is ``ibdtool records`` of the copy with ``--schema`` (the
CREATE TABLE), output to /dev/null: text, ``--format csv``, ``--format sql``, with ``-j 1`` and
with every core. ``--before COMMIT`` adds ``records -j 1`` (text) of that tree. Best wall time
of ``--repeat`` runs (interleaved: the machine is shared), rows/s and the ratio to the
anchor's time in the same run.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from common import IBDTOOL, REPO, WORK, append_results, machine

sys.path.insert(0, str(REPO))

CREATE = """CREATE TABLE t (
  id INT NOT NULL PRIMARY KEY, k INT NOT NULL, c CHAR(120) NOT NULL, pad CHAR(60) NOT NULL,
  d DATETIME, amount DECIMAL(10,2), note VARCHAR(64)
) ENGINE=InnoDB"""

FILL = """INSERT INTO t SELECT seq, seq * 7 % 100003,
  CONCAT(MD5(seq), '-', MD5(seq + 1), '-', MD5(seq + 2)), CONCAT('pad-', MD5(seq * 3)),
  '2020-01-01 00:00:00' + INTERVAL seq SECOND, (seq % 100000) / 100 - 300,
  IF(seq % 10 = 0, NULL, CONCAT('n', seq)) FROM seq_1_to_{rows}"""


def _server_cpu(pid: int) -> float:
    """CPU seconds (user + system) the server process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(cmd: list[str], server_pid: int | None = None) -> tuple[float, float]:
    """(wall s, CPU s) of ``cmd``: its own and its children's, plus the server's when the
    command is the server answering."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu0 = _server_cpu(server_pid) if server_pid else 0.0
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    secs = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if server_pid:
        cpu += _server_cpu(server_pid) - cpu0
    return secs, cpu


def make_table(rows: int, work: Path) -> tuple[Path, Path, object]:
    """The table on a started server: (copy of its .ibd, its CREATE TABLE file, the server)."""
    from samples import servers

    srv = servers.mariadb_server(workdir=str(work))
    srv.start()
    conn = srv.connect()
    with conn.cursor() as cur:
        cur.execute("CREATE DATABASE b")
        cur.execute("USE b")
        cur.execute(CREATE)
        cur.execute(FILL.format(rows=rows))
        conn.commit()
        cur.execute("SHOW CREATE TABLE t")
        create = cur.fetchone()[1]
        cur.execute("FLUSH TABLES t FOR EXPORT")
        ibd = work / f"records-{rows}.ibd"
        ibd.unlink(missing_ok=True)
        shutil.copyfile(srv.file_path("b", "t"), ibd)
        cur.execute("UNLOCK TABLES")
    conn.close()
    schema = work / f"records-{rows}.sql"
    schema.write_text(create)
    return ibd, schema, srv


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=500_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--before", default=None, help="also time records -j1 of this commit")
    ap.add_argument("--no-write", action="store_true", help="print only, leave RESULTS.md")
    args = ap.parse_args()
    WORK.mkdir(exist_ok=True)
    load_start = os.getloadavg()
    ibd, schema, srv = make_table(args.rows, WORK)
    try:
        client = shutil.which("mariadb") or "mysql"
        sock = str(srv.socket)  # type: ignore[attr-defined]
        anchor = [client, "--no-defaults", "-S", sock, "-uroot", "-e", "SELECT * FROM b.t"]
        anchor_name = "server SELECT * (mariadb client)"
        cores = len(os.sched_getaffinity(0))
        base = [*IBDTOOL, "records", str(ibd), "--schema", f"@{schema}"]
        rows = {anchor_name: anchor}
        for fmt in ("text", "csv", "sql"):
            extra = [] if fmt == "text" else ["--format", fmt]
            rows[f"records {fmt} -j 1"] = [*base, *extra, "-j", "1"]
            rows[f"records {fmt} -j {cores}"] = [*base, *extra, "-j", str(cores)]
        if args.before:
            from bench_issue24 import before_tree, ibdtool

            tree = before_tree(args.before)
            rows[f"records text, {args.before} (before)"] = ibdtool(
                tree, "records", ibd, "--schema", f"@{schema}"
            )
        best: dict[str, tuple[float, float]] = {}
        for _ in range(args.repeat):
            for name, cmd in rows.items():
                pid = srv.pid if name == anchor_name else None  # type: ignore[attr-defined]
                got = timed(cmd, pid)
                old = best.get(name, (float("inf"), float("inf")))
                best[name] = (min(old[0], got[0]), min(old[1], got[1]))
                print(f"{name}: {got[0]:.2f} s wall, {got[1]:.2f} s CPU", flush=True)
    finally:
        srv.stop()  # type: ignore[attr-defined]
        srv.cleanup()  # type: ignore[attr-defined]
    load_end = os.getloadavg()
    ref, ref_cpu = best[anchor_name]
    lines = [
        "| contender | best wall (s) | rows/s | × SELECT's wall | best CPU (s) | rows per CPU s "
        "| × SELECT's CPU |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, (secs, cpu) in best.items():
        lines.append(
            f"| {name} | {secs:.2f} | {args.rows / secs:,.0f} | {secs / ref:.2f} | {cpu:.2f} "
            f"| {args.rows / cpu:,.0f} | {cpu / ref_cpu:.2f} |"
        )
    body = (
        f"`bench/bench_records.py --rows {args.rows} --repeat {args.repeat}`: a plain table "
        f"made by MariaDB 10.11 ({ibd.stat().st_size / 2**20:.0f} MiB), best of {args.repeat} "
        f"interleaved runs, output to /dev/null. Load average {load_start[0]:.1f} at start, "
        f"{load_end[0]:.1f} at the end: the machine is shared with other sessions, so the "
        "absolute rows/s move with it; the ratio to the server's own SELECT in the same run is "
        "the figure. CPU is user + system of the command and its forked workers (for the SELECT: "
        "the client's and the server's).\n\n" + "\n".join(lines)
    )
    print(machine())
    print(body)
    if not args.no_write:
        append_results("Issue 24: records rows/s against the server's SELECT", body)
    ibd.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
