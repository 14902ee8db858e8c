"""Benchmark ``ibdtool copy`` (run by hand; results go to bench/RESULTS.md).

Local: the time to copy a >= 1 GB page-compressed tablespace against ``cp --sparse=always``
(also with ``sync FILE``, since ibdtool fsyncs), warm page cache, median of ``--runs``; and a
densified copy of it (``cat``) re-punched by ibdtool against ``cp --sparse=always``.

Over ssh (a throwaway sshd on 127.0.0.1, see tests/test_copy_remote.py): the bytes each tool
puts on the wire, counted by a ProxyCommand relay between ssh and sshd (so encryption and
protocol overhead count the same for everyone), against ``scp`` and ``rsync --sparse``.

    .venv/bin/python bench/bench_copy.py [--file bench/work/big-fcrc32-zlib.ibd] [--runs 3]

The file comes from :func:`common.make_bench_file` (made if missing). The local sparse copy is
:func:`copy_row`, a row of bench_issue14.py too. Prints the Markdown section
and, with ``--write``, puts it in bench/RESULTS.md (replacing an earlier one).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from common import IBDTOOL as _IBDTOOL
from common import REPO, append_results, make_bench_file, warm
from sidebyside import Contender, Goal, Row, run_row, table

sys.path.insert(0, str(REPO))
IBDTOOL = " ".join(_IBDTOOL)


def relay(host: str, port: int, out: str) -> None:
    """ProxyCommand: stdin/stdout <-> host:port, then write the byte counts to ``out``."""
    sock = socket.create_connection((host, port))
    counts = {"up": 0, "down": 0}

    def pump(read: object, write: object, key: str) -> None:
        while True:
            data = read()  # type: ignore[operator]
            if not data:
                break
            counts[key] += len(data)
            write(data)  # type: ignore[operator]

    stdin = getattr(sys.stdin.buffer, "raw", sys.stdin.buffer)
    stdout = getattr(sys.stdout.buffer, "raw", sys.stdout.buffer)

    def up() -> None:
        pump(lambda: stdin.read(1 << 16), sock.sendall, "up")
        sock.shutdown(socket.SHUT_WR)

    def done(*_: object) -> None:  # ssh ends its ProxyCommand with SIGHUP
        Path(out).write_text(json.dumps(counts))
        os._exit(0)

    for sig in (signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, done)
    t = threading.Thread(target=up, daemon=True)
    t.start()
    pump(lambda: sock.recv(1 << 16), stdout.write, "down")
    t.join(timeout=5)
    done()


def allocated(path: Path) -> int:
    return os.stat(path).st_blocks * 512


def mib(n: float) -> str:
    return f"{n / (1 << 20):,.1f} MiB"


def timed(cmd: list[str] | str, **kw: object) -> float:
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, **kw)  # type: ignore[call-overload]
    return time.monotonic() - t0


def same(a: Path, b: Path) -> bool:
    return subprocess.run(["cmp", "-s", str(a), str(b)]).returncode == 0


def copy_row(src: Path, work: Path, more: bool = False) -> tuple[Row, dict[str, int]]:
    """``ibdtool copy`` (default verification, goal ≤ 1.3×; ``--verify none``, ≤ 1.0×) of the
    sparse ``src`` into ``work`` beside ``cp --sparse=always SRC DST && sync DST``; ``more``
    adds plain ``cp --sparse=always`` and ``--verify data``. Each destination is removed before
    its run (untimed); the first run of each is compared with the source. Also returned: the
    bytes each leaves allocated, filled in as the row runs."""
    dst = work / "local.ibd"
    alloc: dict[str, int] = {}

    def fresh() -> None:
        dst.unlink(missing_ok=True)

    def checked(label: str) -> Callable[[int], None]:
        def after(i: int) -> None:
            alloc[label] = allocated(dst)
            if i == 0 and not same(src, dst):
                raise SystemExit(f"{label}: the copy differs from the source")

        return after

    sync = "cp --sparse=always {src} {dst} && sync {dst}"
    ibd = f"{IBDTOOL} copy -q"
    cases: list[tuple[str, str, Goal | None, bool]] = [
        ("`cp --sparse=always && sync FILE`", sync, None, True),
        ("`cp --sparse=always`", "cp --sparse=always {src} {dst}", None, more),
        ("`ibdtool copy`", f"{ibd} {{src}} {{dst}}", Goal("at_most", 1.3), True),
        ("`ibdtool copy --verify data`", f"{ibd} --verify data {{src}} {{dst}}", None, more),
        (
            "`ibdtool copy --verify none`",
            f"{ibd} --verify none {{src}} {{dst}}",
            Goal("at_most", 1.0),
            True,
        ),
    ]
    contenders = [
        Contender(
            label, cmd.format(src=src, dst=dst), goal=goal, before=fresh, after=checked(label)
        )
        for label, cmd, goal, wanted in cases
        if wanted
    ]
    return Row(f"copy {src.name} (sparse)", contenders), alloc


def bench_local(src: Path, work: Path, runs: int) -> list[str]:
    warm(src)
    row, alloc = copy_row(src, work, more=True)
    run_row(row, runs)
    rows = [*table([row]), "", *row.verdicts, ""]
    rows += [f"- allocated after {label}: {mib(n)}" for label, n in alloc.items()]
    dense = work / "dense.ibd"
    subprocess.run(f"cat {src} > {dense}", shell=True, check=True)
    rows += ["", "Densified source (written with `cat`, every byte allocated):", ""]
    rows += ["| command | s | allocated at the destination |", "|---|---:|---:|"]
    for name, cmd in [
        ("cp --sparse=always && sync FILE", "cp --sparse=always {src} {dst} && sync {dst}"),
        ("ibdtool copy (re-punch)", f"{IBDTOOL} copy -q {{src}} {{dst}}"),
        ("ibdtool copy --dig-holes", f"{IBDTOOL} copy -q --dig-holes {{src}} {{dst}}"),
    ]:
        dst = work / "fromdense.ibd"
        dst.unlink(missing_ok=True)
        t = timed(cmd.format(src=dense, dst=dst), shell=True)
        assert same(src, dst), name
        rows.append(f"| `{name}` | {t:.2f} | {mib(allocated(dst))} |")
    dense.unlink()
    (work / "local.ibd").unlink(missing_ok=True)
    (work / "fromdense.ibd").unlink(missing_ok=True)
    return rows


def bench_ssh(src: Path, work: Path) -> list[str]:
    from tests.test_copy_remote import throwaway_sshd

    rows = [
        "| tool | bytes on the wire (client → server) | s | allocated at the destination |",
        "|---|---:|---:|---:|",
    ]
    with throwaway_sshd(work / "sshd") as sshd:
        count = work / "count.json"
        proxy = f"ProxyCommand={sys.executable} {Path(__file__).resolve()} --relay %h %p {count}"
        ssh = f"ssh -F {sshd.ssh_config} -o '{proxy}'"
        remote = work / "remote"
        remote.mkdir(exist_ok=True)
        dst = remote / src.name
        env = dict(os.environ, IBDTOOL_SSH=ssh)
        cases = [
            ("scp", ["scp", "-q", "-F", str(sshd.ssh_config), "-o", proxy, str(src)]),
            ("rsync --sparse", ["rsync", "--sparse", "-e", ssh, str(src)]),
            ("rsync --sparse --compress", ["rsync", "--sparse", "-z", "-e", ssh, str(src)]),
            ("ibdtool copy (remote python3 without zstd)", [*_IBDTOOL, "copy", "-q", str(src)]),
            (
                "ibdtool copy (remote python3 with zstandard)",
                [*_IBDTOOL, "copy", "-q", "--remote-python", sys.executable, str(src)],
            ),
        ]
        for name, argv in cases:
            dst.unlink(missing_ok=True)
            count.unlink(missing_ok=True)
            t = timed([*argv, f"{sshd.alias}:{dst}"], env=env)
            for _ in range(50):
                if count.exists():
                    break
                time.sleep(0.1)
            up = json.loads(count.read_text())["up"]
            assert same(src, dst), name
            rows.append(f"| `{name}` | {mib(up)} | {t:.1f} | {mib(allocated(dst))} |")
        dst.unlink(missing_ok=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--file", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--skip-ssh", action="store_true")
    ap.add_argument("--skip-local", action="store_true")
    ap.add_argument("--write", action="store_true", help="put the section in bench/RESULTS.md")
    ap.add_argument("--relay", nargs=3, metavar=("HOST", "PORT", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.relay:
        relay(args.relay[0], int(args.relay[1]), args.relay[2])
        return
    src: Path = args.file or make_bench_file("big-fcrc32-zlib.ibd")
    if not src.is_file():
        sys.exit(f"bench_copy: {src} is missing")
    work = Path(tempfile.mkdtemp(prefix="bench-copy-", dir=src.parent))
    try:
        sparse = work / src.name
        subprocess.run(["cp", "--sparse=always", str(src), str(sparse)], check=True)
        os.sync()
        fs = subprocess.run(
            ["stat", "-f", "-c", "%T", str(src.parent)], capture_output=True, text=True
        ).stdout.strip()
        body = [
            f"File: `{src.name}`, {mib(sparse.stat().st_size)} logical, "
            f"{mib(allocated(sparse))} allocated (a `cp --sparse=always` copy), on {fs}; "
            "page cache warm. Command: `.venv/bin/python bench/bench_copy.py --write`.",
        ]
        if not args.skip_local:
            body += ["", "Local copy, interleaved runs:", ""]
            body += bench_local(sparse, work, args.runs)
            print("\n".join(body), flush=True)
        if not args.skip_ssh:
            ssh = ["", "Over ssh to 127.0.0.1 (a throwaway sshd), bytes counted between ssh "
                   "and sshd:", "", *bench_ssh(sparse, work)]  # fmt: skip
            print("\n".join(ssh), flush=True)
            body += ssh
        if args.write:
            append_results("Copy: ibdtool copy vs cp --sparse=always, scp, rsync", "\n".join(body))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
