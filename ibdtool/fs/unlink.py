"""A DROP that does not stall: keep the file alive past the DROP, then free it in paced steps.

Dropping a table frees every extent of its file in the statement's thread (on ext4 with
``discard``, a discard each): 65,000 extents held a DROP TABLE for 3.7 s in issue 22's
measurements. The cost is paid when the file's *last* link goes, so:

1. :func:`drop_prepare` makes a hard link to the table's file before the DROP (``t.ibd`` →
   ``t.ibd.ibdtool-drop``, beside it or in a directory given on the same filesystem). The
   DROP then only removes a name: milliseconds.
2. :func:`free_in_steps` later frees the kept file from its end in bounded steps: each ``ftruncate``
   cuts at most ``extents`` extents (FIEMAP records, counted here) and is followed by an
   ``fsync``, so that the step also waits for the journal commit that carries its discards —
   the step's stall is then all of its cost, measured. Steps are paced (a pause after each),
   the process runs in the idle I/O class (``ioprio_set``, as ``ionice -c3``), and a step
   that took longer than ``max_stall`` halves the next. It is resumable: the file's size is
   the state; run it again and it goes on from the end that is left. At size 0 the name is
   removed.

:func:`free_in_steps` touches only a file the DBA named, that has no other link (a table's file that
was not dropped still has its own name: refused) and that no process holds open, readers
included (:func:`ibdtool.fs.users.users_of`, as ``copy --in-place`` asks); by default only a
name :func:`drop_prepare` made. Nothing here ever writes a byte of data.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import stat
import time
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path

from ibdtool.errors import InputError
from ibdtool.fs.allocation import FIEMAP_BIG_BATCH, iter_fiemap
from ibdtool.fs.users import users_of

DROP_SUFFIX = ".ibdtool-drop"
DEFAULT_STEP_EXTENTS = 256
DEFAULT_PAUSE = 0.2

_IOPRIO_SET = {"x86_64": 251, "aarch64": 30, "i686": 289, "armv7l": 314, "ppc64le": 273}
IOPRIO_WHO_PROCESS, IOPRIO_CLASS_IDLE, IOPRIO_CLASS_SHIFT = 1, 3, 13


@dataclass(frozen=True)
class DropPrepared:
    path: str
    link: str
    extents: int | None
    size: int


def _regular(path: str | os.PathLike[str]) -> os.stat_result:
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(st.st_mode):
        raise InputError(f"{path}: a symbolic link; name the file itself")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{path}: not a regular file")
    return st


def drop_prepare(
    path: str | os.PathLike[str], into: str | os.PathLike[str] | None = None
) -> DropPrepared:
    """Hard-link ``path`` as ``<name>.ibdtool-drop`` in its directory (or ``into``, which
    must be on the same filesystem). Never replaces a name that exists."""
    st = _regular(path)
    src = Path(path)
    directory = Path(into) if into is not None else src.parent
    link = directory / (src.name + DROP_SUFFIX)
    try:
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise InputError(f"{directory}: {exc.strerror or exc}") from None
    try:
        os.link(src, link.name, dst_dir_fd=dfd, follow_symlinks=False)
    except FileExistsError:
        raise InputError(f"{link}: already exists; not replaced") from None
    except OSError as exc:
        if exc.errno == errno.EXDEV:
            raise InputError(f"{directory}: not on the filesystem of {src}") from None
        raise InputError(f"{link}: {exc.strerror or exc}") from None
    finally:
        os.close(dfd)
    try:
        fd = os.open(link, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        try:
            batches = iter_fiemap(fd, FIEMAP_BIG_BATCH)
            # counted a FIEMAP call at a time: a page-compressed table has an extent a page
            found = None if batches is None else sum(sum(1 for _ in one) for one in batches)
        finally:
            os.close(fd)
    except OSError:
        found = None
    return DropPrepared(str(src), str(link), found, st.st_size)


def idle_io() -> bool:
    """Put this process in the idle I/O class (``ionice -c3``); False where it cannot."""
    nr = _IOPRIO_SET.get(platform.machine())
    if nr is None:
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    prio = IOPRIO_CLASS_IDLE << IOPRIO_CLASS_SHIFT
    return bool(libc.syscall(nr, IOPRIO_WHO_PROCESS, 0, prio) == 0)


@dataclass(frozen=True)
class FreeStep:
    """One bounded truncation: what it freed and how long it held the caller."""

    number: int
    extents: int
    size_before: int
    size_after: int
    truncate_s: float
    sync_s: float
    #: the step's start on the monotonic clock (for pacing checks)
    started: float

    @property
    def stall(self) -> float:
        """The step's whole cost: the truncate and the commit carrying its discards."""
        return self.truncate_s + self.sync_s


