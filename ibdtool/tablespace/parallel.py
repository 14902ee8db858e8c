"""Split a scan of one tablespace over forked child processes, a window of pages at a time.

A bare ``fork`` and a pipe per child start in a millisecond or two, where a process pool costs
tens: on a 1 GB file that is the difference between beating innochecksum and not. Children
inherit the open :class:`~ibdtool.tablespace.reader.Tablespace` and its decoded format and scan
with the same function the parent uses for its own pages.

:func:`map_ranges` hands the windows out as the processes free up, not as fixed shares: before
forking, this process writes the windows' numbers into a pipe, four bytes each (all of them fit
in the pipe: :data:`MAX_WINDOWS`); every process, this one included, takes the next number from
it (a read of four bytes from a pipe is atomic) until it is empty, scans that window, and a child
sends ``(number, result)`` back, pickled, down a pipe of its own, which this process reads
between its own windows. :func:`windows` cuts the pages big windows first, smaller ones toward
the end (guided self-scheduling), each a whole number of the scans' reads: a child that starts
late (it pays the fork's copy-on-write faults) or meets slower pages takes fewer windows, and
the processes end within about the last, small window of each other (with halves fixed before
the fork, this process finished its half and then waited for its child's). Results come back
in window order whoever scanned them.

A child that fails or dies (its pipe ends without its clean exit: the OOM killer, ``kill -9``)
is an error naming how it ended, never a clean result (the windows it held are nobody's) and
never a hang.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import selectors
import signal
import struct
from collections.abc import Callable, Generator
from typing import Any, TypeVar

from ibdtool.errors import InputError
from ibdtool.tablespace.reader import CHUNK_BYTES, Tablespace
from ibdtool.workers import _LEN, KILL_HOOK, _read_exact, _write_frame, describe_exit

T = TypeVar("T")

#: a window's number in the pipe the processes take them from
_TOKEN = struct.Struct("=I")
#: windows of one split at most: their numbers are written before the fork and fit in one page,
#: the least a pipe holds, so the write never waits for a reader
MAX_WINDOWS = 1024
#: each window is at most 1 / (GUIDE × processes) of the pages not yet cut
GUIDE = 2
#: the least window: four of the scans' reads (1,024 pages of 16K), its overhead (a FIEMAP
#: call, a tally, a pickle) well under a hundredth of its pages' time
MIN_WINDOW_BYTES = 4 * CHUNK_BYTES


def windows(n_pages: int, jobs: int, page_size: int) -> list[tuple[int, int]]:
    """Windows covering pages [0, n_pages) in order for a split over ``jobs`` processes: each
    at most ``1 / (GUIDE × jobs)`` of the pages after it (big first, small last), a multiple of
    the scans' reads (:data:`CHUNK_BYTES`) and of at least :data:`MIN_WINDOW_BYTES` but the
    last, and no more than :data:`MAX_WINDOWS` of them."""
    align = max(1, CHUNK_BYTES // page_size)
    least = max(align, MIN_WINDOW_BYTES // page_size)
    share = GUIDE * max(1, jobs)
    while True:
        out: list[tuple[int, int]] = []
        start = 0
        while start < n_pages:
            size = max(least, -(-(n_pages - start) // share))
            stop = min(n_pages, start + -(-size // align) * align)
            out.append((start, stop))
            start = stop
        if len(out) <= MAX_WINDOWS:
            return out or [(0, 0)]
        least *= 2


def map_ranges(
    ts: Tablespace,
    fn: Callable[[Tablespace, int, int], T],
    ranges: list[tuple[int, int]],
    jobs: int,
) -> list[T]:
    """``[fn(ts, start, stop) for each range]`` in range order, computed by ``jobs`` processes
    (this one and forked children) that each take the next range not yet taken (see module
    doc). An exception of ``fn`` is raised here (the one of the earliest range that failed),
    after every child has finished the range it held and has been reaped."""
    jobs = max(1, min(jobs, len(ranges)))
    if jobs == 1:
        return [fn(ts, start, stop) for start, stop in ranges]
    if len(ranges) > MAX_WINDOWS:
        raise ValueError(f"{len(ranges)} ranges: at most {MAX_WINDOWS} a split")
    ts.doublewrite_pages  # noqa: B018  (decode once, before forking)
    tokens, wfd = os.pipe()
    try:
        os.write(wfd, b"".join(_TOKEN.pack(i) for i in range(len(ranges))))  # one page at most
    finally:
        os.close(wfd)
    split = _Split(ts, len(ranges))
    try:
        for _ in range(jobs - 1):
            rfd, wfd = os.pipe()
            try:
                pid = os.fork()
            except OSError:
                os.close(rfd)
                os.close(wfd)
                raise
            if pid == 0:  # child: never returns into the caller's code
                code = 1
                try:
                    os.close(rfd)
                    for child in split.children:
                        os.close(child.fd)
                    code = _child(ts, fn, ranges, tokens, wfd)
                finally:
                    os._exit(code)
            os.close(wfd)
            os.set_blocking(rfd, False)
            split.children.append(_Child(pid, rfd))
        while split.failure is None and (i := _take(tokens)) is not None:
            try:
                split.results[i] = fn(ts, *ranges[i])
            except Exception as exc:  # collect the children, then raise
                split.fail(i, exc)
            split.drain()
        if split.failure is not None:  # no window begins after it; those held are finished
            while _take(tokens) is not None:
                pass
        split.collect()
    finally:
        os.close(tokens)
        split.close()
    return split.outcome()


class _Child:
    """A forked child of a split: its pid and the read end of its result pipe (non-blocking),
    with the bytes read of a frame not whole yet."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid = pid
        self.fd = fd
        self.buf = bytearray()
        self.ended = False  # its pipe is at its end
        self.reaped = False
        self.status: int | None = None  # its wait status once reaped

    def read(self) -> list[bytes]:
        """The frames now whole in the pipe (without blocking)."""
        while not self.ended:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            if not data:
                self.ended = True
            self.buf += data
        frames = []
        buf = self.buf
        while len(buf) >= _LEN.size:
            n = _LEN.unpack_from(buf)[0]
            if len(buf) < _LEN.size + n:
                break
            frames.append(bytes(buf[_LEN.size : _LEN.size + n]))
            del buf[: _LEN.size + n]
        return frames


