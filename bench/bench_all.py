"""Issue 24: every row of the issue beside its anchor, one script, one table in RESULTS.md.

Run by hand:

    PYTHONPATH=$PWD /work/main/.venv/bin/python bench/bench_all.py [--pages N]
        [--extent-pages N] [--rows WORD,...] [--repeat N] [--no-write] [--keep]

Two sets of rows, every ibdtool command interleaved with its anchor in the same run
(:mod:`sidebyside`: CPU = user + system of the command and its children; best of
``--repeat`` runs; the load average at each row's start):

* **The anchors** (item 4), on the three issue-14 files of ``--pages`` 16K pages (default
  89,088, 1.46 GB each, :func:`common.make_bench_file` from MariaDB 10.11's own pages):
  ``checksum`` against innochecksum (≤ 1.0×); ``inspect --json`` against ``innochecksum -S``
  (≤ 1.2×); the inflate-bound paths (``inspect``/``checksum`` of the classic file,
  ``inspect`` of the full_crc32 compressed one) against a bare zlib inflate of the same
  bytes on every core (``bench/bare.py``, ≤ 1.2×); ``report`` over the three files against a
  loop of innochecksum (≤ 3×); the re-punch copy against ``cp --sparse=always && sync``
  (≤ 1.3×) and ``copy --in-place --repunch`` against ``fallocate -d && sync`` (≤ 1.0×).
* **Millions of extents** (item 1), on a full_crc32 zlib file of ``--extent-pages`` pages
  (default 1,000,000: one data range and one FIEMAP extent a page, ~7.7 GB allocated) and the
  same pages written dense (16 KiB a page: 16 GiB for a million; ``--dense-pages`` makes the
  dense file shorter, and then both times are per page): ``inspect --json``, ``checksum``,
  ``pages --json``, ``report``, ``simulate``, the TUI's scan (its engine calls: the page map
  model fed by ``inspect_tablespace``), ``copy`` local (punched file; the dense file with
  ``--no-repunch``), the re-punch copy (dense → punched; anchor: the same copy
  ``--no-repunch``), ``copy --in-place --repunch`` (anchor: ``fallocate -d``), and ``copy``
  over ssh (``tests/fuzz/fake_ssh.py`` as the ssh command: the real agent, no sshd).
  Goal: punched ≤ 1.4× dense. Each row also gives the peak RSS of one run of each side
  (``RUSAGE_CHILDREN``) and the bytes an extent costs: (punched − dense) / extents.

The files go to bench/work (and bench/work/pages-N); copies to a scratch directory beside
them, removed at the end; the extents files are deleted at the end unless ``--keep``. Start-up
(item 4's last part), records (item 3) and the 100,000-file report (item 2) have their own
benches (``bench_startup.py``, ``bench_report.py``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from bench_issue14 import CLASSIC, FCRC32, PLAIN, checksum_row, report_row
from bench_repunch import _cat, repunch_rows
from common import BENCH_PAGES, IBDTOOL, REPO, append_results, bench_dir, make_bench_file, warm
from sidebyside import Contender, Goal, Row, run_row, table

BARE = Path(__file__).resolve().parent / "bare.py"
FAKE_SSH = REPO / "tests" / "fuzz" / "fake_ssh.py"
TITLE = "Issue 24: every row beside its anchor (bench_all)"

#: the TUI's scan of a tablespace (tui/screens/tablespace.py, ``scan``), without a terminal
TUI_SCAN = """
import sys
from ibdtool.tablespace import Tablespace
from ibdtool.tui.pagemodel import model_for, scan_into
with Tablespace(sys.argv[1]) as ts:
    scan_into(ts, model_for(ts))
