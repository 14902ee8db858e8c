"""Run tasks in forked worker processes, where a worker that dies fails its task, not the run.

``multiprocessing.Pool.imap_unordered`` waits forever for the result of a worker the OOM killer
(or a ``kill -9``) took: ``ibdtool report`` over 4,000 files then never ends. Here each worker
is a forked child with a pipe each way and the parent hands out one task at a time, so it
always knows which task a worker holds. A pipe that ends without a result is that worker's
death: its task becomes ``died(task, why)`` (an error row, or an exception to raise), a fresh
worker takes the next task, and the run goes on. With ``depth`` 2 a worker holds a second small
task in its pipe while it runs the first, so that it never waits for the parent between tasks
(a 1 ms file and a parent busy with the last row: ``report`` over 100,000 files); it runs them
in order, so the first it holds is the one it died on, and the others go to a fresh worker.
With ``pipe_bytes`` each worker's task pipe is widened (Linux ``F_SETPIPE_SZ``) so that a
large task (a fetched file of ``report host:PATH``, ~125 KB) goes through in one write and one
read, and waits in the pipe while the worker runs the one before it.
Results come back as tasks finish; an exception raised by the task function is raised again in
the parent, as with ``Pool``.

Test hook: a worker handed a task whose ``label`` contains ``$IBDTOOL_TEST_KILL_WORKER``
sends itself SIGKILL before running it (``tests/test_workpool.py``); unset, nothing happens.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import pickle
import selectors
import signal
import struct
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")

KILL_HOOK = "IBDTOOL_TEST_KILL_WORKER"
_LEN = struct.Struct(">Q")
#: a task handed to a worker already busy goes into its pipe only if it is this small: the
#: pipe holds it whole (64 KiB), so the parent never blocks writing it while the worker blocks
#: writing a result the parent has not read yet
QUEUED_TASK_MAX = 16 << 10
F_SETPIPE_SZ = 1031
F_GETPIPE_SZ = 1032


@dataclass
class _Worker:
    pid: int
    tasks: int  # parent writes tasks here
    results: int  # and reads results here
    #: (index, task) handed out, oldest first: the first is being run, the rest wait in the pipe
    held: deque[Any] = field(default_factory=deque)
    #: the largest task that may wait in the task pipe behind the one being run (the pipe
    #: holds it whole)
    queued_max: int = QUEUED_TASK_MAX

    @property
    def busy(self) -> Any:
        """The (index, task) being run, or None."""
        return self.held[0] if self.held else None


def _write_frame(fd: int, data: bytes) -> None:
    _write_parts(fd, [data])


def _write_parts(fd: int, parts: list[bytes | memoryview]) -> None:
    """One frame of ``parts`` (its length, then each part), written with no copy of them."""
    head = _LEN.pack(sum(map(len, parts)))
    if len(parts) < 512:  # within IOV_MAX
        sent = os.writev(fd, [head, *parts])
        if sent == len(head) + sum(map(len, parts)):
            return
    else:
        sent = 0
    view = memoryview(b"".join([head, *parts]))[sent:]
    while view:
        view = view[os.write(fd, view) :]


#: a task frame's head: how many buffers its pickle left out of band, then each one's length
_BUFFERS = struct.Struct(">I")
_BUFFER_LEN = struct.Struct(">Q")


def _task_parts(item: Any) -> list[bytes | memoryview]:
    """A task as a frame's parts: a pickle (protocol 5) with the buffers its objects offer
    (:class:`pickle.PickleBuffer`: a fetched file's compressed frames) left out of it and
    written as they are, after it, not copied into it."""
    buffers: list[pickle.PickleBuffer] = []
    meta = pickle.dumps(item, protocol=5, buffer_callback=buffers.append)
    raws = [b.raw() for b in buffers]
    head = _BUFFERS.pack(len(raws)) + b"".join(_BUFFER_LEN.pack(len(r)) for r in raws)
    return [head, meta, *raws]


def _task_of(frame: bytes) -> Any:
    """The task of a frame :func:`_task_parts` made: its out-of-band buffers are views of the
    frame (no copy)."""
    (count,) = _BUFFERS.unpack_from(frame)
    pos = _BUFFERS.size
    lengths = [_BUFFER_LEN.unpack_from(frame, pos + i * _BUFFER_LEN.size)[0] for i in range(count)]
    pos += count * _BUFFER_LEN.size
    view = memoryview(frame)
    end = len(frame) - sum(lengths)
    meta = view[pos:end]
    buffers = []
    for n in lengths:
        buffers.append(view[end : end + n])
        end += n
    return pickle.loads(meta, buffers=buffers)


def _read_exact(fd: int, n: int) -> bytes | None:
    chunks: list[bytes] = []
    if 0 < n <= 1 << 20:  # one read when the writer put it all in the pipe at once
        chunk = os.read(fd, n)
        if not chunk:
            return None
        if len(chunk) == n:
            return chunk
        chunks, n = [chunk], n - len(chunk)
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _widened(fd: int, size: int) -> int:
    """The pipe ``fd`` made to hold ``size`` bytes (as much as allowed); what it holds now."""
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, F_SETPIPE_SZ, size)
    try:
        return int(fcntl.fcntl(fd, F_GETPIPE_SZ))
    except OSError:
        return 1 << 16


def _read_frame(fd: int) -> bytes | None:
    head = _read_exact(fd, _LEN.size)
    if head is None:
        return None
    return _read_exact(fd, _LEN.unpack(head)[0])


def describe_exit(status: int) -> str:
    """``killed by signal 9 (SIGKILL)`` or ``exited with status 3``, from a wait status."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = "unknown"
        hint = ", out of memory?" if sig == signal.SIGKILL else ""
        return f"killed by signal {sig} ({name}{hint})"
    return f"exited with status {os.waitstatus_to_exitcode(status)}"


class WorkerPool(Generic[T, R]):
    """``workers`` forked processes running ``fn`` on tasks; use as a context manager (the
    workers are forked on entry, before the caller starts threads, and ended on exit)."""

    def __init__(
        self,
        fn: Callable[[T], R],
        workers: int,
        *,
        died: Callable[[T, str], R],
        label: Callable[[T], str] = str,
        depth: int = 1,
        pipe_bytes: int = 0,
    ) -> None:
        """``depth``: tasks a worker holds at once (the second and later only when small,
        :data:`QUEUED_TASK_MAX`, or up to half the widened pipe); 1 hands a task only to an
        idle worker. ``pipe_bytes``: each worker's task pipe widened to this size."""
        self.fn = fn
        self.depth = max(1, depth)
        self.pipe_bytes = pipe_bytes
        self.size = max(1, workers)
        self.died = died
        self.label = label
        self.workers: dict[int, _Worker] = {}  # by results fd

    def __enter__(self) -> WorkerPool[T, R]:
        for _ in range(self.size):
            self._start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc_info: object) -> None:
        for w in list(self.workers.values()):
            self._end(w, kill=exc_type is not None or w.busy is not None)

    # -- the workers -----------------------------------------------------------------------

    def _start(self) -> _Worker:
        task_r, task_w = os.pipe()
        result_r, result_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover  (runs in the child, which never returns)
            code = 0
            try:
                for w in self.workers.values():  # others' pipes: their deaths must show
                    os.close(w.tasks)
                    os.close(w.results)
                os.close(task_w)
                os.close(result_r)
                signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C
                self._serve(task_r, result_w)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        os.close(task_r)
        os.close(result_w)
        worker = _Worker(pid, task_w, result_r)
        if self.pipe_bytes:
            # half of it: a task waiting there never fills it (see QUEUED_TASK_MAX)
            worker.queued_max = max(QUEUED_TASK_MAX, _widened(task_w, self.pipe_bytes) // 2)
        self.workers[result_r] = worker
        return worker

    def _serve(self, tasks: int, results: int) -> None:
        hook = os.environ.get(KILL_HOOK)
        while True:
            frame = _read_frame(tasks)
            if frame is None:
                return
            index, task = _task_of(frame)
            if hook and hook in self.label(task):
                os.kill(os.getpid(), signal.SIGKILL)
            try:
                reply = pickle.dumps((index, True, self.fn(task)))
            except Exception as exc:
                try:
                    reply = pickle.dumps((index, False, exc))
                except Exception:
                    reply = pickle.dumps((index, False, RuntimeError(f"{exc!r}")))
            _write_frame(results, reply)

    def _end(self, w: _Worker, kill: bool) -> int:
        """Close ``w``'s pipes and reap it (SIGKILL first when ``kill``); its wait status."""
        self.workers.pop(w.results, None)
        os.close(w.tasks)
        os.close(w.results)
        if kill:
            with contextlib.suppress(ProcessLookupError):
                os.kill(w.pid, signal.SIGKILL)
        return os.waitpid(w.pid, 0)[1]

    # -- the work --------------------------------------------------------------------------

    def map_unordered(self, tasks: Iterable[T]) -> Iterator[R]:
        """``fn(task)`` for every task, as they finish. ``tasks`` is drawn from as workers
        fall idle (at most ``depth`` tasks each in flight, a result read before the next is
        handed out), so a generator of 100,000 tasks is never held whole, nor are results
        queued here."""
        source = enumerate(tasks)
        todo: deque[tuple[int, T]] = deque()  # tasks taken back from a worker found dead
        made: list[Any] = [None, None]  # the frame of todo[0], once made: (item, parts)

        def more() -> bool:
            if not todo:
                todo.extend(itertools.islice(source, 1))
            return bool(todo)

        def parts(item: tuple[int, T]) -> list[bytes | memoryview]:
            if made[0] is not item:
                made[:] = [item, _task_parts(item)]
            frame: list[bytes | memoryview] = made[1]
            return frame

        running = 0
        with selectors.DefaultSelector() as sel:
            for w in self.workers.values():
                sel.register(w.results, selectors.EVENT_READ)
            while more() or running:
                for w in list(self.workers.values()):
                    while len(w.held) < self.depth and more():
                        item = todo[0]
                        task_frame = parts(item)
                        if w.held and sum(map(len, task_frame)) > w.queued_max:
                            break  # for an idle worker: this one may block on its result
                        try:
                            _write_parts(w.tasks, task_frame)
                        except BrokenPipeError:  # it died (seen below): not its task
                            break
                        made[:] = [None, None]
                        todo.popleft()
                        w.held.append(item)
                        running += 1
                for key, _ in sel.select():
                    w = self.workers[key.fd]
                    frame = _read_frame(w.results)
                    if frame is None:
                        sel.unregister(w.results)
                        held = list(w.held)
                        running -= len(held)
                        why = describe_exit(self._end(w, kill=False))
                        # the tasks it had not begun, to the next worker, in their order
                        todo.extendleft(reversed(held[1:]))
                        if more() or not self.workers:
                            sel.register(self._start().results, selectors.EVENT_READ)
                        if held:
                            yield self.died(held[0][1], f"worker process {w.pid} {why}")
                        continue
                    _, ok, value = pickle.loads(frame)
                    w.held.popleft()  # tasks are run, and answered, in the order handed
                    running -= 1
                    if not ok:
                        raise value
                    yield value