class _Split:
    """A split's children, the results in range order as they come, and its first failure."""

    def __init__(self, ts: Tablespace, n: int) -> None:
        self.ts = ts
        self.children: list[_Child] = []
        self.results: list[Any] = [_MISSING] * n
        self.failure: tuple[int, BaseException] | None = None

    def fail(self, index: int, exc: BaseException) -> None:
        """Keep the failure of the earliest range: a file that shrank fails every range past
        its new end, and the windows before a failure are all taken (in order) and finished
        before it is raised, so the error is the one of the first failing window whichever
        process met it first."""
        if self.failure is None or index < self.failure[0]:
            self.failure = (index, exc)

    def drain(self, child: _Child | None = None) -> None:
        """The results the children (or ``child``) have sent so far, taken without waiting."""
        for c in self.children if child is None else [child]:
            for frame in c.read():
                i, part = pickle.loads(frame)
                if isinstance(part, BaseException):
                    self.fail(i, part)
                else:
                    self.results[i] = part

    def collect(self) -> None:
        """Every child's results up to the end of its pipe, then each child reaped."""
        live = [c for c in self.children if not c.ended]
        if live:
            with selectors.DefaultSelector() as sel:
                for c in live:
                    sel.register(c.fd, selectors.EVENT_READ, c)
                while sel.get_map():
                    for key, _ in sel.select():
                        child: _Child = key.data
                        self.drain(child)
                        if child.ended:
                            sel.unregister(child.fd)
        self.close()

    def close(self) -> None:
        """Reap every child (killed first unless its pipe has ended: this process is
        stopped by an exception of its own, a ``KeyboardInterrupt``) and close its pipe."""
        for c in self.children:
            if c.reaped:
                continue
            if not c.ended:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(c.pid, signal.SIGKILL)
            c.reaped = True
            os.close(c.fd)
            with contextlib.suppress(ChildProcessError):
                c.status = os.waitpid(c.pid, 0)[1]

    def outcome(self) -> list[Any]:
        """The results, or the failure: an exception of ``fn``, else a child that did not end
        cleanly, named with how it ended."""
        if self.failure is not None:
            raise self.failure[1]
        for c in self.children:
            if c.status != 0:
                how = describe_exit(c.status) if c.status is not None else "was lost"
                raise InputError(f"{self.ts.path}: worker process {c.pid} {how}")
        if any(r is _MISSING for r in self.results):  # defensive: a window nobody scanned
            raise InputError(f"{self.ts.path}: a part of the file was not scanned")
        return self.results


_MISSING: Any = object()


