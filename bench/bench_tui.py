"""Issue 5 benchmark: the TUI on a 1 GB tablespace — summary time, map fill, key latency.

Run by hand:  .venv/bin/python bench/bench_tui.py [FILE]
(``--scan-only``: one run without keys, its scan time as JSON: :func:`tui_row`, which
bench_issue14.py runs.)
FILE defaults to bench/work/big-fcrc32-zlib.ibd (:func:`common.make_bench_file`).

The app is the one ``ibdtool tui FILE`` runs (same factory), headless at 120×40:

1. seconds from the app's start until the header summary (format, page sizes, flags, logical
   and allocated size) is on screen (target: < 2 s), until the page map is drawn (before any
   of the extent map is read: the scan reads it a window at a time) and until its first page
   is decoded (the first window's map read, SEEK_DATA, FIEMAP).
2. the page map's fill: pages decoded against time, sampled every 2 s; it fills
   progressively while the scan runs in its thread.
3. keystrokes during the scan: 40 presses of → (a key event posted to the app, as the
   terminal driver posts it), each timed until the cursor line shows the next page, 50 ms
   apart. Target: every one under 100 ms.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import append_results, make_bench_file, warm
from sidebyside import Contender, Goal, Row
from textual import events

from ibdtool.tui.app import create_app
from ibdtool.tui.screens.tablespace import TablespaceScreen

KEYS = 40


async def measure(path: Path, keys: int = KEYS) -> dict[str, object]:
    """The figures above; with ``keys=0`` no key is pressed (the scan's own speed)."""
    app = create_app(path)
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    async with app.run_test(size=(120, 40)):
        while not (isinstance(app.screen, TablespaceScreen) and app.screen.opened):
            await asyncio.sleep(0.002)
        summary_s = time.perf_counter() - t0
        while not app.screen.started:
            await asyncio.sleep(0.002)
        map_s = time.perf_counter() - t0
        screen = app.screen
        assert isinstance(screen, TablespaceScreen)
        model = screen.model
        assert model is not None
        while not model.scanned:
            await asyncio.sleep(0.002)
        first_s = time.perf_counter() - t0
        fill: list[tuple[float, int]] = [(summary_s, model.scanned)]
        latencies: list[float] = []
        scanned_during_keys = model.scanned
        for _ in range(keys):
            before = screen._cursor
            t = time.perf_counter()
            app.post_message(events.Key("right", None))
            while screen._cursor == before:
                await asyncio.sleep(0.0005)
            latencies.append(time.perf_counter() - t)
            await asyncio.sleep(0.05)
        keys_done_at = model.scanned
        last = 0.0
        while screen.result is None:
            await asyncio.sleep(0.05)
            now = time.perf_counter() - t0
            if now - last >= 2.0:
                last = now
                fill.append((now, model.scanned))
        total_s = time.perf_counter() - t0
        cpu_s = time.process_time() - cpu0
        fill.append((total_s, model.n_pages))
    return {
        "pages": model.n_pages,
        "summary_s": summary_s,
        "map_s": map_s,
        "first_s": first_s,
        "total_s": total_s,
        "cpu_s": cpu_s,
        "fill": fill,
        "latencies": latencies,
        "during": (scanned_during_keys, keys_done_at),
    }


def _scan_once(path: Path) -> tuple[float, float]:
    """(app start → scan done s, the app's CPU s) of a fresh interpreter, no key pressed."""
    out = subprocess.run(
        [sys.executable, __file__, "--scan-only", str(path)],
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    ).stdout
    r = json.loads(out.splitlines()[-1])
    return r["total_s"], r["cpu_s"]


def tui_row(path: Path) -> Row:
    """Issue 14's TUI row: app start until the scan of ``path`` is done, each run in a fresh
    interpreter; the goal (< 3 s for 1 GB) scaled by 10⁹ bytes over the file's size."""
    size = path.stat().st_size
    goal = Goal("seconds", 3.0, 1e9 / size, f" for 1 GB (scaled from {size / 1e9:.2f} GB)")
    label = "`ibdtool tui` headless, app start → scan done"
    run = Contender(label, fn=lambda: _scan_once(path), goal=goal)
    return Row(f"TUI: {path.name}, scan done (no key pressed)", [run])


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--scan-only"]
    path = Path(args[0]) if args else make_bench_file("big-fcrc32-zlib.ibd")
    if not path.is_file():
        raise SystemExit(f"{path}: missing")
    if "--scan-only" in sys.argv:  # one run for tui_row: its figures as JSON, no RESULTS.md
        r = asyncio.run(measure(path, keys=0))
        print(json.dumps({"total_s": r["total_s"], "cpu_s": r["cpu_s"]}))
        return
    warm(path)
    r = asyncio.run(measure(path))
    lat = sorted(1000 * x for x in r["latencies"])  # type: ignore[attr-defined]
    pages = r["pages"]
    fill = r["fill"]
    during = r["during"]
    rows = []
    for t, n in fill:  # type: ignore[attr-defined]
        rows.append(f"| {t:.1f} | {n:,} | {100 * n / pages:.0f}% |")  # type: ignore[operator]
    p95 = lat[int(0.95 * (len(lat) - 1))]
    body = f"""
File: `{path.name}`, {path.stat().st_size:,} bytes, {pages:,} pages, from the page cache;
headless app at 120×40 (`.venv/bin/python bench/bench_tui.py {path}`).

| measure | value | target |
|---|---:|---:|
| app start → header summary on screen (format, sizes) | {r["summary_s"]:.2f} s | < 2 s |
| app start → page map drawn | {r["map_s"]:.2f} s | |
| app start → first page decoded (its window's extent map read) | {r["first_s"]:.2f} s | |
| app start → scan done (full summary) | {r["total_s"]:.1f} s | < 3 s |
| CPU of the app's process until then (both threads) | {r["cpu_s"]:.1f} s | |
| key → cursor moved, median of {len(lat)} | {statistics.median(lat):.1f} ms | |
| key → cursor moved, p95 | {p95:.1f} ms | |
| key → cursor moved, max | {max(lat):.1f} ms | < 100 ms |

The keys were pressed while pages {during[0]:,}–{during[1]:,} were being decoded.
Page map fill (pages decoded since the app started):

| s | pages | share |
|---:|---:|---:|
""" + "\n".join(rows)  # type: ignore[index]
    load = os.getloadavg()[0]
    body += f"\n\nLoad average {load:.2f} at the end (a shared machine: the CPU line is steadier)."
    print(body)
    append_results("TUI: 1 GB tablespace, summary time and key latency during the scan", body)


if __name__ == "__main__":
    main()
