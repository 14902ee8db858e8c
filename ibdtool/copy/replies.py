"""What ibdtool accepts from a remote agent: the shape of every reply, declared once, checked here.

The agent (:mod:`ibdtool.copy.agent`) runs on a host ibdtool does not trust: a compromised
database host can answer anything. Every control message it sends is checked against its
shape below (:func:`check_reply`) before any field is read — types, ranges (sizes from 0 to the
largest file, block sizes from 512 bytes to 1 GiB, mode bits, ids), lengths of strings and
lists, file names that are one plain name — and a reply that does not fit is a
:class:`~ibdtool.copy.agent.ProtocolError` the caller turns into one line naming the host.
Frames, range maps and data frames are bounded and checked where they are read
(:func:`ibdtool.copy.agent.read_frame`, :func:`~ibdtool.copy.agent.unpack_ranges`,
:func:`~ibdtool.copy.agent.receive_stream`); a reply with ``ok`` false is a
:class:`~ibdtool.copy.agent.RemoteFailed` whose message is one printable line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ibdtool.copy import agent

#: a check of one value; ``where`` names it in the message of a misfit, or is None: the
#: first pass of :func:`check_reply`, which makes no name (a reply that fits, nearly every
#: one, costs no string), and on a misfit runs again with names for the message
Shape = Callable[[Any, "str | None"], None]

MAX_OFF = 2**63 - 1  # off_t: no file is larger, no offset further
MAX_TEXT = 4096
MAX_LIST = 1 << 20  # items of a list in a reply
#: tablespaces (and folders it could not list) a batch of a walk may hold: the reader asks
#: for fewer (``batch``) and checks the count against its request
MAX_WALK_BATCH = 1 << 16


class _Misfit(agent.ProtocolError):
    """A misfit found by the first pass (no names): :func:`check_reply` runs again to name it."""


def _fail(where: str | None, why: str) -> agent.ProtocolError:
    if where is None:
        return _Misfit(why)
    return agent.ProtocolError(f"a reply of the wrong shape: {where or 'the message'} {why}")


def integer(lo: int, hi: int) -> Shape:
    def check_int(v: Any, where: str | None) -> None:
        if type(v) is not int or not lo <= v <= hi:
            raise _fail(where, f"is not a whole number from {lo} to {hi}")

    return check_int


def boolean(v: Any, where: str | None) -> None:
    if type(v) is not bool:
        raise _fail(where, "is not true or false")


def true(v: Any, where: str | None) -> None:
    if v is not True:
        raise _fail(where, "is not true")


def text(limit: int = MAX_TEXT) -> Shape:
    """A string: valid Unicode (no lone surrogates), no NUL, at most ``limit`` characters."""

    def check_text(v: Any, where: str | None) -> None:
        if type(v) is not str or len(v) > limit or "\0" in v:
            raise _fail(where, f"is not a string of at most {limit} characters")
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            raise _fail(where, "is not valid Unicode") from None

    return check_text


def path_text(v: Any, where: str | None) -> None:
    """A path as the remote's Python names it: a string without NUL, at most 4 times
    ``PATH_MAX`` characters, valid Unicode but for the lone surrogates U+DC80–U+DCFF that stand
    for bytes that are not UTF-8 (``surrogateescape``: a file name in Latin-1 on a UTF-8
    system), which go back to the agent as they came and are escaped where shown, as a local
    report's paths are."""
    if type(v) is not str or len(v) > 4 * MAX_TEXT or "\0" in v:
        raise _fail(where, f"is not a path of at most {4 * MAX_TEXT} characters")
    try:
        v.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raise _fail(where, "is not a path (a surrogate no file name has)") from None


def file_name(v: Any, where: str | None) -> None:
    """One plain name: not empty, not ``.`` or ``..``, no ``/``, no control characters."""
    text(255)(v, where)
    if v in ("", ".", "..") or "/" in v or not v.isprintable():
        raise _fail(where, f"is not a plain file name ({agent.one_line(v, 80)!r})")


def optional(shape: Shape) -> Shape:
    def check_optional(v: Any, where: str | None) -> None:
        if v is not None:
            shape(v, where)

    return check_optional


def list_of(shape: Shape, limit: int = MAX_LIST) -> Shape:
    def check_list(v: Any, where: str | None) -> None:
        if type(v) is not list or len(v) > limit:
            raise _fail(where, f"is not a list of at most {limit} items")
        if where is None:
            for item in v:
                shape(item, None)
            return
        for i, item in enumerate(v):
            shape(item, f"{where}[{i}]")

    return check_list


def row(*shapes: Shape) -> Shape:
    """A list of exactly ``len(shapes)`` items, each of its shape."""

    def check_row(v: Any, where: str | None) -> None:
        if type(v) is not list or len(v) != len(shapes):
            raise _fail(where, f"is not a list of {len(shapes)} items")
        if where is None:
            for shape, item in zip(shapes, v, strict=True):
                shape(item, None)
            return
        for i, (shape, item) in enumerate(zip(shapes, v, strict=True)):
            shape(item, f"{where}[{i}]")

    return check_row


def obj(**fields: Shape) -> Shape:
    """An object with every one of ``fields`` (others are ignored, never read)."""

    def check_obj(v: Any, where: str | None) -> None:
        if type(v) is not dict:
            raise _fail(where, "is not an object")
        if where is None:
            for key, shape in fields.items():
                if key not in v:
                    raise _fail(None, "is missing")
                shape(v[key], None)
            return
        for key, shape in fields.items():
            if key not in v:
                raise _fail(f"{where}.{key}".lstrip("."), "is missing")
            shape(v[key], f"{where}.{key}".lstrip("."))

    return check_obj


