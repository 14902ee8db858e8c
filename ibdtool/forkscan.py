"""Split a scan of one tablespace over forked child processes.

A bare ``fork`` and a pipe per child start in a millisecond or two, where a process pool costs
tens: on a 1 GB file that is the difference between beating innochecksum and not. Children
inherit the open :class:`~ibdtool.tablespace.Tablespace` and its decoded format, scan their page
range with the same function the parent uses for its own range, and send the result back
pickled. A child that fails or dies (its pipe ends without a result: the OOM killer, ``kill
-9``) is an error naming how it ended, never a clean result and never a hang.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
from collections.abc import Callable
from typing import TypeVar

from ibdtool.errors import InputError
from ibdtool.tablespace import Tablespace
from ibdtool.workpool import KILL_HOOK, describe_exit

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
            if hook and hook in str(ts.path):  # tests only: see ibdtool.workpool
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
