"""Split a scan of one tablespace over forked child processes.

A bare ``fork`` and a pipe per child start in a millisecond or two, where a process pool costs
tens: on a 1 GB file that is the difference between beating innochecksum and not. Children
inherit the open :class:`~ibdtool.tablespace.reader.Tablespace` and its decoded format, scan their
page range with the same function the parent uses for its own range, and send the result back
pickled. A child that fails or dies (its pipe ends without a result: the OOM killer, ``kill
-9``) is an error naming how it ended, never a clean result and never a hang.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
from collections.abc import Callable, Generator
from typing import TypeVar

from ibdtool.errors import InputError
from ibdtool.tablespace.reader import Tablespace
from ibdtool.workers import _LEN, KILL_HOOK, _read_exact, _write_frame, describe_exit

T = TypeVar("T")


def split(n_pages: int, jobs: int) -> list[tuple[int, int]]:
    """``jobs`` contiguous page ranges covering [0, n_pages)."""
    step = -(-n_pages // max(1, jobs))
    return [(s, min(n_pages, s + step)) for s in range(0, n_pages, step)] or [(0, 0)]


def map_ranges(
    ts: Tablespace, fn: Callable[[Tablespace, int, int], T], ranges: list[tuple[int, int]]
) -> list[T]:
    """``[fn(ts, start, stop) for each range]``, the first in this process, the rest in
    children, in range order."""
    ts.doublewrite_pages  # noqa: B018  (decode once, before forking)
    children: list[tuple[int, int]] = []
    for start, stop in ranges[1:]:
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:  # child
            os.close(rfd)
            code = 0
            hook = os.environ.get(KILL_HOOK)
            if hook and hook in str(ts.path):  # tests only: see ibdtool.workers
                os.kill(os.getpid(), signal.SIGKILL)
            try:
                payload = pickle.dumps(fn(ts, start, stop))
            except BaseException as exc:  # report it to the parent as data
                message = exc.message if isinstance(exc, InputError) else f"{ts.path}: {exc}"
                payload = pickle.dumps(InputError(message))
                code = 1
            with os.fdopen(wfd, "wb") as w:
                w.write(payload)
            os._exit(code)
        os.close(wfd)
        children.append((pid, rfd))
    failure: BaseException | None = None
    try:
        results = [fn(ts, *ranges[0])]
    except BaseException as exc:  # still collect the children, then raise
        results, failure = [], exc
    for pid, rfd in children:
        with os.fdopen(rfd, "rb") as r:
            data = r.read() if failure is None else b""
        if failure is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        status = os.waitpid(pid, 0)[1]
        try:
            part = pickle.loads(data)
        except Exception:
            part = InputError(f"{ts.path}: worker process {pid} {describe_exit(status)}")
        if isinstance(part, BaseException):
            failure = failure or part
        else:
            results.append(part)
    if failure is not None:
        raise failure
    return results


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
