"""Progress that tells the truth: IEC units, an honest ETA, a bar that moves inside a big file.

The oracles: a rate measured over bytes we say were moved at times we choose (not over the holes
a sparse copy skips), and a report scan of a file whose simulated pages we count ourselves.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ibdtool.cli.copy import _progress_adapter
from ibdtool.cli.render import RateMeter
from ibdtool.copy.local import CopyProgress
from ibdtool.report import batch as rp
from tests.conftest import SAMPLES, corpus_file

MIB = 1024 * 1024


def test_copy_rate_counts_bytes_moved_not_the_holes_skipped() -> None:
    calls: list[dict[str, Any]] = []

    def bar(done: int, total: int, **kw: Any) -> None:
        calls.append({"done": done, "total": total, **kw})

    update = _progress_adapter(bar)
    # a 64 MiB sparse file, a quarter of it data: the position runs 4× faster than the bytes
    for second in range(5):
        update(CopyProgress("copy", (second + 1) * 16 * MIB, 64 * MIB, (second + 1) * 4 * MIB))
    assert [c["moved"] for c in calls] == [(s + 1) * 4 * MIB for s in range(5)]
    meter = RateMeter()
    rates = [meter.add(c["moved"], now=float(s)) for s, c in enumerate(calls)]
    assert rates[0] is None  # one sample: unknown, not a made-up figure
    assert rates[-1] == 4 * MIB  # 4 MiB/s, what --bwlimit 4M allows


def test_rate_forgets_what_is_older_than_its_window() -> None:
    meter = RateMeter()
    for t in range(10):
        meter.add(t * MIB, now=float(t))  # 1 MiB/s for 10 s
    for t in range(10, 13):
        rate = meter.add(9 * MIB + (t - 9) * 5 * MIB, now=float(t))  # then 5 MiB/s
    assert rate is not None and rate > 2 * MIB


def test_report_simulate_moves_inside_a_file(tmp_path: Path) -> None:
    path = corpus_file("innodb-java-reader/mysql56/column/char/tb04.ibd")  # 128 pages
    (target,) = rp.discover([path])
    seen: list[float] = []
    row = rp.scan_one(target, rp.ScanOptions(simulate=True), seen.append)
    assert row["simulation"]["predicted_allocated"], row["simulation"]
    assert seen[0] == rp.INSPECT_SHARE
    assert seen == sorted(seen) and seen[-1] == 1.0
    # every page of the file as the rebuild would write it (the default prediction): fewer
    # than the file's own pages, as many as the rebuild model says it writes
    pages = row["simulation"]["pages_sampled"]
    basis = row["simulation"]["rebuild_alone"]["allocated"]["basis"]
    assert 0 < pages <= path.stat().st_size // 16384
    assert f"{pages} pages written" in basis, basis
    assert len(seen) >= 1 + pages // 64  # a step per batch of pages, not only at the end


def test_scanner_reports_the_big_file_it_scans(monkeypatch: Any) -> None:
    monkeypatch.setattr(rp, "BIG_FILE_BYTES", 1)  # every file is "big": scanned here by pages
    targets = rp.discover(
        [SAMPLES / "mariadb" / "p16k-plain.ibd", SAMPLES / "mysql80" / "plain.ibd"]
    )
    seen: list[tuple[str, float]] = []
    with rp.Scanner(targets, rp.ScanOptions(simulate=True), 2) as scanner:
        scanner.on_progress = lambda t, f: seen.append((t.path, f))
        rows = [row for _size, row in scanner]
    assert len(rows) == 2
    for t in targets:
        mine = [f for p, f in seen if p == t.path]
        assert mine and mine[-1] == 1.0, t.path