def open_to_free(path: str | os.PathLike[str], any_name: bool = False) -> int:
    """Open ``path`` for :func:`free_in_steps` after every check in the module doc; the fd."""
    st = _regular(path)
    if not any_name and not str(path).endswith(DROP_SUFFIX):
        raise InputError(
            f"{path}: not a name `ibdtool drop-prepare` made (*{DROP_SUFFIX}); --any-name frees "
            "another file the DBA names"
        )
    if st.st_nlink > 1:
        raise InputError(
            f"{path}: has {st.st_nlink} links: another name (the table's file?) still holds it; "
            "DROP the table first"
        )
    users, complete = users_of(path, readers=True, servers=False)
    if users:
        raise InputError(f"{path}: {users[0].describe()}; not freed")
    if not complete:
        raise InputError(
            f"{path}: cannot see other users' processes to make sure none has it open; run as root"
        )
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    now = os.fstat(fd)
    if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino) or now.st_nlink > 1:
        os.close(fd)
        raise InputError(f"{path}: changed while it was checked; not freed")
    return fd


def free_in_steps(
    path: str | os.PathLike[str],
    *,
    extents: int = DEFAULT_STEP_EXTENTS,
    pause: float = DEFAULT_PAUSE,
    max_stall: float | None = None,
    max_steps: int | None = None,
    any_name: bool = False,
) -> Iterator[FreeStep]:
    """Free ``path`` from its end, at most ``extents`` extents a step (see the module doc);
    yields each :class:`FreeStep`. The name is removed once the file is empty (not when stopped
    by ``max_steps``: run again to go on)."""
    fd = open_to_free(path, any_name)
    try:
        batches = iter_fiemap(fd, FIEMAP_BIG_BATCH)
        # logical starts of the extents, in file order (the file is nobody else's: it stays
        # so), 8 bytes each: a page-compressed table has an extent a page
        starts: array[int] = array("Q")
        for one in batches or ():
            starts.extend(map(itemgetter(0), one))
        by_bytes = batches is None
        per_step = max(1, extents)
        number = 0
        size = os.fstat(fd).st_size
        while size > 0 and (max_steps is None or number < max_steps):
            while starts and starts[-1] >= size:
                starts.pop()
            take = min(per_step, len(starts))
            cut = starts[-take] if take and take < len(starts) else 0
            if by_bytes:  # no FIEMAP here: a bounded number of bytes instead (1 MiB an extent)
                cut = max(0, size - per_step * (1 << 20))
            started = time.monotonic()
            t0 = time.perf_counter()
            os.ftruncate(fd, cut)
            t1 = time.perf_counter()
            os.fsync(fd)
            t2 = time.perf_counter()
            del starts[len(starts) - take :]
            number += 1
            step = FreeStep(number, take, size, cut, t1 - t0, t2 - t1, started)
            yield step
            size = cut
            if max_stall is not None and step.stall > max_stall and per_step > 1:
                per_step = max(1, per_step // 2)
            if size > 0 and pause > 0:
                time.sleep(pause)
        if size == 0:
            st, now = os.fstat(fd), os.lstat(path)
            if (st.st_dev, st.st_ino) == (now.st_dev, now.st_ino):
                os.unlink(path)
    finally:
        os.close(fd)
