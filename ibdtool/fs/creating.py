"""Creating the files ibdtool writes for the user: new files only, never through a link.

ibdtool is run as root in directories other users can write (a datadir owned by mysql, a shared
ticket directory). Every file it creates for a user — a saved page, a page-map SVG — goes through
:func:`create_new`: the directory is opened once, the name is created relative to it with
``O_CREAT|O_EXCL|O_NOFOLLOW``, so an existing file or a planted symlink is refused, never
overwritten or followed. (``copy`` has its own twin inside the stdlib-only agent it sends to
remote hosts, which cannot import this module; the server journal appends by design.)
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from ibdtool.errors import InputError

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def create_new(path: str | os.PathLike[str], data: bytes, mode: int = 0o644) -> Path:
    """Write ``data`` to ``path``, which must not exist yet. InputError (one line) when the name
    is taken, is a link, or the directory cannot be written."""
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    name = target.name
    if not name or name in (".", ".."):
        raise InputError(f"{path}: not a file name")
    try:
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise InputError(f"{directory}: {exc.strerror or exc}") from None
    try:
        try:
            fd = os.open(name, _FLAGS, mode, dir_fd=dfd)
        except FileExistsError:
            raise InputError(f"{target}: already exists; not overwritten") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise InputError(f"{target}: is a symbolic link; not written through") from None
            raise InputError(f"{target}: {exc.strerror or exc}") from None
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
    finally:
        os.close(dfd)
    return target
