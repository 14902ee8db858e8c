"""``ibdtool report host:path ...``: the fleet side of ``report`` (engine:
:mod:`ibdtool.report.remote`).

Rows arrive from every host as its files finish and go out as the local report's do (JSON lines
at once, every other format when all hosts are done), each with ``host``. The totals gain
``by_host`` (and the schemas are per host); ``--format jsonl`` ends with one ``totals`` line per
host and one for the fleet, which ``--compare`` skips when it reads the file back. A host that
failed is left out of ``--compare``'s dropped tablespaces: unreachable is not dropped.
"""

from __future__ import annotations

import sys
import time
from collections import deque
from typing import Any

from ibdtool.cli import report_formats as rf
from ibdtool.cli.report_output import (
    RowSink,
    cores,
    finish,
    report_meta,
    report_progress,
    write_document,
)
from ibdtool.copy import SshConfig
from ibdtool.errors import InputError
from ibdtool.report import Comparer, ScanOptions, load_report, match_keys, scan_fleet, sort_key


class FileRate:
    """Files a second over the last few seconds, as the bar's words (``1,234 files/s``; empty
    while there is too little to tell): a sample kept every quarter second, so a row costs a
    clock read."""

    WINDOW = 5.0

    def __init__(self) -> None:
        self.samples: deque[tuple[float, int]] = deque(maxlen=int(self.WINDOW * 4) + 1)
        self.text = ""

    def add(self, files: int) -> str:
        now = time.monotonic()
        if not self.samples or now - self.samples[-1][0] >= 0.25:
            self.samples.append((now, files))
            (t0, n0), (t1, n1) = self.samples[0], self.samples[-1]
            if t1 - t0 >= 0.5:
                self.text = f"{(n1 - n0) / (t1 - t0):,.0f} files/s"
        return self.text


def _collect(out: RowSink, keys: set[str] | None, row: dict[str, Any]) -> None:
    """One row into ``out``; its match key into ``keys`` when there is a report to compare
    with (else none is made or kept: 100,000 of them would be 10 MB held to the end)."""
    error, host = row.get("error"), row["host"]
    key = ""
    if keys is not None:
        key = match_keys([row])[0]
        keys.add(key)
    out.add(row, key, error if not error or error.startswith(f"{host}:") else f"{host}: {error}")


def report_fleet(
    groups: list[tuple[str, list[str]]],
    cfg: SshConfig,
    opts: ScanOptions,
    fmt: str,
    wide: bool,
    compare_path: str | None,
    jobs: int | None,
    fail_on: list[str],
) -> None:
    """Scan every host's paths and print the report in ``fmt``; exits as a local report does
    (a host that failed counts as an unreadable file: exit 2)."""
    if opts.simulate or opts.page_map:
        option = "--simulate" if opts.simulate else "--map"
        raise InputError(
            f"{option} is not available for host:path (it reads pages again and again, "
            f"which over ssh would mean most of the file); run `ibdtool report {option}` on "
            "the host itself"
        )
    comparer = None
    if compare_path is not None:
        comparer = Comparer(load_report(compare_path), compare_path, ())
    paths = tuple(f"{host}:{p}" for host, ps in groups for p in ps)
    meta = report_meta(paths, opts, jobs or len(groups), fail_on, local=False)
    meta["hosts"] = [host for host, _ in groups]
    out = RowSink(
        fmt,
        comparer,
        key=lambda r: (r["host"], *sort_key(r)),
        table_columns=rf.row_columns_for(False, True),
    )
    keys: set[str] | None = None if comparer is None else set()
    host_rows = 0
    done_files = done_bytes = 0
    with report_progress(0, 0) as bar:
        more = None if bar is None else bar.more
        meter = FileRate()
        for row in scan_fleet(groups, cfg, opts, jobs, jobs or cores(), on_listed=more):
            host_rows += row.get("kind") == "host"
            if row.get("kind") != "host":
                done_files += 1
                done_bytes += row.get("logical_size") or 0
                if bar is not None:
                    bar(done_files, done_bytes, meter.add(done_files))
            _collect(out, keys, row)
    failed = [h for h, t in out.totals.hosts.items() if t["host_error"]]
    dropped: list[dict[str, Any]] = []
    if comparer is not None:
        assert keys is not None
        comparer.new_keys = keys
        dropped = comparer.dropped(failed)
    if out.stream:
        for c in dropped:
            base = {k: c.get(k) for k in ("host", "path", "name", "schema", "table")}
            rf.write_jsonl_row({**base, "change": c}, sys.stdout)
        sums = out.totals.to_json()
        for host_total in sums["by_host"]:
            rf.write_jsonl_row({"host": host_total["host"], "totals": host_total}, sys.stdout)
        rf.write_jsonl_row({"hosts": len(sums["by_host"]), "totals": sums["all"]}, sys.stdout)
    else:
        write_document(out, meta, dropped, wide)
    finish(out.totals, out.errors, fail_on, host_rows)
