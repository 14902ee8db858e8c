"""Issue 14: re-punching a densified compressed tablespace, beside ``cp`` and ``fallocate -d``.

Run by hand:  PYTHONPATH=$PWD .venv/bin/python bench/bench_repunch.py [--runs N] [--pages N]

The issue-14 files (:func:`common.make_bench_file`: 89,088 16K pages of MariaDB 10.11's own
PAGE_COMPRESSED zlib pages, full_crc32 and classic, punched as the server punches) are
densified with ``cat`` (every byte allocated, as scp leaves them), then, interleaved, each
run from the page cache:

- ``copy``: ``cp --sparse=always SRC DST && sync DST`` against ``ibdtool copy`` (re-punch is
  the default for ``.ibd``; default verification, and ``--verify none``);
- in place: ``fallocate -d FILE && sync FILE`` against ``ibdtool copy --in-place --repunch
  --yes`` (default verification, and ``--verify none``), each on a fresh dense copy made
  before the clock starts.

Wall and CPU seconds (the command and its children, from ``wait4``), min and median, and the
load average before each row go to RESULTS.md (:mod:`sidebyside`). :func:`repunch_rows` is
also a row of bench_issue14.py.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from common import BENCH_PAGES, IBDTOOL, WORK, append_results, make_bench_file, warm
from sidebyside import Contender, Goal, Row, run_row, table

FILES = ("big-fcrc32-zlib.ibd", "big-classic-zlib.ibd")


def _cat(src: Path, dst: Path) -> None:
    """``src`` written densely to ``dst`` and flushed (that file only: a global sync would wait
    for every other job's writes on a shared machine)."""
    dst.unlink(missing_ok=True)
    with dst.open("wb") as out:
        subprocess.run(["cat", str(src)], stdout=out, check=True)
        os.fsync(out.fileno())


def repunch_rows(src: Path, work: Path, verify_none: bool = True) -> list[Row]:
    """The copy row and the in-place row of ``src`` densified into ``work`` (``cat``, flushed),
    each beside its anchor; ``verify_none`` adds ``--verify none`` to both. The first run of
    each contender is compared with the dense file."""
    dense = work / f"dense-{src.name}"
    _cat(src, dense)
    warm(dense)
    dst = work / "out.ibd"
    ibd = " ".join(IBDTOOL)

    def fresh() -> None:
        dst.unlink(missing_ok=True)

    def dense_again() -> None:  # a fresh dense file, before the clock starts
        _cat(dense, dst)

    def check(label: str) -> Callable[[int], None]:
        def after(i: int) -> None:
            if i == 0 and subprocess.run(["cmp", "-s", str(dense), str(dst)]).returncode:
                raise SystemExit(f"{label}: the result differs from the source")

        return after

    copy = [
        ("`cp --sparse=always && sync`", f"cp --sparse=always {dense} {dst} && sync {dst}", None),
        ("`ibdtool copy` (re-punch)", f"{ibd} copy -q {dense} {dst}", Goal("at_most", 1.3)),
    ]
    in_place = [
        ("`fallocate -d && sync`", f"fallocate -d {dst} && sync {dst}", None),
        (
            "`ibdtool copy --in-place --repunch`",
            f"{ibd} copy -q --in-place --repunch --yes {dst}",
            Goal("at_most", 1.0),
        ),
    ]
    if verify_none:
        copy.append(
            ("`ibdtool copy --verify none`", f"{ibd} copy -q --verify none {dense} {dst}", None)
        )
        in_place.append(
            (
                "`ibdtool copy --in-place --repunch --verify none`",
                f"{ibd} copy -q --in-place --repunch --yes --verify none {dst}",
                None,
            )
        )
    return [
        Row(
            f"copy of a densified {src.name} (re-punch)",
            [Contender(lb, cmd, goal=g, before=fresh, after=check(lb)) for lb, cmd, g in copy],
        ),
        Row(
            f"`--in-place --repunch` of a densified {src.name}",
            [
                Contender(lb, cmd, goal=g, before=dense_again, after=check(lb))
                for lb, cmd, g in in_place
            ],
        ),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--pages", type=int, default=BENCH_PAGES)
    args = ap.parse_args()
    rows: list[Row] = []
    work = Path(tempfile.mkdtemp(prefix="repunch-", dir=WORK))
    try:
        for name in FILES:
            rows += [
                run_row(r, args.runs) for r in repunch_rows(make_bench_file(name, args.pages), work)
            ]
            shutil.rmtree(work)
            work.mkdir()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    body = "\n".join(
        [
            f"Files: {args.pages:,} pages of 16K each (`common.make_bench_file`), densified with "
            f"`cat`; page cache warm; {args.runs} interleaved runs a row.",
            "",
            *table(rows),
            "",
            *(v for r in rows for v in r.verdicts),
            "",
            "Command: `PYTHONPATH=$PWD .venv/bin/python bench/bench_repunch.py`",
        ]
    )
    append_results("Re-punch: copy and --in-place of densified compressed files", body)
    print(body)


if __name__ == "__main__":
    main()
