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
import re
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ibdtool.errors import InputError
from ibdtool.fs import read_capped
from ibdtool.parsers.jsontext import JsonTextError, load_json
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


#: a journal line is one event (the longest is a table_done with its sizes and checks)
MAX_LINE_BYTES = 1 << 20
#: a journal of a thousand batches of a thousand tables is a few hundred MB short of this
MAX_BYTES = 256 << 20
#: what a global_set line may name: the kinds the executor changes, a variable's identifier
CHANGE_KINDS = ("variable", "consumer", "instrument")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_TEXT_MAX = 256


class Malformed(ValueError):
    """A journal record of the wrong shape (a JSON object, but not one ibdtool writes)."""


def _text(rec: dict[str, Any], key: str, required: bool = False) -> str | None:
    value = rec.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise Malformed(f'"{key}" is a JSON {type(value).__name__}, not a string')
    return value


def _fields(rec: dict[str, Any]) -> tuple[str, str | None, str | None, GlobalChange | None]:
    """``event``, ``table``, ``target`` and (for the global lines) the change, type-checked."""
    event = _text(rec, "event", required=True)
    assert event is not None
    table = _text(rec, "table")
    target = _text(rec, "target")
    change = None
    if event in ("global_set", "global_restored"):
        raw = rec.get("change")
        if not isinstance(raw, dict) or set(raw) != {"kind", "name", "previous", "value"}:
            raise Malformed('"change" is not an object of kind, name, previous and value')
        values = {k: _text(raw, k, required=True) for k in ("kind", "name", "previous", "value")}
        if any(len(v or "") > _TEXT_MAX for v in values.values()):
            raise Malformed(f'a "change" field longer than {_TEXT_MAX} characters')
        if values["kind"] not in CHANGE_KINDS:
            raise Malformed(f'"change" of kind {values["kind"]!r}, not one of {CHANGE_KINDS}')
        if values["kind"] == "variable" and not _IDENTIFIER.fullmatch(values["name"] or ""):
            raise Malformed(f"{values['name']!r} is not a server variable's name")
        change = GlobalChange(**values)  # type: ignore[arg-type]
    return event, table, target, change


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
        """What earlier runs recorded for ``target``. The journal is input like any other: a
        line that is not a journal record of the right types is one :class:`InputError`
        naming the journal and the line (a torn last line, from a crash, is ignored)."""
        st = JournalState()
        if not os.path.lexists(self.path):
            return st
        pending: dict[tuple[str, str], GlobalChange] = {}
        lines = self._read().split(b"\n")
        while lines and not lines[-1].strip():
            lines.pop()
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                rec = load_json(line, MAX_LINE_BYTES, dict)
                event, table, rec_target, change = _fields(rec)
            except (JsonTextError, Malformed) as exc:
                if n == len(lines) and isinstance(exc, JsonTextError):
                    break  # a torn last line from a crash
                raise InputError(f"{self.path}:{n}: not a journal line: {exc}") from None
            if event == "batch_start":
                st.batches += 1
            elif event == "global_set" and change is not None:
                pending[(change.kind, change.name)] = change
            elif event == "global_restored" and change is not None:
                pending.pop((change.kind, change.name), None)
            if rec_target != target or not table:
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

    def _read(self) -> bytes:
        """The journal's bytes: a regular file of this user's, at most :data:`MAX_BYTES` (its
        ``global_set`` lines decide what is put back on a server, so a file planted by someone
        else is refused before it is read, as it would be before it is written)."""
        return read_capped(self.path, MAX_BYTES, "journal", own=True)

    def write(self, event: str, **fields: Any) -> None:
        rec = {"ts": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "event": event, **fields}
        line = json.dumps(rec, default=str, sort_keys=False) + "\n"
        fd = open_for_append(self.path)
        try:
            os.write(fd, line.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
