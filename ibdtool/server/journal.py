"""A JSON-lines journal of a migration batch, so that an interrupted batch resumes.

One object per line, appended and fsynced as things happen: ``batch_start`` (target, tables,
server), ``table_start``, ``statement`` (sql, seconds, error), ``global_set`` /
``global_restored`` (a server-wide setting we changed and put back), ``table_converted`` (the
statements done, the pages not all written yet: verified later in the batch), ``table_done``
(sizes before/after, verification), ``table_verified`` (a ``migrate --verify`` pass),
``table_failed``, ``table_skipped``, ``batch_done``. Nothing secret
is ever written: statements and connection descriptions carry no password.

On the next run with the same journal, :meth:`Journal.state` says which tables are done for the
target (they are skipped) and which global changes were never restored (a crashed run): the
executor puts those back before it starts.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ibdtool.errors import InputError
from ibdtool.server.progress import GlobalChange


def open_for_append(path: Path) -> int:
    """``path`` opened to append, created 0600 if missing; refused when it is a symbolic link,
    not a regular file, hard-linked elsewhere or another user's (a journal may sit in a
    directory others write, and root's appends must not land in a file someone planted)."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(f"{path}: a symbolic link; not written through") from None
        raise InputError(f"{path}: cannot write the journal: {exc.strerror}") from None
    st = os.fstat(fd)
    why = None
    if not stat.S_ISREG(st.st_mode):
        why = "not a regular file"
    elif st.st_nlink != 1:
        why = f"has {st.st_nlink} hard links"
    elif st.st_uid != os.geteuid():
        why = f"owned by uid {st.st_uid}, not by this user"
    if why is not None:
        os.close(fd)
        raise InputError(f"{path}: {why}; not written to")
    return fd


@dataclass
class JournalState:
    done: dict[str, dict[str, Any]] = field(default_factory=dict)  # table -> table_done record
    failed: dict[str, str] = field(default_factory=dict)  # table -> last error
    started: set[str] = field(default_factory=set)  # started but neither done nor failed
    #: converted tables whose pages were never verified (a later ``--verify`` proves them)
    unverified: set[str] = field(default_factory=set)
    unrestored: list[GlobalChange] = field(default_factory=list)
    batches: int = 0


class Journal:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            raise InputError(f"{self.path}: is a directory, not a journal file")

    def state(self, target: str) -> JournalState:
        """What earlier runs recorded for ``target``."""
        st = JournalState()
        if not self.path.exists():
            return st
        pending: dict[tuple[str, str], GlobalChange] = {}
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise InputError(f"{self.path}: cannot read the journal: {exc.strerror}") from None
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                if n == len(lines):
                    break  # a torn last line from a crash
                raise InputError(f"{self.path}:{n}: not a journal line") from None
            event = rec.get("event")
            table = rec.get("table")
            if event == "batch_start":
                st.batches += 1
            elif event == "global_set":
                ch = GlobalChange(**rec["change"])
                pending[(ch.kind, ch.name)] = ch
            elif event == "global_restored":
                ch = GlobalChange(**rec["change"])
                pending.pop((ch.kind, ch.name), None)
            if rec.get("target") != target or not table:
                continue
            if event == "table_start":
                st.started.add(table)
            elif event in ("table_done", "table_skipped", "table_converted"):
                st.done[table] = rec
                st.started.discard(table)
                st.failed.pop(table, None)
                if event == "table_skipped" or rec.get("verified") is True:
                    st.unverified.discard(table)
                else:
                    st.unverified.add(table)
            elif event == "table_verified":
                if rec.get("verified") is True:
                    st.unverified.discard(table)
            elif event == "table_failed":
                st.failed[table] = str(rec.get("error"))
                st.started.discard(table)
        st.unrestored = list(pending.values())
        return st

    def write(self, event: str, **fields: Any) -> None:
        rec = {"ts": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "event": event, **fields}
        line = json.dumps(rec, default=str, sort_keys=False) + "\n"
        fd = open_for_append(self.path)
        try:
            os.write(fd, line.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
