"""Who holds a file: the processes that have it open, and the servers whose data directory
holds it (``/proc/PID/fd``, ``/proc/PID/fdinfo``, ``/proc/PID/cwd``).

``copy --in-place`` asks before re-punching a tablespace, ``free`` before truncating a dropped
one: any process holding it open for writing (MariaDB 10.11 takes no lock; ``free`` counts
readers too), and a ``mysqld``/``mariadbd`` whose working directory, its data directory,
contains the file (MySQL 8.0 closes idle tablespaces). :func:`lock_exclusive` is innochecksum's
fcntl lock test (MySQL 5.7 locks open tablespaces).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

#: process names of the servers whose data directory is their working directory
SERVER_NAMES = frozenset({"mysqld", "mariadbd", "mysqld-debug", "mariadbd-debug"})


@dataclass(frozen=True)
class User:
    pid: int
    name: str
    how: str  # "open" (for writing), "reading", "datadir"

    def describe(self) -> str:
        if self.how == "datadir":
            return f"{self.name} (pid {self.pid}) runs on the data directory holding it"
        return f"{self.name} (pid {self.pid}) has it open for {self.how}"


def _proc_name(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def _iter_pids() -> Iterator[str]:
    try:
        names = os.listdir("/proc")
    except OSError:
        return
    me = str(os.getpid())
    for name in names:
        if name.isdigit() and name != me:
            yield name


def _open_for_writing(pid: str, fd: str) -> bool:
    """The descriptor's access mode (``/proc/PID/fdinfo``): O_WRONLY or O_RDWR."""
    try:
        for line in Path(f"/proc/{pid}/fdinfo/{fd}").read_text().splitlines():
            if line.startswith("flags:"):
                return int(line.split()[1], 8) & 0o3 != os.O_RDONLY
    except (OSError, ValueError, IndexError):
        pass
    return True  # unknown: assume the worst


def users_of(
    path: str | os.PathLike[str], *, readers: bool = False, servers: bool = True
) -> tuple[list[User], bool]:
    """Processes that have ``path`` open for writing (``readers``: open at all), or
    (``servers``) are a server whose data directory holds it. Re-punching leaves out readers:
    punching zero ranges never changes what they read; freeing a file counts them.

    Returns the users and whether every process could be examined (without root, other
    users' processes cannot).
    """
    st = os.stat(path)
    target = (st.st_dev, st.st_ino)
    ancestors = {Path(path).resolve().parent, Path(path).resolve().parent.parent}
    users: list[User] = []
    complete = True
    for pid in _iter_pids():
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except PermissionError:
            complete = False
            continue
        except OSError:
            continue  # the process is gone
        for fd in fds:
            try:
                fst = os.stat(f"{fd_dir}/{fd}")
            except OSError:
                continue
            if (fst.st_dev, fst.st_ino) == target and (readers or _open_for_writing(pid, fd)):
                how = "writing" if _open_for_writing(pid, fd) else "reading"
                users.append(User(int(pid), _proc_name(pid), how))
                break
        else:
            name = _proc_name(pid)
            if servers and name in SERVER_NAMES:
                try:
                    cwd = Path(os.readlink(f"/proc/{pid}/cwd")).resolve()
                except PermissionError:
                    complete = False
                    continue
                except OSError:
                    continue  # the server exited while we looked: it holds nothing now
                if cwd in ancestors:
                    users.append(User(int(pid), name, "datadir"))
    return users, complete


def lock_exclusive(fd: int) -> bool:
    """Take an fcntl write lock on the whole file, as innochecksum does; False if held."""
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True
