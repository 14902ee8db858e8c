"""The end of an ``ibdtool report`` run, local or over hosts: the rows as they arrive, the
report's ``meta`` block, the whole document in its format, the errors and the exit status.

:mod:`ibdtool.cli.report` (local paths) and :mod:`ibdtool.cli.report_fleet` (``host:path``)
scan differently and end the same way, here.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib import metadata
from typing import Any

import click

from ibdtool.cli import report_formats as rf
from ibdtool.errors import ExitCode
from ibdtool.present import shown
from ibdtool.report import (
    Comparer,
    RowStore,
    ScanOptions,
    Totals,
    document,
    fail_on_hits,
    sort_key,
    thresholds,
)

#: errors listed on stderr at the end; every one is in its row
MAX_LISTED_ERRORS = 20


class RowSink:
    """Where a report's rows go as they arrive: the totals, the first errors, and each row
    written at once (``jsonl``) or kept for the document, with its change against
    ``--compare``'s report."""

    def __init__(
        self,
        fmt: str,
        comparer: Comparer | None,
        key: Callable[[dict[str, Any]], Any] = sort_key,
        table_columns: list[rf.Column] | None = None,
    ) -> None:
        """``table_columns``: the table's row columns (:func:`rf.row_columns_for`), whose
        cells are made as rows arrive (``table``)."""
        self.fmt = fmt
        self.stream = fmt == "jsonl"
        self.comparer = comparer
        self.totals = Totals()
        #: packed (~8.5 KB a row as a dict, a few hundred bytes packed), printed in ``key`` order;
        #: for JSON, kept as their text in the document (made here while the workers scan,
        #: not after the scan on one core)
        self.rows = RowStore(key, rf.json_row_text if fmt == "json" else None)
        self.changes: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.table = (
            rf.TableCells(table_columns) if fmt == "table" and table_columns is not None else None
        )

    def add(self, row: dict[str, Any], key: str, error: str | None) -> None:
        """One row, ``key`` its match key against the compared report, ``error`` the line to
        list for it on stderr (if any)."""
        self.totals.add(row)
        if error and len(self.errors) < MAX_LISTED_ERRORS:
            self.errors.append(error)
        change = self.comparer.change(key, row) if self.comparer is not None else None
        if self.stream:
            rf.write_jsonl_row({**row, "change": change} if self.comparer else row, sys.stdout)
        else:
            self.rows.append(row)
            if self.table is not None:
                self.table.add(row)
            if change is not None and change["status"] != "unchanged":
                self.changes.append(change)


def cores() -> int:
    """The cores this process may run on (a report's default ``--jobs``)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@contextmanager
def report_progress(files: int, total_bytes: int) -> Iterator[Progress | None]:
    """Files and bytes done, on stderr, only when stderr is a terminal; ``update(files,
    bytes, info)`` where bytes may count a share of the big file being scanned, and
    ``update.more(files, bytes)`` when more are listed (``report host:path``: each host's
    listing arrives as the scan goes)."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, TextColumn
    from rich.progress import Progress as Bar

    from ibdtool.cli.render import err, progress_columns

    with Bar(
        TextColumn("report"),
        BarColumn(),
        TextColumn("{task.fields[files]}", markup=False),
        *progress_columns(byte_units=True),
        TextColumn("{task.fields[info]}", markup=False),
        console=err(),
        transient=True,
    ) as bar:
        yield Progress(bar, files, total_bytes)


class Progress:
    """The bar of :func:`report_progress`: call it with files and bytes done."""

    def __init__(self, bar: Any, files: int, total_bytes: int) -> None:
        self.bar = bar
        self.files = files
        self.total = total_bytes
        self._lock = threading.Lock()
        self.task = bar.add_task("report", total=total_bytes or 1, files=self._files(0), info="")

    def _files(self, done: int) -> str:
        return f"{done:,}/{self.files:,} files"

    def __call__(self, done_files: int, done_bytes: int, info: str = "") -> None:
        self.bar.update(self.task, completed=done_bytes, files=self._files(done_files), info=info)

    def more(self, files: int, total_bytes: int) -> None:
        """``files`` more files of ``total_bytes`` listed (called from any thread)."""
        with self._lock:
            self.files += files
            self.total += total_bytes
            self.bar.update(self.task, total=self.total or 1)


def report_meta(
    paths: tuple[str, ...], opts: ScanOptions, jobs: int, fail_on: list[str], local: bool = True
) -> Any:
    try:
        version = metadata.version("ibdtool")
    except metadata.PackageNotFoundError:
        version = None
    return {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "ibdtool_version": version,
        "paths": [os.path.abspath(p) if local else p for p in paths],
        "options": {
            "simulate": opts.simulate,
            "sample": opts.sample if opts.simulate else None,
            "jobs": jobs,
            "fail_on": fail_on,
        },
        "thresholds": thresholds(opts),
    }


def write_document(
    out: RowSink, meta: dict[str, Any], dropped: list[dict[str, Any]], wide: bool
) -> None:
    """The whole report (not streamed) in its format: the rows in their sort order, the totals, the
    comparison (``dropped``: the compared report's tablespaces no longer found)."""
    compare = None
    if out.comparer is not None:
        compare = {
            "against": out.comparer.against,
            "summary": out.comparer.summary(out.totals),
            "changes": sorted(out.changes + dropped, key=lambda c: c["key"]),
        }
    doc = document(out.rows, out.totals, meta, compare)
    if out.fmt == "table":
        table = out.table
        made = None
        if table is not None and table.columns == rf.row_columns(doc):
            made = table.in_order(out.rows)
        rf.print_table(doc, wide, made)
    else:
        rf.WRITERS[out.fmt](doc, sys.stdout)
        sys.stdout.flush()


def finish(totals: Totals, errors: list[str], fail_on: list[str], host_rows: int = 0) -> None:
    """The errors on stderr and the exit status: 2 when a file (or, ``host_rows``, a host or
    a path on it) could not be read, else 1 for a --fail-on hit."""
    overall = totals.to_json()["all"]
    if overall["errors"]:
        for message in errors:
            click.echo(f"ibdtool: error: {shown(message)}", err=True)
        files = overall["errors"] - host_rows
        failed = [h for h, t in totals.hosts.items() if t["host_error"]]
        parts = [f"{len(failed)} of {len(totals.hosts)} hosts failed"] if failed else []
        if files and (failed or overall["files"] > 1):
            # one file that cannot be read, alone: its line is the whole answer
            parts.append(f"{files} of {overall['files']} files could not be read")
        if parts:
            click.echo(f"ibdtool: error: {', '.join(parts)} (see their rows)", err=True)
        sys.exit(ExitCode.BAD_INPUT)
    hits = fail_on_hits(overall["flags"], fail_on)
    if hits:
        click.echo(
            "ibdtool: found "
            + ", ".join(f"{overall['flags'][h]} {h}" for h in hits)
            + " (--fail-on)",
            err=True,
        )
        sys.exit(ExitCode.FOUND)
