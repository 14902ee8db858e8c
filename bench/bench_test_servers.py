"""The server test files under a census: wall time, servers alive at peak, their AIO contexts.

Runs pytest on the test files that start throwaway servers (or the files given) with a private
``TMPDIR``, so the servers it starts are told apart from any other MariaDB/MySQL on the machine
by their ``--datadir``; every half second it counts those servers, the native AIO rings they
map (``[aio]`` in ``/proc/PID/maps``, one per ``io_setup``) and io_uring instances they hold
(``anon_inode:[io_uring]`` descriptors), and reads the machine-wide ``/proc/sys/fs/aio-nr``.
With ``--beside`` a MariaDB 10.11 and a MySQL 8.0.15 (or ``--beside-mysql``) run beside the
tests the whole time, with native AIO on, as another service on the machine would. Prints one
summary line (and ``--json`` a record) for bench/RESULTS.md, with the test pool's counts
(servers made, starts, resets) from ``IBDTOOL_TEST_SERVERS_LOG``.

    PYTHONPATH=$PWD /work/main/.venv/bin/python bench/bench_test_servers.py -n 2
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent

#: the test files that start throwaway servers (directly or through tests/server_fixtures.py)
SERVER_FILES = [
    "tests/test_cfg_versions.py",
    "tests/test_client_options.py",
    "tests/test_copy_servers.py",
    "tests/test_crypt_mariadb.py",
    "tests/test_crypt_mysql_server.py",
    "tests/test_fulltext_tables.py",
    "tests/test_index_names.py",
    "tests/test_labels_servers.py",
    "tests/test_migrate_interrupt.py",
    "tests/test_migrate_load.py",
    "tests/test_migrate_mariadb.py",
    "tests/test_migrate_mysql.py",
    "tests/test_migrate_pacing.py",
    "tests/test_migrate_predict.py",
    "tests/test_migrate_replica.py",
    "tests/test_migrate_verify.py",
    "tests/test_names_everywhere.py",
    "tests/test_names_live.py",
    "tests/test_option_conventions.py",
    "tests/test_records.py",
    "tests/test_records_client.py",
    "tests/test_records_export.py",
    "tests/test_records_fit.py",
    "tests/test_records_instant.py",
    "tests/test_records_types.py",
    "tests/test_schema_forms.py",
    "tests/test_schema_names.py",
    "tests/test_server_live.py",
    "tests/test_shared_machine.py",
    "tests/test_simulate_sampling.py",
    "tests/test_terminal_width.py",
    "tests/test_tui_server.py",
    "tests/test_zip_page.py",
]


def server_pids(marker: str) -> list[int]:
    """Pids of mariadbd/mysqld processes whose command line contains *marker*."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            args
            and args[0].endswith((b"mariadbd", b"mysqld"))
            and marker.encode() in b" ".join(args)
        ):
            pids.append(int(entry.name))
    return pids


def aio_rings(pid: int) -> int:
    """Native AIO contexts of *pid*: each ``io_setup`` maps one ``[aio]`` ring."""
    try:
        return sum("[aio]" in ln for ln in Path(f"/proc/{pid}/maps").read_text().splitlines())
    except OSError:
        return 0


def io_urings(pid: int) -> int:
    """io_uring instances *pid* holds open."""
    n = 0
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                n += os.readlink(fd) == "anon_inode:[io_uring]"
    except OSError:
        pass
    return n


def aio_nr() -> int:
    return int(Path("/proc/sys/fs/aio-nr").read_text())


class Census(threading.Thread):
    """Samples the servers under *marker* until stopped; keeps the peaks."""

    def __init__(self, marker: str, every: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.marker, self.every = marker, every
        self.peak_servers = self.peak_rings = self.peak_urings = 0
        self.peak_aio_nr = self.base_aio_nr = aio_nr()
        self.started = 0
        self._seen: set[int] = set()
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self.every):
            pids = server_pids(self.marker)
            self._seen.update(pids)
            self.peak_servers = max(self.peak_servers, len(pids))
            self.peak_rings = max(self.peak_rings, sum(aio_rings(p) for p in pids))
            self.peak_urings = max(self.peak_urings, sum(io_urings(p) for p in pids))
            self.peak_aio_nr = max(self.peak_aio_nr, aio_nr())
        self.started = len(self._seen)

    def stop(self) -> None:
        self._stop_event.set()
        self.join()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", default="2", help="pytest-xdist workers (default 2)")
    ap.add_argument("--json", action="store_true", help="also print the record as JSON")
    ap.add_argument("--beside", action="store_true", help="native-AIO servers run beside")
    ap.add_argument("--beside-mysql", default="8.0.15", help="their MySQL (default 8.0.15)")
    ap.add_argument("files", nargs="*", help="test files (default: the server test files)")
    args = ap.parse_args()
    files = args.files or SERVER_FILES
    with contextlib.ExitStack() as stack:
        beside = []
        if args.beside:
            sys.path.insert(0, str(REPO))
            from samples import servers

            for srv in (
                servers.mariadb_server(native_aio=True),
                servers.mysql_server(args.beside_mysql, native_aio=True),
            ):
                beside.append(stack.enter_context(srv))
            held = [(aio_rings(s.pid or 0), io_urings(s.pid or 0)) for s in beside]
            print(f"beside: {[s.server_version for s in beside]}, (aio rings, io_urings) {held}")
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="ibdtool-census-"))
        pool_log = Path(tmp) / "pool.jsonl"
        env = dict(os.environ, TMPDIR=tmp, PYTHONPATH=str(REPO))
        env["IBDTOOL_TEST_SERVERS_LOG"] = str(pool_log)
        census = Census(tmp)
        load = os.getloadavg()[0]
        census.start()
        t0 = time.perf_counter()
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", args.n]
        res = subprocess.run([*cmd, *files], cwd=REPO, env=env, check=False)
        wall = time.perf_counter() - t0
        census.stop()
        pools = (
            [json.loads(ln) for ln in pool_log.read_text().splitlines()]
            if pool_log.is_file()
            else []
        )
    record = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "workers": args.n,
        "files": len(files),
        "exit": res.returncode,
        "wall_s": round(wall, 1),
        "load_at_start": round(load, 2),
        "load_at_end": round(os.getloadavg()[0], 2),
        "servers_started": census.started,
        "peak_servers": census.peak_servers,
        "peak_aio_rings": census.peak_rings,
        "peak_io_urings": census.peak_urings,
        "aio_nr_before": census.base_aio_nr,
        "peak_aio_nr": census.peak_aio_nr,
        "beside": args.beside,
        "pools": pools,
    }
    print(
        f"pytest exit {res.returncode} in {wall:.0f} s (load {load:.2f} -> "
        f"{record['load_at_end']}); servers started {census.started}, alive at peak "
        f"{census.peak_servers}, their AIO rings at peak {census.peak_rings}, io_urings "
        f"{census.peak_urings}; aio-nr {census.base_aio_nr} -> peak {census.peak_aio_nr}"
    )
    for pool in pools:
        print(f"  worker pool: {pool}")
    if args.json:
        print(json.dumps(record))
    return res.returncode


if __name__ == "__main__":
    raise SystemExit(main())
