"""Issue 14: every row of the issue's table beside its anchor, one script, one RESULTS.md section.

Run by hand (a quiet machine: the verdicts compare wall times only when the load average is
under 1.5 at a row's start):

    PYTHONPATH=$PWD .venv/bin/python bench/bench_issue14.py [--rows checksum,copy] [--repeat N]
        [--pages N] [--settle S] [--no-write]

Files: three of 89,088 16K pages (1.46 GB), made once in bench/work by
:func:`common.make_bench_file` from the samples' MariaDB 10.11 pages, renumbered with valid
checksums and punched as the server punches: plain full_crc32, PAGE_COMPRESSED zlib full_crc32,
PAGE_COMPRESSED zlib classic (crc32). ``--pages N`` makes and uses smaller ones (in
bench/work/pages-N) for a quick try. Copies go to a temporary directory beside them, removed at
the end.

Rows (``--rows`` keeps those whose key starts with one of the comma-separated words), each run
``--repeat`` times, ibdtool and its anchor interleaved (:mod:`sidebyside`):

===================  ==============================================  ===========================
key                  ibdtool                                         anchor, goal
===================  ==============================================  ===========================
checksum-plain       ``checksum``                                    innochecksum, ≤ 1.0×
checksum-fcrc32      ``checksum``                                    innochecksum, ≤ 1.0×
checksum-classic     ``checksum``                                    bare zlib inflate of every
                                                                     page × cores, ≥ 85%
inspect-plain        ``inspect --json``                              dd, ≤ 1.5×
inspect-fcrc32       ``inspect --json``, ``pages --json``            dd, ≤ 3×
inspect-classic      ``inspect --json``, ``pages --json``            dd, ≤ 3×
tui                  ``tui`` on the full_crc32 file: scan done       < 3 s for 1 GB (scaled)
simulate-zlib/lz4/   ``simulate --full -a mariadb:zlib`` (…          the bare codec compressing
zstd                 ``mariadb:lz4``, ``zstd:3``) on the plain file  every page × cores, ≥ 85%
copy                 ``copy`` (default; ``--verify none``) of the    ``cp --sparse=always &&
                     full_crc32 compressed file                      sync``, ≤ 1.3× / ≤ 1.0×
repunch              ``copy`` of the densified full_crc32 file;      the same cp, ≤ 1.3×;
                     ``copy --in-place --repunch`` of it             ``fallocate -d && sync``,
                                                                     ≤ 1.0×
report               ``report`` over the three files                 a loop of innochecksum, ≤ 3×
startup              ``inspect tiny.ibd --json``                     ≤ 60 ms (``python -c
                                                                     pass``, innochecksum beside)
===================  ==============================================  ===========================

The rows come from the other benches' importable row functions (``bench_copy.copy_row``,
``bench_repunch.repunch_rows``, ``bench_simulate.simulate_row``, ``bench_tui.tui_row``,
``bench_startup.startup_row``); the reader rows (checksum, inspect, pages, report) live here.
A row's progress and verdicts go to stderr as it runs; ``--no-write`` leaves RESULTS.md as it
is. Whole run at the defaults on the 2-core machine, idle: about 10–12 minutes (estimated from
``--pages 20000 --repeat 1`` runs). Before each row the script waits up to ``--settle``
seconds (default 30) for the load average — mostly the previous row's — to fall under 1.5, as
long as it keeps falling, and not at all when the rest of the machine kept half a core busy
during the previous row.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_copy import copy_row
from bench_repunch import repunch_rows
from bench_simulate import simulate_row
from bench_startup import startup_row
from bench_tui import tui_row
from common import (
    BENCH_PAGES,
    IBDTOOL,
    append_results,
    bench_dir,
    machine,
    make_bench_file,
    warm,
)
from sidebyside import IDLE_LOAD, Contender, Goal, Row, run_row, table

PLAIN, FCRC32, CLASSIC = "big-plain.ibd", "big-fcrc32-zlib.ibd", "big-classic-zlib.ibd"
BARE = Path(__file__).resolve().parent / "bare.py"
TITLE = "Issue 14: every row beside its anchor"


def _ibd(*args: str | Path) -> list[str]:
    return [*IBDTOOL, *map(str, args)]


def _dd(path: Path) -> Contender:
    return Contender("dd", ["dd", f"if={path}", "of=/dev/null", "bs=4M", "status=none"])


def checksum_row(path: Path, innochecksum: str, kind: str) -> Row:
    """``checksum`` ≤ 1.0× innochecksum (plain and full_crc32 compressed files)."""
    return Row(
        f"checksum, {kind}",
        [
            Contender("innochecksum", [innochecksum, str(path)]),
            Contender(
                "`ibdtool checksum`", _ibd("checksum", path), splits=True, goal=Goal("at_most", 1.0)
            ),
        ],
    )


def checksum_classic_row(path: Path, innochecksum: str) -> Row:
    """Classic page_compressed: each page's checksum is inside its zlib image, so the floor is
    inflating every page, split over the cores; innochecksum beside it (it does not inflate)."""
    return Row(
        "checksum, classic page_compressed",
        [
            Contender(
                "bare zlib inflate × cores",
                [sys.executable, str(BARE), "inflate-classic", str(path)],
                splits=True,
            ),
            Contender(
                "`ibdtool checksum`", _ibd("checksum", path), splits=True, goal=Goal("share", 0.85)
            ),
            Contender("innochecksum (does not inflate)", [innochecksum, str(path)]),
        ],
    )


def inspect_row(path: Path, kind: str, limit: float, pages: bool) -> Row:
    """``inspect --json`` (and ``pages --json``) beside dd reading the file."""
    row = [
        _dd(path),
        Contender(
            "`ibdtool inspect --json`",
            _ibd("inspect", "--json", path),
            splits=True,
            goal=Goal("at_most", limit),
        ),
    ]
    if pages:
        row.append(
            Contender(
                "`ibdtool pages --json`",
                _ibd("pages", "--json", path),
                splits=True,
                goal=Goal("at_most", limit),
            )
        )
    return Row(f"inspect{' / pages' if pages else ''} --json, {kind}", row)


def report_row(paths: list[Path], innochecksum: str) -> Row:
    """``report`` over the three files beside a shell loop of innochecksum, ≤ 3×."""
    loop = ["sh", "-c", 'for f; do "$0" "$f"; done', innochecksum, *map(str, paths)]
    return Row(
        "report over the three files",
        [
            Contender("a loop of innochecksum", loop),
            Contender(
                "`ibdtool report --format json`",
                _ibd("report", "--format", "json", *paths),
                splits=True,
                goal=Goal("at_most", 3.0),
            ),
        ],
    )


def rows(
    files: dict[str, Path], scratch: Path, innochecksum: str
) -> list[tuple[str, Callable[[], list[Row]]]]:
    """(key, a function making the row) in the issue's order; made only when selected, as
    some make files (the densified copy)."""
    p, f, c = files[PLAIN], files[FCRC32], files[CLASSIC]
    out: list[tuple[str, Callable[[], list[Row]]]] = [
        ("checksum-plain", lambda: [checksum_row(p, innochecksum, "plain")]),
        ("checksum-fcrc32", lambda: [checksum_row(f, innochecksum, "full_crc32 compressed")]),
        ("checksum-classic", lambda: [checksum_classic_row(c, innochecksum)]),
        ("inspect-plain", lambda: [inspect_row(p, "plain", 1.5, pages=False)]),
        ("inspect-fcrc32", lambda: [inspect_row(f, "full_crc32 compressed", 3.0, pages=True)]),
        ("inspect-classic", lambda: [inspect_row(c, "classic page_compressed", 3.0, pages=True)]),
        ("tui", lambda: [tui_row(f)]),
    ]
    for key, algo in (("zlib", "mariadb:zlib"), ("lz4", "mariadb:lz4"), ("zstd", "zstd:3")):
        out.append((f"simulate-{key}", lambda algo=algo: [simulate_row(p, algo)]))
    out += [
        ("copy", lambda: [copy_row(f, scratch)[0]]),
        ("repunch", lambda: repunch_rows(f, scratch, verify_none=False)),
        ("report", lambda: [report_row([p, f, c], innochecksum)]),
        ("startup", lambda: [startup_row()]),
    ]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", help="comma-separated words: the rows whose key starts with one")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each command (default 3)")
    ap.add_argument("--pages", type=int, default=BENCH_PAGES, help="pages of each file")
    ap.add_argument("--settle", type=float, default=30, help="max s to wait for load < 1.5")
    ap.add_argument("--no-write", action="store_true", help="print only, leave RESULTS.md")
    args = ap.parse_args()
    innochecksum = shutil.which("innochecksum")
    if innochecksum is None:
        raise SystemExit("innochecksum not found (Debian: mariadb-server)")
    files = {name: make_bench_file(name, args.pages) for name in (PLAIN, FCRC32, CLASSIC)}
    words = [w for w in (args.rows or "").split(",") if w]
    scratch = Path(tempfile.mkdtemp(prefix="issue14-", dir=bench_dir(args.pages)))
    done: list[Row] = []
    t0 = time.monotonic()
    try:
        for key, make in rows(files, scratch, innochecksum):
            if words and not any(key.startswith(w) for w in words):
                continue
            t_warm = time.monotonic()
            for path in files.values():  # every contender starts from the page cache
                warm(path)
            print(f"{key}: warm {time.monotonic() - t_warm:.1f} s", file=sys.stderr)
            for row in make():
                print(f"{row.name} …", file=sys.stderr, flush=True)
                started = time.monotonic()
                # others kept half a core busy during the last row: waiting will not make it idle
                busy = bool(done) and done[-1].others >= 0.5
                done.append(run_row(row, args.repeat, 0 if busy else args.settle))
                took = time.monotonic() - started
                print(*row.verdicts, f"  ({took:.0f} s)", sep="\n", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if not done:
        raise SystemExit(f"no row matches {args.rows!r}")
    size = files[PLAIN].stat().st_size
    cores = os.cpu_count() or 1
    command = "PYTHONPATH=$PWD .venv/bin/python bench/bench_issue14.py" + "".join(
        f" {flag} {v}"
        for flag, v, default in (
            ("--rows", args.rows, None),
            ("--repeat", args.repeat, 3),
            ("--pages", args.pages, BENCH_PAGES),
        )
        if v != default
    )
    body = "\n".join(
        [
            f"Files: {args.pages:,} pages of 16K ({size / 1e9:.2f} GB) each "
            "(`common.make_bench_file`), from the page cache; ibdtool and its anchor "
            f"interleaved, {args.repeat} runs each (start-up 20). CPU = user + system of the "
            "command and its children. load = the 1-minute load average at the row's start; "
            "others' cores = the CPU the rest of the machine used during the row, in cores "
            "(the kernel's writeback of our own copies counts there). "
            f"Whole run {time.monotonic() - t0:.0f} s.",
            "",
            *table(done),
            "",
            f"Verdicts: best wall times when the load average at the row's start is under "
            f"{IDLE_LOAD}; otherwise a CPU-based estimate (median CPU seconds, over the "
            f"{cores} cores for the commands that split a file over every core; for the copy "
            "and re-punch rows it leaves out both sides' disk waits).",
            "",
            *(v for r in done for v in r.verdicts),
            "",
            f"Command: `{command}`",
        ]
    )
    print(f"Machine: {machine()}\n\n{body}")
    if not args.no_write:
        append_results(TITLE, body)


if __name__ == "__main__":
    main()
