"""The server's files as seen from this machine, when its datadir is local.

Finds the datadir (the server's ``@@datadir`` or ``--datadir``), a tablespace's file, the
filesystem under it (type from ``/proc/self/mountinfo``, block size and free space from
``statvfs``), whether it can punch holes (a real ``fallocate(PUNCH_HOLE)`` on a temporary file),
and the ``#sql-*`` file a rebuild is writing. Nothing here writes to a server's file.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ibdtool.fs import mount_of

FALLOC_FL_KEEP_SIZE = 0x01
FALLOC_FL_PUNCH_HOLE = 0x02
PROBE_PREFIX = ".ibdtool-punch-probe-"


@dataclass(frozen=True)
class FsInfo:
    """The filesystem holding a path."""

    path: str
    fstype: str | None
    mount_point: str | None
    block_size: int
    free_bytes: int
    total_bytes: int


def local_datadir(path: str | os.PathLike[str] | None) -> Path | None:
    """``path`` if it is a readable directory that looks like an InnoDB datadir, else None."""
    if not path:
        return None
    p = Path(path)
    try:
        if not p.is_dir():
            return None
        names = {q.name for q in p.iterdir()}
    except OSError:
        return None
    if names & {"ibdata1", "mysql", "undo_001", "undo001", "ib_logfile0", "auto.cnf"}:
        return p
    return None


def tablespace_file(datadir: Path | None, path: str | None) -> Path | None:
    """The file of a tablespace from its catalog PATH (``./db/t.ibd`` or absolute)."""
    if not path:
        return None
    p = Path(path)
    if not p.is_absolute():
        if datadir is None:
            return None
        p = datadir / path
    return p if p.is_file() else None


def _mount_of(path: Path) -> tuple[str | None, str | None]:
    """(fstype, mount point) of the mount holding ``path`` (:func:`ibdtool.fs.mount_of`)."""
    m = mount_of(path)
    return (None, None) if m is None else (m.fstype, m.mount_point)


def filesystem(path: str | os.PathLike[str]) -> FsInfo:
    p = Path(path)
    st = os.statvfs(p)
    fstype, mount = _mount_of(p)
    return FsInfo(
        path=str(p),
        fstype=fstype,
        mount_point=mount,
        block_size=st.f_bsize,
        free_bytes=st.f_bavail * st.f_frsize,
        total_bytes=st.f_blocks * st.f_frsize,
    )


@cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong]
    libc.fallocate.restype = ctypes.c_int
    return libc


def punch_hole_supported(directory: str | os.PathLike[str]) -> bool | None:
    """Punch a hole in a two-block temporary file in ``directory`` and see the blocks go.

    True/False when the probe ran; None when it could not (no write access). The file is
    ``.ibdtool-punch-probe-*`` and is removed at once.
    """
    try:
        block = os.statvfs(directory).f_bsize
        fd, name = tempfile.mkstemp(prefix=PROBE_PREFIX, dir=directory)
    except OSError:
        return None
    try:
        os.write(fd, b"\1" * (2 * block))
        os.fsync(fd)
        before = os.fstat(fd).st_blocks
        rc = _libc().fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, block)
        if rc != 0:
            err = ctypes.get_errno()
            if err in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
                return False
            return None
        return os.fstat(fd).st_blocks < before
    except OSError:
        return None
    finally:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(name)


def rebuild_files(schema_dir: Path, before: frozenset[str]) -> list[Path]:
    """``#sql*.ibd`` files in ``schema_dir`` that were not there before the statement began."""
    try:
        entries = list(os.scandir(schema_dir))
    except OSError:
        return []
    return [
        Path(e.path)
        for e in entries
        if e.name.startswith("#sql") and e.name.endswith(".ibd") and e.name not in before
    ]


def sql_files(schema_dir: Path) -> frozenset[str]:
    try:
        return frozenset(e.name for e in os.scandir(schema_dir) if e.name.startswith("#sql"))
    except OSError:
        return frozenset()