SIZE = integer(0, MAX_OFF)
BLOCK = integer(agent.MIN_BLOCK, 1 << 30)
NS = integer(-(2**63), 2**63 - 1)
ID = integer(0, 2**32 - 1)
CRC = integer(0, 2**32 - 1)
COUNT = integer(0, 2**32 - 1)
NOTES = list_of(text(), 100)
#: a tablespace has at most 2^32 pages of at most 64 KiB: a larger size is a lie (a report
#: would walk its pages of holes for hours)
TABLESPACE_SIZE = integer(0, 2**32 * 65536)

#: a batch of a ``walk``: ``[path, size, st_size or null, allocated or null]`` per
#: tablespace, ``[folder, why]`` per folder that could not be listed, and whether more follow
WALK_BATCH: dict[str, Shape] = {
    "files": list_of(row(path_text, SIZE, optional(SIZE), optional(SIZE)), MAX_WALK_BATCH),
    "unlisted": list_of(row(path_text, text()), MAX_WALK_BATCH),
    "more": boolean,
}

#: every reply the local end reads, by name: what the agent's request handler writes
SHAPES: dict[str, Shape] = {
    # on start: the protocol spoken, the codecs the remote python3 has
    "hello": obj(
        ok=true, protocol=integer(agent.PROTOCOL, agent.PROTOCOL), codecs=list_of(text(16), 8)
    ),
    # pull, ``send``: the file's facts (the name is checked, never used: the command line's is)
    "source": obj(
        ok=true,
        name=file_name,
        size=SIZE,
        mode=integer(0, 0o7777),
        uid=ID,
        gid=ID,
        atime_ns=NS,
        mtime_ns=NS,
        allocated=SIZE,
        fs_block=BLOCK,
        identity=obj(size=SIZE, mtime_ns=NS, ino=integer(0, 2**64 - 1), dev=integer(0, 2**64 - 1)),
    ),
    # pull with --resume, ``sums``: the CRC-32 of each window asked for
    "sums": obj(ok=true, crcs=list_of(CRC, 1 << 24)),
    # push, ``receive``: where the file goes there, its block size and free space
    "receiving": obj(ok=true, dest=text(), fs_block=BLOCK, free=SIZE),
    # push with --resume: the receiver asks for the source's sums of ``sums`` windows
    "asks_sums": obj(ok=true, sums=COUNT),
    # push, after the plan: the window to start from
    "started": obj(ok=true, start=COUNT, notes=NOTES),
    # push, each window the receiver made durable and verified
    "window": obj(ok=true, window=COUNT, allocated=SIZE),
    # push, the file renamed into place
    "done": obj(ok=true, done=true, dest=text(), allocated=SIZE, notes=NOTES, bytes_written=SIZE),
    # report, ``walk``: the root, whether it is a folder and a data directory, and the first
    # batch of the listing (:data:`WALK_BATCH`)
    "walk": obj(ok=true, root=path_text, dir=boolean, datadir=boolean, **WALK_BATCH),
    # report, ``walk_more``: the next batch
    "walk_more": obj(ok=true, **WALK_BATCH),
    # report, ``open``: a handle and the file's allocation facts (M, its data map, follows)
    "open": obj(
        ok=true,
        handle=integer(1, 2**31),
        size=TABLESPACE_SIZE,
        allocated=SIZE,
        fs_block=BLOCK,
        fiemap=optional(row(SIZE, SIZE, SIZE, SIZE)),
    ),
    # report, ``size``: the file's size now
    "size": obj(ok=true, size=TABLESPACE_SIZE),
    # report, ``slurp``: an R frame follows
    "slurp": obj(ok=true),
    # report, ``fetch``: whether the file is sent whole (no larger than asked), and its size
    "fetch": obj(ok=true, whole=boolean, size=TABLESPACE_SIZE),
    # report, ``fetch`` of a file sent whole: ``open``'s facts, the length of each small file
    # asked for beside it (null: not read) and whether the file has no hole; M (unless dense:
    # the map is [0, size)), D frames, E, then an R frame each follow
    "fetched": obj(
        allocated=SIZE,
        fs_block=BLOCK,
        fiemap=optional(row(SIZE, SIZE, SIZE, SIZE)),
        siblings=list_of(optional(integer(0, agent.FRAME_LIMITS[b"R"])), 8),
        dense=boolean,
    ),
}


def check_reply(name: str, msg: dict[str, Any]) -> dict[str, Any]:
    """``msg`` if it is a successful reply of shape ``name``; a reply with ``ok`` false is a
    :class:`~ibdtool.copy.agent.RemoteFailed` (its message one line), any other misfit a
    :class:`~ibdtool.copy.agent.ProtocolError`."""
    agent.expect_ok(msg)
    shape = SHAPES[name]
    try:
        shape(msg, None)
    except _Misfit:
        shape(msg, "")  # the same checks again, naming the first misfit
        raise  # never reached: a misfit of the first pass is one of the second
    return msg


def reply_failure(msg: dict[str, Any]) -> str | None:
    """The one-line message of a reply with ``ok`` false, None for a successful one."""
    try:
        agent.expect_ok(msg)
    except agent.AgentError as exc:
        return str(exc)
    return None
