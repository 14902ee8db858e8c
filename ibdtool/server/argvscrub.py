"""Blank a password out of this process's command line, as the mysql clients do.

``-pSECRET`` is visible to every user of the machine in ``/proc/PID/cmdline`` (``ps``) for as
long as the process runs. The clients overwrite the argument in place right after reading it;
Python keeps its own copy of ``argv``, so the kernel's copy is overwritten here through
``/proc/self/mem`` between ``arg_start`` and ``arg_end`` (``/proc/self/stat`` fields 48-49).
Where that is not possible (no procfs, a hardened kernel) nothing happens: the warning the
command prints already said the password can be seen.
"""

from __future__ import annotations

import contextlib


def scrub(arg: str, secret: str) -> bool:
    """Overwrite ``secret`` with ``x`` where it ends the whole argument ``arg``
    (``-pSECRET``, ``--password=SECRET``) in this process's command line; True if done."""
    if not secret or not arg.endswith(secret):
        return False
    whole = b"\0" + arg.encode() + b"\0"
    keep = len(whole) - 1 - len(secret.encode())
    try:
        with open("/proc/self/stat", "rb") as fh:
            stat = fh.read()
        fields = stat[stat.rindex(b")") + 2 :].split()
        start, end = int(fields[48 - 3]), int(fields[49 - 3])  # fields 48-49, state is 3
        with open("/proc/self/mem", "r+b", buffering=0) as mem:
            mem.seek(start)
            args = b"\0" + mem.read(end - start)  # each argument then lies between NULs
            found = False
            pos = args.find(whole)
            while pos >= 0:
                mem.seek(start + pos - 1 + keep)
                mem.write(b"x" * len(secret.encode()))
                found = True
                pos = args.find(whole, pos + len(whole) - 1)
            return found
    except (OSError, ValueError, IndexError):
        return False


def scrub_quietly(arg: str, secret: str) -> None:
    with contextlib.suppress(Exception):
        scrub(arg, secret)


__all__ = ["scrub", "scrub_quietly"]