"""


def _ibd(*args: str | Path) -> list[str]:
    return [*IBDTOOL, *map(str, args)]


def _bare(mode: str, path: Path) -> Contender:
    return Contender(
        f"bare zlib inflate × cores (`bare.py {mode}`)",
        [sys.executable, str(BARE), mode, str(path)],
        splits=True,
    )


# --- item 4: the anchors ------------------------------------------------------------------------


def anchor_rows(
    files: dict[str, Path], scratch: Path, innochecksum: str
) -> list[tuple[str, Callable[[], list[Row]]]]:
    p, f, c = files[PLAIN], files[FCRC32], files[CLASSIC]

    def inspect_vs_s(path: Path, kind: str) -> Row:
        return Row(
            f"inspect --json, {kind}",
            [
                Contender("`innochecksum -S`", [innochecksum, "-S", str(path)]),
                Contender(
                    "`ibdtool inspect --json`",
                    _ibd("inspect", "--json", path),
                    splits=True,
                    goal=Goal("at_most", 1.2),
                ),
            ],
        )

    def inflate(path: Path, mode: str, kind: str, checksum: bool) -> Row:
        row = [
            _bare(mode, path),
            Contender(
                "`ibdtool inspect --json`",
                _ibd("inspect", "--json", path),
                splits=True,
                goal=Goal("at_most", 1.2),
            ),
        ]
        if checksum:
            row.append(
                Contender(
                    "`ibdtool checksum`",
                    _ibd("checksum", path),
                    splits=True,
                    goal=Goal("at_most", 1.2),
                )
            )
        return Row(f"inflate-bound, {kind}", row)

    return [
        ("checksum-plain", lambda: [checksum_row(p, innochecksum, "plain")]),
        ("checksum-fcrc32", lambda: [checksum_row(f, innochecksum, "full_crc32 compressed")]),
        ("inspect-plain", lambda: [inspect_vs_s(p, "plain")]),
        ("inspect-fcrc32", lambda: [inspect_vs_s(f, "full_crc32 compressed")]),
        (
            "inflate-fcrc32",
            lambda: [inflate(f, "inflate-fcrc32", "full_crc32 headers", checksum=False)],
        ),
        (
            "inflate-classic",
            lambda: [inflate(c, "inflate-classic", "classic whole pages", checksum=True)],
        ),
        ("report", lambda: [report_row([p, f, c], innochecksum)]),
        ("repunch", lambda: repunch_rows(f, scratch, verify_none=False)),
    ]


# --- item 1: millions of extents ----------------------------------------------------------------


def peak_rss_kib(
    cmd: list[str] | str,
    before: Callable[[], None] | None = None,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
) -> int:
    """Peak RSS (KiB) of one run of ``cmd`` and its children (in ``cwd`` with ``env``: a
    ``--before`` tree's command)."""
    if before is not None:
        before()
    argv = ["sh", "-c", cmd] if isinstance(cmd, str) else cmd
    probe = (
        "import resource,subprocess,sys;"
        "subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL);"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, *argv],
        capture_output=True, text=True, check=True, env=env, cwd=cwd,
    )  # fmt: skip
    return int(out.stdout.split()[-1])


def extent_rows(
    punched: Path, dense: Path, scratch: Path, per_page: float
) -> list[tuple[str, Callable[[], Row]]]:
    """(key, row maker) of item 1: each row's anchor is the dense file, its contender the
    punched one; ``per_page`` (dense pages / punched pages) scales the goal when the dense file
    is shorter."""
    out = scratch / "out.ibd"
    remote = scratch / "remote.ibd"
    ssh = f"{sys.executable} {FAKE_SSH}"

    def gone(*paths: Path) -> Callable[[], None]:
        return lambda: [p.unlink(missing_ok=True) for p in paths] and None

    def densified() -> None:
        out.unlink(missing_ok=True)
        _cat(dense, out)

    def pair(
        name: str,
        dense_cmd: list[str] | str,
        punched_cmd: list[str] | str,
        before: Callable[[], None] | None = None,
        splits: bool = True,
    ) -> Row:
        goal = Goal("at_most", 1.4 / per_page)
        return Row(
            name,
            [
                Contender("dense", dense_cmd, splits=splits, before=before),
                Contender("punched", punched_cmd, splits=splits, goal=goal, before=before),
            ],
        )

    def same(*args: str) -> Callable[[], Row]:
        return lambda: pair(f"`{' '.join(args)}`", _ibd(*args, dense), _ibd(*args, punched))

    tui = [sys.executable, "-c", TUI_SCAN]
    return [
        ("x-inspect", same("inspect", "--json")),
        ("x-checksum", same("checksum")),
        ("x-pages", same("pages", "--json")),
        ("x-report", same("report")),
        ("x-simulate", same("simulate")),
        ("x-tui", lambda: pair("TUI scan (engine)", [*tui, str(dense)], [*tui, str(punched)])),
        (
            "x-copy",
            lambda: pair(
                "`copy` local (dense: `--no-repunch`)",
                _ibd("copy", "-q", "--no-repunch", dense, out),
                _ibd("copy", "-q", punched, out),
                before=gone(out),
                splits=False,
            ),
        ),
        (
            "x-repunch",
            lambda: pair(
                "re-punch copy of the dense file (anchor: `--no-repunch`)",
                _ibd("copy", "-q", "--no-repunch", dense, out),
                _ibd("copy", "-q", dense, out),
                before=gone(out),
                splits=False,
            ),
        ),
        (
            "x-inplace",
            lambda: Row(
                "`copy --in-place --repunch` of the dense file",
                [
                    Contender("`fallocate -d`", ["fallocate", "-d", str(out)], before=densified),
                    Contender(
                        "`ibdtool copy --in-place --repunch`",
                        _ibd("copy", "-q", "--in-place", "--repunch", "--yes", out),
                        before=densified,
                        goal=Goal("at_most", 1.0),
                    ),
                ],
            ),
        ),
        (
            "x-ssh",
            lambda: pair(
                "`copy` over ssh (fake_ssh: the real agent)",
                _ibd("copy", "-q", "-e", ssh, "--no-repunch", dense, f"localhost:{remote}"),
                _ibd("copy", "-q", "-e", ssh, punched, f"localhost:{remote}"),
                before=gone(remote),
                splits=False,
            ),
        ),
    ]