def _take(tokens: int) -> int | None:
    """The next window's number from the pipe, or None when none is left."""
    data = os.read(tokens, _TOKEN.size)
    return _TOKEN.unpack(data)[0] if len(data) == _TOKEN.size else None


def _child(
    ts: Tablespace,
    fn: Callable[[Tablespace, int, int], T],
    ranges: list[tuple[int, int]],
    tokens: int,
    wfd: int,
) -> int:
    """Run in a forked child: take windows and send ``(number, result)`` frames down ``wfd``
    until none is left; an error is sent as the last frame. Returns the exit status."""
    hook = os.environ.get(KILL_HOOK)
    doomed = hook is not None and hook != "" and hook in str(ts.path)  # tests: ibdtool.workers
    try:
        while True:
            i = _take(tokens)
            if doomed:  # dies holding a window (or finding none left)
                os.kill(os.getpid(), signal.SIGKILL)
            if i is None:
                return 0
            try:
                payload = pickle.dumps((i, fn(ts, *ranges[i])), protocol=pickle.HIGHEST_PROTOCOL)
            except BaseException as exc:  # report it to the parent as data
                message = exc.message if isinstance(exc, InputError) else f"{ts.path}: {exc}"
                _write_frame(wfd, pickle.dumps((i, InputError(message))))
                return 1
            _write_frame(wfd, payload)
    except OSError:  # the parent stopped reading (it is gone, or it failed)
        return 1


def ordered_map(
    ts: Tablespace,
    fn: Callable[[Tablespace, int, int], T],
    ranges: list[tuple[int, int]],
    jobs: int,
) -> Generator[T, None, None]:
    """``fn(ts, start, stop)`` for each range, yielded in range order while they are computed
    on ``jobs`` processes: this one takes ranges 0, jobs, 2·jobs…, forked child ``j`` ranges
    j, j + jobs…, each sending its results down a pipe in order. A child blocks on its pipe
    until its turn comes, so at most one result per child waits in memory. A child that fails
    or dies is an :class:`InputError` at its turn; the results before it are out by then. When
    the caller stops early (a closed stdout), the children are killed and reaped."""
    jobs = max(1, min(jobs, len(ranges)))
    if jobs == 1:
        for start, stop in ranges:
            yield fn(ts, start, stop)
        return
    ts.doublewrite_pages  # noqa: B018  (decode once, before forking)
    children: list[tuple[int, int]] = []
    try:
        for j in range(1, jobs):
            rfd, wfd = os.pipe()
            pid = os.fork()
            if pid == 0:  # child
                os.close(rfd)
                for _pid, other in children:
                    os.close(other)
                os._exit(_ordered_child(ts, fn, ranges[j::jobs], wfd))
            os.close(wfd)
            children.append((pid, rfd))
        for i, (start, stop) in enumerate(ranges):
            j = i % jobs
            if j == 0:
                yield fn(ts, start, stop)
                continue
            pid, rfd = children[j - 1]
            data = _read_frame(rfd)
            if data is None:  # the pipe ended without a result: the child died
                status = os.waitpid(pid, 0)[1]
                children[j - 1] = (0, rfd)
                raise InputError(f"{ts.path}: worker process {pid} {describe_exit(status)}")
            part = pickle.loads(data)
            if isinstance(part, BaseException):
                raise part
            yield part
    finally:
        for pid, rfd in children:
            os.close(rfd)
            if pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, 0)


def _ordered_child(
    ts: Tablespace, fn: Callable[[Tablespace, int, int], T], mine: list[tuple[int, int]], wfd: int
) -> int:
    """Run in a forked child: each of ``mine`` in order, each result framed down ``wfd``; an
    error is sent as the last frame. Returns the exit status."""
    hook = os.environ.get(KILL_HOOK)
    if hook and hook in str(ts.path):  # tests only: see ibdtool.workers
        os.kill(os.getpid(), signal.SIGKILL)
    try:
        for start, stop in mine:
            try:
                payload = pickle.dumps(fn(ts, start, stop))
            except BaseException as exc:  # report it to the parent as data
                message = exc.message if isinstance(exc, InputError) else f"{ts.path}: {exc}"
                _write_frame(wfd, pickle.dumps(InputError(message)))
                return 1
            _write_frame(wfd, payload)
    except OSError:  # the parent stopped reading (it is gone, or it stopped early)
        return 1
    return 0


def _read_frame(fd: int) -> bytes | None:
    head = _read_exact(fd, _LEN.size)
    if head is None:
        return None
    return _read_exact(fd, _LEN.unpack(head)[0])
