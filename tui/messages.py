"""Messages the workers post back to the UI thread (dataclasses, as harlequin writes them).

Workers run in threads and never touch widgets; they post one of these to the screen that owns
them, at most about ten times a second for progress.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textual.message import Message

from ibdtool.advise import SimResult
from ibdtool.fs import Allocation
from ibdtool.parsers.space import SpaceFormat
from ibdtool.tablespace import InspectResult, PageDump
from ibdtool.tui.commandlog import LogEntry
from ibdtool.tui.pagemodel import PageMapModel


@dataclass
class FileOpened(Message):
    """Page 0 is read and ``fstat`` done: format and sizes can show at once."""

    fmt: SpaceFormat
    logical_size: int
    allocated: int
    pages: int


@dataclass
class ScanStarted(Message):
    """The file is open and its page map made: the header summary and the map can be shown
    before a single page is decoded. ``allocation``: the file's map when read whole before the
    scan, None when the scan reads it a window at a time (its totals come with the result)."""

    fmt: SpaceFormat
    allocation: Allocation | None
    model: PageMapModel
    logical_size: int


@dataclass
class ScanProgress(Message):
    """Pages ``[0, done)`` are in the model."""

    done: int
    total: int


@dataclass
class ScanFinished(Message):
    result: InspectResult


@dataclass
class ScanFailed(Message):
    message: str


@dataclass
class RowsScanned(Message):
    """Browser rows (``ibdtool.report.batch`` rows) for files whose scan finished; ``final``: the
    worker's batch is done."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    final: bool = False


@dataclass
class SimulationProgress(Message):
    done: int
    total: int


@dataclass
class SimulationFinished(Message):
    result: SimResult


@dataclass
class SimulationFailed(Message):
    message: str


@dataclass
class LogAdded(Message):
    entry: LogEntry


@dataclass
class PageLoaded(Message):
    """One page read and decoded for the page view."""

    dump: PageDump
