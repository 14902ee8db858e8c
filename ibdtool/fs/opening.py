"""Open an input file read-only, refusing anything but a regular file before reading a byte.

ibdtool runs as root over data directories, so a path may name a FIFO, a socket or a device.
Opening a FIFO read-only blocks until a writer comes, and reading a device may never end, so
the open itself uses ``O_NONBLOCK`` (and ``O_NOCTTY``); the verdict comes from ``fstat`` of the
open descriptor, so a file swapped for a FIFO between a check and the open is still refused.
``O_NONBLOCK`` is then cleared: a regular file reads the same either way. ``O_NOATIME`` keeps
reads from touching the file's access time where the kernel allows it (the owner or root).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat

from ibdtool.errors import InputError

_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def not_regular(path: str | os.PathLike[str], mode: int) -> InputError:
    """The one-line refusal for a non-regular file of ``mode``."""
    if stat.S_ISDIR(mode):
        return InputError(f"{path}: is a directory")
    kind = next((name for test, name in _KINDS if test(mode)), f"mode {stat.filemode(mode)}")
    return InputError(f"{path}: not a regular file ({kind})")


def open_nonblocking(path: str | os.PathLike[str]) -> int:
    """A read-only descriptor opened without waiting (``O_NONBLOCK``): raises ``OSError``.

    The caller must ``fstat`` it before reading; :func:`open_regular` does all of that.
    """
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY
    noatime = getattr(os, "O_NOATIME", 0)
    if noatime:
        try:
            return os.open(path, flags | noatime)
        except PermissionError as exc:  # O_NOATIME needs ownership (EPERM); retry without
            if exc.errno != errno.EPERM:
                raise
    return os.open(path, flags)


def open_regular(path: str | os.PathLike[str]) -> tuple[int, os.stat_result]:
    """A blocking read-only descriptor of the regular file ``path`` and its ``fstat``.

    Every failure is an :class:`InputError` with a one-line message.
    """
    try:
        fd = open_nonblocking(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket, or a device with no driver behind it
            raise InputError(f"{path}: not a regular file (a socket or device)") from None
        raise InputError(f"{path}: cannot open: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise not_regular(path, st.st_mode)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_capped(
    path: str | os.PathLike[str], limit: int, what: str = "file", own: bool = False
) -> bytes:
    """The whole of the regular file ``path`` named by an option (a journal, a keyring, a
    ``--schema @FILE``, a ``--compare`` report, an option file), refused with one line when it
    is not a regular file or holds more than ``limit`` bytes: ``/dev/zero``, a FIFO or a
    runaway file never costs more than ``limit`` bytes of memory. ``what`` names it in the
    message (``"keyring"``). ``own``: also refuse a symbolic link and a file another user
    owns (a file whose content decides what ibdtool does next, like a journal)."""
    if own:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise InputError(f"{path}: a symbolic link; not read through") from None
            raise InputError(f"{path}: cannot read the {what}: {exc.strerror}") from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise not_regular(path, st.st_mode)
        if st.st_uid != os.geteuid():
            os.close(fd)
            raise InputError(f"{path}: owned by uid {st.st_uid}, not by this user; not read")
    else:
        fd, st = open_regular(path)
    try:
        if st.st_size > limit:
            raise InputError(f"{path}: {st.st_size:,} bytes, more than a {what} holds ({limit:,})")
        chunks = []
        got = 0
        while got <= limit:  # the file may grow after fstat: read at most limit + 1 bytes
            chunk = os.read(fd, min(1 << 20, limit + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        if got > limit:
            raise InputError(f"{path}: more than a {what} holds ({limit:,} bytes)")
        return b"".join(chunks)
    except OSError as exc:
        raise InputError(f"{path}: cannot read the {what}: {exc.strerror}") from None
    finally:
        os.close(fd)
