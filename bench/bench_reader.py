"""Issues 2 and 14: the readers (checksum, inspect, pages, report, start-up) beside their anchors.

Run by hand:  .venv/bin/python bench/bench_reader.py [--repeat N] [--pages N]

Makes (once, in bench/work) three files of 89,088 16K pages (1.46 GB) from the samples' real
MariaDB 10.11 pages, renumbered with valid checksums and hole-punched as the server punches
(:func:`common.make_bench_file`): plain full_crc32, PAGE_COMPRESSED zlib full_crc32 and
PAGE_COMPRESSED zlib classic (crc32). Each row runs ibdtool and its anchor side by side —
innochecksum, dd, a bare zlib loop, ``python -c pass`` — and RESULTS.md gets wall and CPU
seconds (min / median), the load average before each row and the machine.

Goals (issue 14): checksum ≤ 1.0× innochecksum; classic page_compressed checksum ≥ 85% of
bare zlib × cores; ``inspect --json`` ≤ 1.5× dd on the plain file and ``inspect``/``pages
--json`` ≤ 3× dd on the compressed ones; ``report`` ≤ 3× an innochecksum loop; start-up of
``inspect tiny.ibd --json`` ≤ 60 ms. The verdicts compare CPU seconds, as the machine is
shared and wall time grows with everyone else's work: the anchors run in one process, so
their CPU is their wall time on an idle machine (dd's, less its memory stalls); a command that
splits a large file over every core (checksum, inspect, pages --json, report) would take about
its CPU over the cores — an estimate that assumes the split scales, as the CPU ratio column
does not.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from common import (
    BENCH_PAGES,
    IBDTOOL,
    REPO,
    append_results,
    make_bench_file,
    measure,
    warm,
)

PLAIN, FCRC32, CLASSIC = "big-plain.ibd", "big-fcrc32-zlib.ibd", "big-classic-zlib.ibd"
TINY = REPO / "samples" / "mariadb" / "p4k-plain.ibd"

#: Every classic page's zlib payload inflated, nothing else: the floor for ``checksum`` there.
BARE_ZLIB = """
import sys, zlib
psize = 16384
with open(sys.argv[1], "rb") as f:
    while chunk := f.read(psize * 256):
        for off in range(0, len(chunk), psize):
            if chunk[off + 24 : off + 26] == b"\\x86\\x32":
                n = int.from_bytes(chunk[off + 38 : off + 40], "big")
                zlib.decompress(chunk[off + 40 : off + 40 + n])
