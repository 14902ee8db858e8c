"""Issue 24: memory and time per extent on a file of one extent a page, before and after, one run.

Run by hand:

    PYTHONPATH=$PWD /work/main/.venv/bin/python bench/bench_issue24.py [--pages N]
        [--before COMMIT] [--rows inspect,checksum] [--repeat N] [--keep] [--no-write]

The file: ``--pages`` (default 1,000,000) 16K pages of full_crc32 PAGE_COMPRESSED zlib, made by
:func:`common.make_bench_file` from MariaDB 10.11's own pages (renumbered, valid checksums),
written sparse as the server leaves them: one data range and one FIEMAP extent a page (16 GiB
logical, ~7.7 GB allocated for 1M pages: check ``df`` first). It goes to
bench/work/pages-N and is deleted at the end unless ``--keep``.

Each row runs ``ibdtool`` of the tree before (``--before``, default ``main``; checked out once
with ``git worktree add`` under /tmp) and of this tree, interleaved, and reports the best wall
time and the peak RSS (the command and its forked workers: ``RUSAGE_CHILDREN``), then the RSS
above the same tree's start-up (``inspect`` of a 4-page file) divided by the extents: the
bytes an extent costs. The issue's target: a few bytes an extent, flat.

Rows: ``inspect --json``, ``checksum``, ``pages --json``, ``report`` (one file, text).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from common import REPO, append_results, bench_dir, make_bench_file, run_timed

ROWS = {
    "inspect": ["inspect", "--json"],
    "checksum": ["checksum"],
    "pages": ["pages", "--json"],
    "report": ["report"],
}


def before_tree(commit: str) -> Path:
    """A worktree of ``commit`` under /tmp (made once, kept: the next run reuses it)."""
    sha = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", commit],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    tree = Path(f"/tmp/ibdtool-before-{sha}")
    if not tree.exists():
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), sha], check=True
        )
    return tree


def ibdtool(tree: Path, *args: str | Path) -> list[str]:
    """``ibdtool`` of ``tree``: this Python, the tree first on the path."""
    code = (
        f"import sys; sys.path.insert(0, {str(tree)!r}); "
        "from ibdtool.cli.main import main; main(prog_name='ibdtool')"
    )
    return [sys.executable, "-c", code, *map(str, args)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=1_000_000)
    ap.add_argument("--before", default="main", help="the commit measured as before")
    ap.add_argument("--rows", default=",".join(ROWS), help="comma-separated: " + ", ".join(ROWS))
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--keep", action="store_true", help="keep the big file")
    ap.add_argument("--no-write", action="store_true", help="print only, leave RESULTS.md")
    args = ap.parse_args()

    sys.path.insert(0, str(REPO))
    from ibdtool.fs import read_allocation

    work = bench_dir(args.pages)
    path = make_bench_file("big-fcrc32-zlib.ibd", args.pages, work)
    tiny = REPO / "samples" / "mariadb" / "p16k-pc_zlib.ibd"
    alloc = read_allocation(path)
    extents = alloc.extents or len(alloc.data_ranges)
    trees = {"before": before_tree(args.before), "after": REPO}
    base = {k: run_timed(ibdtool(t, "inspect", tiny), 1)[2] for k, t in trees.items()}
    lines = [
        f"File: {args.pages:,} pages full_crc32 zlib (16 GiB logical for 1M), "
        f"{alloc.allocated / 1e9:.2f} GB allocated, {extents:,} FIEMAP extents, "
        f"{len(alloc.data_ranges):,} data ranges. Before: `{args.before}`; after: this tree. "
        f"Start-up RSS (inspect of a 28-page file): before {base['before'] / 1024:.0f} MiB, "
        f"after {base['after'] / 1024:.0f} MiB. Load average at each row's start in brackets.",
        "",
        "| row | before: wall, peak RSS, B/extent | after: wall, peak RSS, B/extent |",
        "|---|---|---|",
    ]
    for key in args.rows.split(","):
        cells = []
        load = os.getloadavg()[0]
        for name, tree in trees.items():
            best, _med, rss = run_timed(ibdtool(tree, *ROWS[key], path), args.repeat)
            per = (rss - base[name]) * 1024 / extents
            cells.append(f"{best:.1f} s, {rss / 1024:.0f} MiB, {per:.0f}")
            print(f"{key} {name}: {cells[-1]}", file=sys.stderr)
        lines.append(f"| `{' '.join(ROWS[key])}` [{load:.1f}] | {cells[0]} | {cells[1]} |")
    body = "\n".join(lines)
    print(body)
    if not args.no_write:
        append_results("Issue 24: one extent a page", body)
    if not args.keep:
        path.unlink()


if __name__ == "__main__":
    main()