def with_before(row: Row, tree: Path, label: str) -> Row:
    """``row`` with, before each of its ibdtool commands but the anchor, the same command run
    by ``tree`` (its packages first on the path, no goal of its own): before and after in
    the same run, interleaved with the anchor (an extent row's anchor, the dense file, is run
    by this tree alone)."""
    out: list[Contender] = row.contenders[:1]
    ours = (tuple(IBDTOOL), (sys.executable, "-c", TUI_SCAN))
    env = {**os.environ, "PYTHONPATH": str(tree)}
    for c in row.contenders[1:]:
        cmd = c.cmd
        if isinstance(cmd, list) and any(tuple(cmd[: len(o)]) == o for o in ours):
            # run in the tree: ``-m`` and ``-c`` put the working directory first on the path,
            # before PYTHONPATH (the files are named by absolute paths)
            was = replace(c, label=f"{c.label} ({label})", goal=None, env=env, cwd=str(tree))
            out.append(replace(was, walls=[], cpus=[]))
        out.append(c)
    row.contenders = out
    return row


def memory_line(row: Row, extents: int) -> str:
    """Peak RSS of one more run of each side (and of the ``--before`` tree's, when it ran),
    and the bytes an extent costs."""

    def rss(c: Contender) -> int:
        return peak_rss_kib(c.cmd, c.before, c.env, c.cwd)  # type: ignore[arg-type]

    a, b = row.contenders[0], row.contenders[-1]
    ra, rb = rss(a), rss(b)
    was = "– | –"
    if len(row.contenders) > 2:
        rw = rss(row.contenders[-2])
        was = f"{rw / 1024:.0f} MiB | {(rw - ra) * 1024 / extents:.1f}"
    per = (rb - ra) * 1024 / extents
    return f"| {row.name} | {ra / 1024:.0f} MiB | {was} | {rb / 1024:.0f} MiB | {per:.1f} |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=BENCH_PAGES, help="pages of the anchor files")
    ap.add_argument("--extent-pages", type=int, default=1_000_000)
    ap.add_argument("--dense-pages", type=int, help="pages of the dense file (default: the same)")
    ap.add_argument("--rows", help="comma-separated words: the rows whose key starts with one")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", action="store_true", help="keep the extents files")
    ap.add_argument("--no-write", action="store_true", help="print only, leave RESULTS.md")
    ap.add_argument(
        "--before", help="a commit whose ibdtool runs beside this tree's (a git worktree of it)"
    )
    args = ap.parse_args()
    before: tuple[Path, str] | None = None
    if args.before:
        from bench_issue24 import before_tree

        tree = before_tree(args.before)
        before = (tree, f"before: {tree.name.rsplit('-', 1)[-1]}")
    innochecksum = shutil.which("innochecksum")
    if innochecksum is None:
        raise SystemExit("innochecksum not found (Debian: mariadb-server)")
    words = [w for w in (args.rows or "").split(",") if w]

    def wanted(key: str) -> bool:
        return not words or any(key.startswith(w) for w in words)

    t0 = time.monotonic()
    done: list[Row] = []
    memory: list[str] = []
    head: list[str] = []
    nowhere = {PLAIN: Path(), FCRC32: Path(), CLASSIC: Path()}
    anchors = [k for k, _ in anchor_rows(nowhere, Path(), "")]
    if any(map(wanted, anchors)):
        files = {n: make_bench_file(n, args.pages) for n in (PLAIN, FCRC32, CLASSIC)}
        scratch = Path(tempfile.mkdtemp(prefix="all-", dir=bench_dir(args.pages)))
        try:
            for key, make in anchor_rows(files, scratch, innochecksum):
                if not wanted(key):
                    continue
                for path in files.values():
                    warm(path)
                for row in make():
                    if before is not None:
                        with_before(row, *before)
                    print(f"{row.name} …", file=sys.stderr, flush=True)
                    done.append(run_row(row, args.repeat))
                    print(*row.verdicts, sep="\n", file=sys.stderr, flush=True)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        head.append(
            f"Anchor rows: the three issue-14 files, {args.pages:,} pages of 16K each "
            "(plain full_crc32, full_crc32 zlib, classic crc32 zlib), from the page cache."
        )
    xkeys = [k for k, _ in extent_rows(Path(), Path(), Path(), 1.0)]
    if any(map(wanted, xkeys)):
        sys.path.insert(0, str(REPO))
        from ibdtool.fs import read_allocation

        pages = args.extent_pages
        dense_pages = args.dense_pages or pages
        work = bench_dir(pages)
        punched = make_bench_file(FCRC32, pages, work)
        dense = work / "dense.ibd"
        if not dense.exists():
            src = make_bench_file(FCRC32, dense_pages, bench_dir(dense_pages))
            _cat(src, dense)  # written whole: every zero tail allocated
            if src != punched:
                src.unlink()
        alloc = read_allocation(punched)
        extents = alloc.extents or len(alloc.data_ranges)
        scratch = Path(tempfile.mkdtemp(prefix="extents-", dir=work))
        per_page = dense_pages / pages
        try:
            for key, make in extent_rows(punched, dense, scratch, per_page):
                if not wanted(key):
                    continue
                row = make()
                if before is not None:
                    with_before(row, *before)
                warm(punched)
                warm(dense)
                print(f"{row.name} …", file=sys.stderr, flush=True)
                done.append(run_row(row, args.repeat))
                print(*row.verdicts, sep="\n", file=sys.stderr, flush=True)
                memory.append(memory_line(row, extents))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
            if not args.keep:
                punched.unlink(missing_ok=True)
                dense.unlink(missing_ok=True)
        head.append(
            f"Extent rows: {pages:,} pages full_crc32 zlib punched as the server punches "
            f"({alloc.allocated / 1e9:.2f} GB allocated, {extents:,} FIEMAP extents, "
            f"{len(alloc.data_ranges):,} data ranges) against {dense_pages:,} of the same pages "
            "written dense"
            + (
                f" (shorter: the goal is scaled by {per_page:.2f}, i.e. per page)"
                if dense_pages != pages
                else ""
            )
            + ". B/extent = (peak RSS punched − peak RSS dense) / extents, one run each."
        )
    if not done:
        raise SystemExit(f"no row matches {args.rows!r}")
    loads = [r.load for r in done]
    command = "PYTHONPATH=$PWD /work/main/.venv/bin/python bench/bench_all.py " + " ".join(
        sys.argv[1:]
    )
    body = "\n".join(
        [
            *head,
            f"Each command {args.repeat} times, interleaved with its anchor; load average at "
            f"the rows' starts {min(loads):.1f}–{max(loads):.1f}: the verdicts compare CPU "
            "seconds (over the cores for a command that splits a file) when the load is "
            f"1.5 or more. Whole run {time.monotonic() - t0:.0f} s.",
            "",
            *table(done),
            "",
            *(v for r in done for v in r.verdicts),
            *(
                [
                    "",
                    "| extent row | peak RSS dense | punched, before | B/extent, before "
                    "| peak RSS punched | B/extent |",
                    "|---|---:|---:|---:|---:|---:|",
                    *memory,
                ]
                if memory
                else []
            ),
            "",
            f"Command: `{command.strip()}`",
        ]
    )
    print(body)
    if not args.no_write:
        append_results(TITLE, body)


if __name__ == "__main__":
    main()