"""


def _row(
    goal: str, name: str, m: dict[str, float], anchor: dict[str, float] | None, cores: int = 1
) -> str:
    ratio = per_core = ""
    if anchor:
        ratio = f"{m['cpu_med'] / anchor['cpu_med']:.2f}"
        per_core = f"{m['cpu_med'] / cores / anchor['cpu_med']:.2f}"
    return (
        f"| {goal} | {name} | {m['wall_min']:.3f} | {m['wall_med']:.3f} | {m['cpu_min']:.3f} | "
        f"{m['cpu_med']:.3f} | {ratio} | {per_core} | {m['load']:.1f} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--pages", type=int, default=BENCH_PAGES)
    args = ap.parse_args()
    innochecksum = shutil.which("innochecksum")
    if innochecksum is None:
        raise SystemExit("innochecksum not found (Debian: mariadb-server)")
    files = {name: make_bench_file(name, args.pages) for name in (PLAIN, FCRC32, CLASSIC)}
    for path in files.values():
        warm(path)
    cores = os.cpu_count() or 1
    r = args.repeat
    ibd = IBDTOOL
    rows: list[str] = []
    verdicts: list[str] = []

    def pair(
        goal: str,
        limit: float,
        mine: list[str],
        anchor_name: str,
        anchor: list[str],
        splits: bool = True,
    ) -> None:
        """``splits``: the command spreads a large file over every core (checksum, inspect,
        pages --json, report); its wall time on an idle machine is then about its CPU over the
        cores."""
        a = measure(anchor, r)
        m = measure(mine, r)
        n = cores if splits else 1
        shown = " ".join(Path(x).name if "/" in x else x for x in mine[len(ibd) :])
        rows.append(_row(goal, anchor_name, a, None))
        rows.append(_row(goal, f"`ibdtool {shown}`", m, a, n))
        ratio = m["cpu_med"] / n / a["cpu_med"]
        how = f"CPU / {n} cores" if n > 1 else "CPU, one process"
        verdicts.append(
            f"- {goal}: {how} = {ratio:.2f}× the anchor's (goal ≤ {limit}×): {_ok(ratio <= limit)}"
        )

    for name in (PLAIN, FCRC32):
        path = str(files[name])
        mine_cmd = [*ibd, "checksum", path]
        pair(f"checksum {name}", 1.0, mine_cmd, "innochecksum", [innochecksum, path])
    classic = str(files[CLASSIC])
    bare = measure([sys.executable, "-c", BARE_ZLIB, classic], r)
    mine = measure([*ibd, "checksum", classic], r)
    rows.append(_row(f"checksum {CLASSIC}", "bare zlib, one core", bare, None))
    rows.append(_row(f"checksum {CLASSIC}", "`ibdtool checksum`", mine, bare, cores))
    share = bare["cpu_med"] / mine["cpu_med"]
    verdicts.append(
        f"- checksum {CLASSIC}: {share:.0%} of bare zlib per core, so {share:.0%} of bare × "
        f"{cores} cores when the split scales (goal ≥ 85%): {_ok(share >= 0.85)}"
    )
    for name, limit in ((PLAIN, 1.5), (FCRC32, 3.0), (CLASSIC, 3.0)):
        path = str(files[name])
        dd = ["dd", f"if={path}", "of=/dev/null", "bs=4M", "status=none"]
        pair(f"inspect {name}", limit, [*ibd, "inspect", "--json", path], "dd", dd)
        if name != PLAIN:
            pages = [*ibd, "pages", "--json", path]
            pair(f"pages {name}", limit, pages, "dd", dd)  # ordered blocks on every core
    paths = [str(p) for p in files.values()]
    loop = ["sh", "-c", 'for f; do "$0" "$f"; done', innochecksum, *paths]  # one by one
    pair("report, three files", 3.0, [*ibd, "report", "--format", "json", *paths], "loop", loop)
    py = measure([sys.executable, "-c", "pass"], max(r, 5))
    tiny = measure([*ibd, "inspect", "--json", str(TINY)], max(r, 5))
    rows.append(_row("start-up", "`python -c pass`", py, None))
    rows.append(_row("start-up", f"`ibdtool inspect --json {TINY.name}`", tiny, py))
    verdicts.append(
        f"- start-up: {tiny['wall_min'] * 1000:.0f} ms wall at best, {tiny['cpu_med'] * 1000:.0f}"
        f" ms CPU (goal ≤ 60 ms): {_ok(tiny['cpu_med'] <= 0.060)}"
    )
    size = files[PLAIN].stat().st_size
    body = "\n".join(
        [
            f"Files: {args.pages:,} pages of 16K ({size / 1e9:.2f} GB) each, made by "
            "`common.make_bench_file` from the samples' MariaDB 10.11 pages, from the page "
            f"cache. {r} runs a row (start-up: {max(r, 5)}); ratio = ibdtool's median CPU over "
            "the anchor's.",
            "",
            "| goal | command | wall min s | wall median s | CPU min s | CPU median s | "
            "CPU ratio | CPU/cores ratio | load |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|",
            *rows,
            "",
            *verdicts,
            "",
            "Command: `.venv/bin/python bench/bench_reader.py`",
        ]
    )
    append_results("Reader: checksum, inspect, pages, report, start-up beside their anchors", body)
    print(body)


def _ok(good: bool) -> str:
    return "met" if good else "**not met**"


if __name__ == "__main__":
    main()
