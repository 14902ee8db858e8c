"""``ibdtool report host:path ...``: the report's scan of other hosts, decoded here.

Each host gets one ssh connection running the stdlib-only agent of ``ibdtool copy``
(:class:`ibdtool.copy.remote.AgentSession`: the system ``ssh``, nothing installed there but
``python3``). The agent lists the tablespaces (``walk``, a batch at a time: :class:`Listing`)
and reads bytes; it decodes nothing.
The pages are decoded here by the same engine as a local report — :class:`RemoteFile` is the
:class:`~ibdtool.tablespace.reader.FileSource` of each remote file and
:func:`ibdtool.report.batch.scan_one` does the rest — so the row of a remote file is the row a local
report of it gives, with ``host`` in front.

What crosses the network: each file's allocation facts (``st_size``, ``st_blocks``, block size,
FIEMAP counts, the SEEK_DATA map), then its data ranges once, compressed by the agent (zstd
at its fast level -1 when the remote python3 has it, else zlib); holes never. Page headers
alone would not do: the checksum verdicts need every byte of every page, and a compressed
page's type needs its image.

Hosts are scanned in parallel, one thread each (at most ``parallel`` at once); a host's files
one after the other, as its listing's batches arrive (the next one asked for among the
fetches, so a host's thread holds a batch or two of targets, never the listing). A host's
thread only talks to its agent: a file of up to
:data:`FETCH_WHOLE_BYTES` is fetched whole by one request (``fetch``: its allocation facts, data
ranges and the ``.cfg`` and ``.cfp`` beside it in one reply, :class:`FetchedFile`), up to
:data:`FETCH_AHEAD` requests in flight, and its pages decoded in a pool of worker processes,
one per core as for a local report (:class:`ibdtool.workers.WorkerPool`), its data handed over
as the agent compressed it and inflated there; a bigger file is read and decoded by the thread
as it goes, a range at a time (``open``, ``read``). At most a few fetched files wait for a
worker (a bounded queue), so memory does not grow with the files listed; a fetched file's
frames are held no further than its size (:meth:`RemoteHost.fetched`).

A host that cannot be reached, whose agent does not start or whose
connection breaks is one row (``kind`` ``host``, ``error`` saying why), and so is a path that
does not exist there; the other hosts go on.
"""

from __future__ import annotations

import contextlib
import json
import pickle
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterator
from functools import partial
from operator import attrgetter
from pathlib import Path
from typing import Any

from ibdtool.copy import (
    CODEC_IDS,
    DATA_HEAD,
    DATA_PIECE,
    FRAME,
    MAX_PIECES,
    PIECE,
    WALK_FRAME,
    ZSTD_FAST_LEVEL,
    AgentError,
    AgentSession,
    Codec,
    Interrupted,
    ProtocolError,
    SshConfig,
    available_codecs,
    batch_table,
    check_reply,
    decode_batch,
    one_line,
    parse_json,
    parse_location,
    read_json,
    reply_failure,
    unpack_ranges,
)
from ibdtool.errors import IbdtoolError, InputError
from ibdtool.fs import Allocation, PackedRanges
from ibdtool.report import batch as rp
from ibdtool.tablespace import MAX_CFG_BYTES, cfg_path
from ibdtool.workers import WorkerPool

#: hosts scanned at once when not told
MAX_PARALLEL_HOSTS = 32
#: files up to this size are fetched whole and decoded in a worker process; bigger ones are
#: decoded by their host's thread as they are read (never held whole)
FETCH_WHOLE_BYTES = 16 << 20
#: ``fetch`` requests a host's thread keeps sent ahead of the reply it reads, and their bytes
#: at most: the agent reads the next request while its last reply is on the way, so a file costs
#: no round trip. Requests are small and bounded, so they never fill the pipe to the agent while
#: it waits for us to read its replies (no deadlock).
FETCH_AHEAD = 8
FETCH_AHEAD_BYTES = 16 << 10
#: entries a batch of a listing holds at most (the agent ends one sooner when its JSON reaches
#: :data:`~ibdtool.copy.agent.WALK_BYTES`); the next batch is asked for once fewer than half
#: of one are left to fetch, so its answer comes before they run out
WALK_BATCH = 512
#: each worker's task pipe widened to this (as ssh's is): a fetched file (~125 KB as the agent
#: compressed it) goes to its worker in one write and waits there while the one before is
#: decoded
WORKER_PIPE_BYTES = 1 << 20
#: entries a path's listing may hold in all (a host that lists more is lying: no server has a
#: million tablespaces, and it would keep a report running for days)
MAX_LISTED = 1 << 20


def siblings(path: str) -> list[tuple[str, int]]:
    """The ``.cfg`` and ``.cfp`` beside a tablespace, as the decoder asks for them: path, the
    most bytes read."""
    here = Path(path)
    return [(str(cfg_path(here)), MAX_CFG_BYTES), (str(here.with_suffix(".cfp")), 4096)]


def _without_suffix(path: str) -> str | None:
    """``path`` without its file name's suffix, as :meth:`PurePath.with_suffix` cuts it, for a
    path already as ``Path`` writes it (a :class:`~ibdtool.report.batch.Target`'s); None for
    one it would refuse or write otherwise."""
    name = path.rpartition("/")[2]
    if not name or name in (".", "..") or path.endswith("/"):
        return None
    i = name.rfind(".")
    return path[: len(path) - len(name) + i] if 0 < i < len(name) - 1 else path


#: a ``fetch`` request's text around its three paths (:meth:`RemoteHost.fetch_request`)
_FETCH_TEMPLATE = (
    '{"op": "fetch", "path": %s, "max": %d, "codec": %s, "level": %d, '
    '"siblings": [[%s, %d], [%s, %d]]}'
)


Row = dict[str, Any]


def parse_hosts(paths: tuple[str, ...] | list[str]) -> list[tuple[str, list[str]]] | None:
    """``[(host, [path, ...]), ...]`` in the order given, or None when no path names a host.

    A local path among remote ones is refused: every row of a fleet report names its host.
    """
    locations = [parse_location(p) for p in paths]
    if not any(loc.host for loc in locations):
        return None
    local = [str(loc) for loc in locations if not loc.host]
    if local:
        raise InputError(
            f"{local[0]}: a local path among host:path ones; name this host too "
            "(localhost:PATH reads it through ssh like the others)"
        )
    groups: dict[str, list[str]] = {}
    for loc in locations:
        assert loc.host is not None
        found = groups.setdefault(loc.host, [])
        if loc.path not in found:
            found.append(loc.path)
    return list(groups.items())


def host_error_row(host: str, paths: list[str], message: str) -> Row:
    """The one row of a host (or a path on it) that could not be scanned."""
    return {
        "host": host,
        "path": " ".join(paths),
        "name": None,
        "schema": None,
        "table": None,
        "partition": None,
        "kind": "host",
        "logical_size": None,
        "allocated_size": None,
        "saving": None,
        "error": message if message.startswith(f"{host}:") else f"{host}: {message}",
        "flags": ["error"],
    }


def reply_allocation(reply: dict[str, Any], size: int, ranges: Any) -> Allocation:
    """The :class:`Allocation` an ``open`` or ``fetch`` reply (checked) and its data map (the
    agent's ranges, unpacked into :class:`PackedRanges`: kept, not copied) give."""
    counts = reply["fiemap"]
    extents, unwritten, runs, unwritten_bytes = counts if counts else (None,) * 4
    return Allocation(
        st_size=size,
        allocated=reply["allocated"],
        fs_block_size=reply["fs_block"],
        data_ranges=ranges if isinstance(ranges, PackedRanges) else PackedRanges(ranges),
        extents=extents,
        unwritten_extents=unwritten,
        contiguous_runs=runs,
        unwritten_bytes=unwritten_bytes,
    )


class RemoteHost:
    """The agent on one host: lists tablespaces and opens :class:`RemoteFile`\\ s."""

    def __init__(self, host: str, cfg: SshConfig) -> None:
        self.host = host
        self.session = AgentSession(host, cfg)
        self.codec = "zlib"
        #: bytes received for file contents (frames included), for the bandwidth a scan costs
        self.received = 0

    def open(self) -> RemoteHost:
        """Start the agent; an :class:`IbdtoolError` says why it could not (ssh's last line)."""
        self.session.open()
        if "zstd" in self.session.codecs and "zstd" in available_codecs():
            self.codec = "zstd"
        return self

    def close(self) -> None:
        self.session.close()

    def lost(self) -> rp.SourceLost:
        """The connection broke: why, in one line."""
        return rp.SourceLost(self.session.failure().message)

    def lied(self, exc: AgentError) -> rp.SourceLost:
        """The agent broke the protocol: one line naming the host; the host is dropped."""
        return rp.SourceLost(f"{self.host}: {exc}")

    def request(self, msg: dict[str, Any], shape: str, limit: int | None = None) -> dict[str, Any]:
        """Send ``msg`` and read its answer, checked to be of ``shape``
        (:mod:`ibdtool.copy.replies`), its frame no longer than ``limit`` when given; a
        failure the agent reports is returned as ``{"ok": False, "error": one line}``, not
        raised."""
        try:
            self.session.send_json(msg)
        except (OSError, ValueError):  # ValueError: its stdin closed (dropped)
            raise self.lost() from None
        return self.request_reply(shape, limit)

    def frame(self, kinds: tuple[bytes, ...]) -> tuple[bytes, bytes]:
        try:
            return self.session.recv_frame(kinds)
        except ProtocolError as exc:
            raise self.lied(exc) from None
        except (OSError, AgentError, Interrupted):
            raise self.lost() from None

    def fetch_request(self, path: str) -> tuple[bytes, list[tuple[str, int]]]:
        """The ``fetch`` request of ``path`` (a control message's payload, for :meth:`send`)
        and the files beside it it asks for (:func:`siblings`, for :meth:`fetched`)."""
        stem = _without_suffix(path)
        if stem is None:  # a path Path would refuse (never a listed file's): as it does
            beside = siblings(path)
            msg = {
                "op": "fetch",
                "path": path,
                "max": FETCH_WHOLE_BYTES,
                "codec": self.codec,
                "level": ZSTD_FAST_LEVEL,
                "siblings": beside,
            }
            return json.dumps(msg).encode(), beside
        cfg, cfp = stem + ".cfg", stem + ".cfp"
        text = _FETCH_TEMPLATE % (
            _dumps(path), FETCH_WHOLE_BYTES, _dumps(self.codec), ZSTD_FAST_LEVEL,
            _dumps(cfg), MAX_CFG_BYTES, _dumps(cfp), 4096,
        )  # fmt: skip
        return text.encode(), [(cfg, MAX_CFG_BYTES), (cfp, 4096)]

    def send(self, request: bytes) -> None:
        try:
            self.session.send_frame(b"J", request)
        except (OSError, ValueError):
            raise self.lost() from None

    def fetched(self, path: str, beside: list[tuple[str, int]]) -> FetchedFile | None:
        """The answer to :meth:`fetch_request` of ``path`` (which asked for ``beside``): the
        file with its data as sent (checked but not inflated), or None when it is larger than
        asked (it grew since the listing). A failure the agent reports (no such file, not a
        regular file, a read error): :class:`InputError`; a lie:
        :class:`~ibdtool.report.batch.SourceLost`."""
        reply = self.request_reply("fetch")
        if not reply["ok"]:
            raise InputError(reply["error"])
        size: int = reply["size"]
        if not reply["whole"]:
            return None
        try:
            if size > FETCH_WHOLE_BYTES:
                raise ProtocolError(f"a file of {size} bytes sent whole (asked at most "
                                    f"{FETCH_WHOLE_BYTES})")  # fmt: skip
            check_reply("fetched", reply)
            lengths = reply["siblings"]
            if len(lengths) != len(beside) or any(
                n is not None and n > limit for n, (_, limit) in zip(lengths, beside, strict=True)
            ):
                raise ProtocolError("sizes of the files beside it that do not fit the request")
            if reply["dense"]:  # no hole: the map is one run, and no M frame comes
                ranges = PackedRanges([(0, size)])
            else:
                _, blob = self.frame((b"M",))
                block = min(reply["fs_block"], 4096)  # SEEK_DATA: at most a range a block
                ranges = unpack_ranges(blob, size, block, into=PackedRanges())
            frames = self._data_frames(size, len(ranges))
            read: dict[str, bytes | None] = {}
            for (where, _), n in zip(beside, lengths, strict=True):
                data = None
                if n is not None:
                    _, data = self.frame((b"R",))
                    if len(data) != n:
                        raise ProtocolError(f"a file of {len(data)} bytes said to be {n}")
                read[where] = data
        except ProtocolError as exc:
            raise self.lied(exc) from None
        allocation = reply_allocation(reply, size, ranges)
        return FetchedFile(self.host, path, size, allocation, self.codec, frames, read)

    def _data_frames(self, size: int, ranges: int) -> list[bytes | memoryview]:
        """The ``D`` frames of a whole file up to its ``E``, as sent: each one's table checked
        (pieces in order inside the file, the codec agreed, a body no larger than its bytes),
        their bytes together bounded by the file's (a hostile agent cannot make us hold more
        than its size and the tables its ranges need). A failure it reports instead:
        :class:`InputError`."""
        budget = size + 64 * (ranges + size // PIECE + 2)
        agreed = (0, CODEC_IDS[self.codec])
        frames: list[bytes | memoryview] = []
        held = pos = 0
        while True:
            kind, payload = self.frame((b"D", b"E", b"J"))
            if kind == b"E":
                if payload:
                    raise ProtocolError("an end frame with a payload")
                return frames
            if kind == b"J":
                error = reply_failure(parse_json(payload))
                if error is None:
                    raise ProtocolError("a control message inside the data")
                raise InputError(error)
            held += len(payload) + 64
            if held > budget:
                raise ProtocolError(f"more than the {budget} bytes a file of {size} can send")
            pos = _check_batch(payload, agreed, pos, size)
            self.received += len(payload) + FRAME.size
            frames.append(payload)

    def request_reply(self, shape: str, limit: int | None = None) -> dict[str, Any]:
        """The next answer, checked to be of ``shape`` as :meth:`request` does."""
        try:
            reply = read_json(self.session.stdout, limit)
            error = reply_failure(reply)
            if error is not None:
                return {"ok": False, "error": error}
            return check_reply(shape, reply)
        except ProtocolError as exc:
            raise self.lied(exc) from None
        except (OSError, AgentError, Interrupted):
            raise self.lost() from None

    def file(self, path: str) -> RemoteFile:
        return RemoteFile(self, path)


#: ``(st_size, st_blocks * 512)`` of a listed file as its host's listing gave them (null but
#: for a regular file), for its error row
Sizes = tuple[int | None, int | None] | None
Listed = tuple[rp.Target, Sizes]


class Listing:
    """The tablespaces under one path of a host, named as a local report names them, a batch
    at a time as the agent walks (``walk``, then ``walk_more`` while it says there is more):
    each batch checked as it comes (:mod:`ibdtool.copy.replies`: its frame at most
    :data:`~ibdtool.copy.agent.WALK_FRAME` bytes, read before anything is made of it; at most
    :data:`WALK_BATCH` entries, as asked) and turned into :data:`Listed` targets. The next
    batch is asked for among the fetches (:meth:`ask` sends, :meth:`answer` reads it where it
    comes in the replies), so the host's thread holds a batch or two of targets, not the
    listing. A folder that cannot be listed is a target with ``error``; a missing path:
    :class:`InputError`; a walk that fails half way, :attr:`failed`."""

    def __init__(
        self,
        remote: RemoteHost,
        path: str,
        seen: set[str] | None = None,
        on_listed: Callable[[int, int], None] | None = None,
    ) -> None:
        self.remote = remote
        #: targets listed and not taken yet
        self.targets: deque[Listed] = deque()
        #: entries listed so far (before ``seen`` drops those listed under an earlier path)
        self.count = 0
        #: the agent has more to list; a request for it is on its way (``asked``)
        self.more = True
        self.asked = False
        #: why the walk stopped half way (the agent's one line), if it did
        self.failed: str | None = None
        self._seen = seen
        self._on_listed = on_listed
        msg = {
            "op": "walk",
            "path": path,
            "patterns": [p.pattern for p in rp.TABLESPACE_NAMES],
            "markers": list(rp.DATADIR_MARKERS),
            "batch": WALK_BATCH,
        }
        reply = remote.request(msg, "walk", WALK_FRAME)
        if not reply["ok"]:
            raise InputError(reply["error"])
        self.root: str = reply["root"]
        self._dir: bool = reply["dir"]
        self._datadir: bool = reply["datadir"]
        self._take(reply)

    def ask(self) -> None:
        """Send the request for the next batch (its answer comes after those sent before)."""
        self.remote.send(json.dumps({"op": "walk_more", "batch": WALK_BATCH}).encode())
        self.asked = True

    def answer(self) -> None:
        """Read the answer to :meth:`ask` (the next one the agent sends)."""
        self.asked = False
        reply = self.remote.request_reply("walk_more", WALK_FRAME)
        if not reply["ok"]:
            self.failed, self.more = reply["error"], False
            return
        self._take(reply)

    def each(self) -> Iterator[Listed]:
        """Every target, each batch asked for once the one before is taken (nothing else in
        flight: the reference path's requests are one at a time)."""
        while True:
            if not self.targets:
                if not self.more:
                    return
                self.ask()
                self.answer()
                continue
            yield self.targets.popleft()

    def _take(self, reply: dict[str, Any]) -> None:
        files, unlisted = reply["files"], reply["unlisted"]
        entries = len(files) + len(unlisted)
        lie = None
        if entries > WALK_BATCH:
            lie = f"a listing of {entries} entries at once (asked at most {WALK_BATCH})"
        elif reply["more"] and not entries:
            lie = "an empty batch of a listing said to go on"
        elif self.count + entries > MAX_LISTED:
            lie = f"a listing of more than {MAX_LISTED} entries"
        if lie is not None:
            raise self.remote.lied(ProtocolError(lie))
        self.more = reply["more"]
        self.count += entries
        new: list[Listed] = []
        for fpath, size, logical, allocated in files:
            p = Path(fpath)
            server_level = self._datadir and (not self._dir or str(p.parent) == self.root)
            new.append((rp.classify(p, server_level, size), (logical, allocated)))
        for where, why in unlisted:
            new.append((rp.unlisted_target(Path(where), one_line(why)), None))
        if self._seen is not None:
            new = [n for n in new if n[0].path not in self._seen]
            self._seen.update(t.path for t, _ in new)
        self.targets.extend(new)
        if self._on_listed is not None and new:
            self._on_listed(len(new), sum(t.size for t, _ in new))


class RemoteFile:
    """One file on a remote host, read through its agent (a :class:`FileSource`)."""

    def __init__(self, host: RemoteHost, path: str) -> None:
        self.host = host
        self.path = path
        reply = host.request({"op": "open", "path": path}, "open")
        if not reply["ok"]:
            raise InputError(reply["error"])
        _, blob = host.frame((b"M",))
        self.handle = reply["handle"]
        self.size = reply["size"]
        try:  # SEEK_DATA finds data a block at a time: at most a range a block (4 KiB at most)
            ranges = unpack_ranges(
                blob, self.size, min(reply["fs_block"], 4096), into=PackedRanges()
            )
        except ProtocolError as exc:
            raise host.lied(exc) from None
        self._allocation = reply_allocation(reply, self.size, ranges)
        self._codec = Codec(host.codec)

    def read(self, offset: int, length: int) -> bytes:
        end = min(offset + length, self.size)
        if end <= offset:
            return b""
        buf = bytearray(end - offset)  # the holes: zeros, never sent
        host = self.host
        try:
            host.session.send_json(
                {"op": "read", "handle": self.handle, "start": offset, "end": end,
                 "codec": host.codec}
            )  # fmt: skip
        except (OSError, ValueError):
            raise host.lost() from None
        pos = offset  # pieces come in order, each after the one before: bounded work
        while True:
            kind, payload = host.frame((b"D", b"E", b"J"))
            try:
                if kind == b"E":
                    if payload:
                        raise ProtocolError("an end frame with a payload")
                    return bytes(buf)
                if kind == b"J":
                    error = reply_failure(parse_json(payload))
                    if error is None:
                        raise ProtocolError("a control message inside the data")
                    raise InputError(error)
                host.received += len(payload) + FRAME.size
                for at, data in decode_batch(payload, self._codec):
                    if not pos <= at <= at + len(data) <= end:
                        raise ProtocolError(
                            f"a piece at byte {at} outside the bytes {pos} to {end} asked for"
                        )
                    buf[at - offset : at - offset + len(data)] = data
                    pos = at + len(data)
            except ProtocolError as exc:
                raise host.lied(exc) from None

    def current_size(self) -> int:
        reply = self.host.request({"op": "size", "handle": self.handle}, "size")
        if not reply["ok"]:
            raise InputError(reply["error"])
        size: int = reply["size"]
        return size

    def allocation(self, with_extents: bool) -> Allocation:
        return self._allocation

    def read_sibling(self, path: Path, limit: int) -> bytes | None:
        reply = self.host.request({"op": "slurp", "path": str(path), "max": limit}, "slurp")
        if not reply["ok"]:
            return None
        _, data = self.host.frame((b"R",))
        if len(data) > limit:
            raise self.host.lied(
                ProtocolError(f"{len(data)} bytes of a file asked at most {limit}")
            )
        return data

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):  # the next request says it broke
            self.host.session.send_json({"op": "close", "handle": self.handle})


class FetchedFile:
    """A remote file fetched whole (a :class:`FileSource` held in memory): what a worker
    process decodes, with no connection of its own. It travels as the agent sent it: the
    ``D`` frames' payloads (their tables checked by :meth:`RemoteHost.fetched`, their bytes
    still compressed: a quarter of the file's to hand to the worker) and the range map;
    :meth:`load` inflates them where it is decoded. Its siblings are the ``.cfg`` and ``.cfp``
    the decoder asks for (:func:`ibdtool.tablespace.index_names.from_cfg`,
    :meth:`Tablespace._sibling_cfp`), fetched with the same limits."""

    def __init__(
        self,
        host: str,
        path: str,
        size: int,
        allocation: Allocation,
        codec: str,
        frames: list[bytes | memoryview],
        siblings: dict[str, bytes | None],
    ) -> None:
        self.host = host
        self.path = path
        self.size = size
        self._allocation = allocation
        self.codec = codec
        self.frames = frames
        self.siblings = siblings
        self._data: bytes | None = None

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        """As it crosses to a worker: its fields as a tuple (its allocation's too), never
        the inflated bytes; with pickle's protocol 5, its frames as buffers the pickle may
        leave out of band (:mod:`ibdtool.workers` writes them to the worker as they are)."""
        frames: list[Any] = self.frames
        if isinstance(protocol, int) and protocol >= 5:
            frames = [pickle.PickleBuffer(f) for f in frames]
        return _fetched_file, (
            self.host, self.path, self.size, _ALLOCATION_FIELDS(self._allocation), self.codec,
            frames, self.siblings,
        )  # fmt: skip

    def load(self) -> None:
        """The file's bytes from its frames (holes: zeros), once. A frame that does not
        inflate to what its table says: :class:`InputError` naming the host. A file with no
        hole (the pieces one run from byte 0 to its end) is its inflated frames as they are,
        joined (one frame: no copy at all); else they are laid into a zero-filled buffer."""
        if self._data is not None:
            return
        codec = _codec(self.codec)
        inflated = []
        run = 0  # the pieces so far are one run from byte 0 to here (-1: they are not)
        try:
            for payload in self.frames:
                cid, raw_len, table, body = batch_table(payload)
                raw = codec.decode(cid, memoryview(payload)[body:], raw_len)
                inflated.append((table, raw if type(raw) is bytes else bytes(raw)))
                for at, n in table:
                    run = at + n if at == run else -1
        except ProtocolError as exc:
            raise InputError(f"{self.host}: {exc}") from None
        self.frames = []
        if run == self.size:
            self._data = inflated[0][1] if len(inflated) == 1 else b"".join(r for _, r in inflated)
            return
        buf = bytearray(self.size)
        for table, raw in inflated:
            view = memoryview(raw)
            pos = 0
            for at, n in table:
                buf[at : at + n] = view[pos : pos + n]
                pos += n
        self._data = bytes(buf)

    def read(self, offset: int, length: int) -> bytes:
        self.load()
        assert self._data is not None
        return self._data[offset : offset + length]

    def view(self, offset: int, length: int) -> memoryview:
        """:meth:`read` without the copy (:meth:`Tablespace.read_chunks`: a scan's chunks)."""
        self.load()
        assert self._data is not None
        return memoryview(self._data)[offset : offset + length]

    def current_size(self) -> int:
        return self.size

    def allocation(self, with_extents: bool) -> Allocation:
        return self._allocation

    def read_sibling(self, path: Path, limit: int) -> bytes | None:
        data = self.siblings.get(str(path))
        return None if data is None else data[:limit]

    def close(self) -> None:
        pass


_ALLOCATION_FIELDS = attrgetter(*Allocation._fields)


def _fetched_file(
    host: str,
    path: str,
    size: int,
    allocation: tuple[Any, ...],
    codec: str,
    frames: list[Any],
    siblings: dict[str, bytes | None],
) -> FetchedFile:
    """A :class:`FetchedFile` from its pickled fields."""
    return FetchedFile(host, path, size, Allocation(*allocation), codec, frames, siblings)


_CODECS: dict[str, Codec] = {}
_dumps = json.dumps


def _codec(name: str) -> Codec:
    """The :class:`Codec` ``name`` of this process, made once."""
    if name not in _CODECS:
        _CODECS[name] = Codec(name)
    return _CODECS[name]


def _check_batch(payload: bytes, agreed: tuple[int, ...], pos: int, size: int) -> int:
    """Where the pieces of the ``D`` frame ``payload`` end: its head and table checked as
    :func:`~ibdtool.copy.agent.batch_table` does (at least a piece, none empty, the lengths
    adding up to its raw bytes), and besides: the codec one of ``agreed``, a body no larger
    than its raw bytes, each piece after ``pos`` and inside the ``size`` bytes of the file.
    Read straight from the bytes: no object a piece (a frame may hold 65,536)."""
    if len(payload) < DATA_HEAD.size:
        raise ProtocolError("a data frame shorter than its head")
    count, cid, raw_len = DATA_HEAD.unpack_from(payload)
    body = DATA_HEAD.size + count * DATA_PIECE.size
    if not 0 < count <= min(MAX_PIECES, raw_len) or body > len(payload):
        raise ProtocolError(f"a data frame of {count} pieces and {raw_len} bytes")
    if cid not in agreed:
        raise ProtocolError(f"the stream uses codec {cid}, not the one agreed")
    if len(payload) - body > raw_len:
        raise ProtocolError("a data frame larger than the bytes it holds")
    total = 0
    for at, n in DATA_PIECE.iter_unpack(memoryview(payload)[DATA_HEAD.size : body]):
        if not n or not pos <= at <= at + n <= size:
            raise ProtocolError(f"a piece at byte {at} outside the bytes {pos} to {size} asked for")
        pos = at + n
        total += n
    if total != raw_len:
        raise ProtocolError("a data frame whose pieces do not add up to its bytes")
    return pos


def _sized(row: Row, sizes: tuple[int | None, int | None] | None) -> Row:
    """An error row of a remote file with the sizes its host's listing gave."""
    if row.get("error") and sizes is not None:
        logical, allocated = sizes
        row["logical_size"], row["allocated_size"] = logical, allocated
        row["saving"] = None if logical is None or allocated is None else logical - allocated
    return row


#: what a host's thread hands on: a finished row, or a fetched file to decode
#: ``(host, target, fetched, options, listed sizes)``
Fetched = tuple[str, rp.Target, FetchedFile, rp.ScanOptions, Sizes]
Item = Row | Fetched


def decode_item(item: Item) -> tuple[bool, Row]:
    """The row of one item (run in a worker process for a fetched file), and whether it was
    a fetched file."""
    if isinstance(item, dict):
        return False, item
    host, t, fetched, opts, sizes = item
    row = rp.scan_one(t, opts, source=lambda _path: fetched)
    return True, {"host": host, **_sized(row, sizes)}


def _died(item: Item, why: str) -> tuple[bool, Row]:
    """The row of a fetched file whose worker process died decoding it."""
    assert not isinstance(item, dict)  # a finished row never dies: it is handed back as is
    host, t, _fetched, _opts, sizes = item
    return True, {"host": host, **_sized(rp.error_row(t, f"{t.path}: {why}", local=False), sizes)}


def _label(item: Item) -> str:
    return str(item.get("path")) if isinstance(item, dict) else str(item[1].path)


#: an :data:`Item` as it crosses to a worker process: a finished row as it is, a fetched file
#: as ``(host, target's fields, fetched, listed sizes)`` (the options go with the fork, as a
#: local report's do: a tuple pickles in a fraction of the time the dataclasses take)
Task = Row | tuple[str, tuple[Any, ...], FetchedFile, Sizes]


def _task(item: Item) -> Task:
    if isinstance(item, dict):
        return item
    host, t, fetched, _opts, sizes = item
    return host, rp.target_fields(t), fetched, sizes


def _item(opts: rp.ScanOptions, task: Task) -> Item:
    if isinstance(task, dict):
        return task
    host, fields, fetched, sizes = task
    return host, rp.Target(*fields), fetched, opts, sizes


def _decode_task(opts: rp.ScanOptions, task: Task) -> tuple[bool, Row]:
    """:func:`decode_item` of a :data:`Task`, in a worker process."""
    return decode_item(_item(opts, task))


def _task_died(opts: rp.ScanOptions, task: Task, why: str) -> tuple[bool, Row]:
    return _died(_item(opts, task), why)


def _task_label(task: Task) -> str:
    return str(task.get("path")) if isinstance(task, dict) else str(task[1][0])


def scan_host(
    host: str,
    paths: list[str],
    cfg: SshConfig,
    opts: rp.ScanOptions,
    emit: Callable[[Item], None],
    on_listed: Callable[[int, int], None] | None = None,
    fetch: bool = False,
) -> None:
    """Every row of ``host``'s ``paths`` through ``emit``, each tagged with ``host``; what
    fails for the host or one of its paths is one error row. ``fetch``: small files go to
    ``emit`` fetched (:data:`Fetched`), for :func:`decode_item` elsewhere.
    ``on_listed(files, bytes)`` as each batch of a path's listing arrives (:class:`Listing`).
    Without ``fetch`` (the reference the fetched path is tested against) each file is read a
    range at a time and decoded by this thread, as a large file always is. A file listed
    under two of the paths is reported once (its path strings are remembered only then)."""
    remote = RemoteHost(host, cfg)
    try:
        remote.open()
    except IbdtoolError as exc:
        remote.session.kill()
        emit(host_error_row(host, paths, exc.message))
        return
    try:
        seen: set[str] | None = set() if len(paths) > 1 else None
        for path in paths:
            try:
                listing = Listing(remote, path, seen, on_listed)
            except InputError as exc:
                emit(host_error_row(host, [path], exc.message))
                continue
            if fetch:
                _fetch_all(remote, listing, opts, emit)
            else:
                for t, sizes in listing.each():
                    row = rp.scan_one(t, opts, source=remote.file)
                    emit({"host": host, **_sized(row, sizes)})
            if listing.failed is not None:
                emit(host_error_row(host, [path], listing.failed))
            elif not listing.count:
                emit(host_error_row(host, [path], f"{path}: no tablespaces found"))
    except rp.SourceLost as exc:
        remote.session.kill()
        emit(host_error_row(host, paths, exc.message))
    finally:
        remote.close()


def _fetch_all(
    remote: RemoteHost, listing: Listing, opts: rp.ScanOptions, emit: Callable[[Item], None]
) -> None:
    """Each target of ``listing`` through ``emit``: a file of up to :data:`FETCH_WHOLE_BYTES`
    fetched whole (:data:`Fetched`), with up to :data:`FETCH_AHEAD` requests in flight (the
    listing's next batch among them, asked for before the targets run out); a larger one (or
    one that grew past it since the listing), once the answers in flight are read, decoded by
    this thread as it is read; a file that cannot be read, its error row."""
    host = remote.host
    # a fetch in flight: its target, listed sizes, the files asked for beside it and the
    # request's bytes; None: the listing's next batch
    flight: deque[tuple[rp.Target, Sizes, list[tuple[str, int]], int] | None] = deque()
    grew: list[Listed] = []
    flying = 0

    def land() -> None:
        nonlocal flying
        entry = flight.popleft()
        if entry is None:
            listing.answer()
            return
        t, sizes, beside, n = entry
        flying -= n
        try:
            fetched = remote.fetched(t.path, beside)
        except InputError as exc:  # as scan_one makes it of the same failure
            emit({"host": host, **_sized(rp.error_row(t, exc.message, local=False), sizes)})
            return
        if fetched is None:
            grew.append((t, sizes))
        else:
            emit((host, t, fetched, opts, sizes))

    def scan(t: rp.Target, sizes: Sizes) -> None:
        row = rp.scan_one(t, opts, source=remote.file)
        emit({"host": host, **_sized(row, sizes)})

    def next_target() -> Listed | None:
        while True:
            if listing.more and not listing.asked and len(listing.targets) <= WALK_BATCH // 2:
                listing.ask()
                flight.append(None)
            if listing.targets:
                return listing.targets.popleft()
            if not listing.asked:
                return None
            land()

    while (listed := next_target()) is not None:
        t, sizes = listed
        if t.error:
            scan(t, sizes)  # its error row
        elif t.size <= FETCH_WHOLE_BYTES:
            request, beside = remote.fetch_request(t.path)
            n = len(request)
            while flight and (len(flight) >= FETCH_AHEAD or flying + n > FETCH_AHEAD_BYTES):
                land()
            remote.send(request)
            flight.append((t, sizes, beside, n))
            flying += n
        else:
            while flight:
                land()
            scan(t, sizes)
    while flight:
        land()
    for t, sizes in grew:
        scan(t, sizes)


_DONE = object()


def scan_fleet(
    groups: list[tuple[str, list[str]]],
    cfg: SshConfig,
    opts: rp.ScanOptions,
    parallel: int | None = None,
    jobs: int = 1,
    on_listed: Callable[[int, int], None] | None = None,
) -> Iterator[Row]:
    """Rows of every host as they come, hosts scanned in parallel threads, the pages of
    their files decoded on ``jobs`` worker processes (``jobs`` 1: by the hosts' threads).
    ``on_listed(files, bytes)`` (from a host's thread) as each listing arrives."""
    workers = max(1, jobs)
    # bounded: a host's thread waits while fetched files wait for a free worker
    items: queue.Queue[Any] = queue.Queue(maxsize=2 * workers)
    slots = threading.Semaphore(max(1, parallel or MAX_PARALLEL_HOSTS))

    def work(host: str, paths: list[str]) -> None:
        with slots:
            try:
                scan_host(host, paths, cfg, opts, items.put, on_listed, fetch=True)
            except Exception as exc:  # a bug must not hang the report or lose the others
                items.put(host_error_row(host, paths, f"unexpected {type(exc).__name__}: {exc}"))
            finally:
                items.put(_DONE)

    #: per host, its fetched files handed out and not decoded yet
    pending: dict[str, int] = {}

    def arrivals() -> Iterator[Item]:
        running = len(groups)
        while running:
            item = items.get()
            if item is _DONE:
                running -= 1
                continue
            if not isinstance(item, dict):
                pending[item[0]] = pending.get(item[0], 0) + 1
            yield item

    def in_order(results: Iterator[tuple[bool, Row]]) -> Iterator[Row]:
        """A host's own row (it failed, or lost its connection) after the rows of the files
        it fetched before, as when its thread decoded them."""
        held: dict[str, list[Row]] = {}
        for fetched, row in results:
            host = row["host"]
            if fetched:
                pending[host] -= 1
            if row.get("kind") == "host" and pending.get(host):
                held.setdefault(host, []).append(row)
                continue
            yield row
            if not pending.get(host) and host in held:
                yield from held.pop(host)
        for rows in held.values():
            yield from rows

    pool: WorkerPool[Task, tuple[bool, Row]] | None = None
    if workers > 1:  # forked before the hosts' threads start, the options with them
        pool = WorkerPool(
            partial(_decode_task, opts),
            workers,
            died=partial(_task_died, opts),
            label=_task_label,
            depth=2,  # a worker holds its next file in its pipe: it never waits for us
            pipe_bytes=WORKER_PIPE_BYTES,
        ).__enter__()
    try:
        for host, paths in groups:
            threading.Thread(target=work, args=(host, paths), daemon=True).start()
        if pool is None:
            yield from in_order(map(decode_item, arrivals()))
        else:
            yield from in_order(pool.map_unordered(map(_task, arrivals())))
    except BaseException as exc:
        if pool is not None:
            pool.__exit__(type(exc), exc, exc.__traceback__)
            pool = None
        raise
    finally:
        if pool is not None:
            pool.__exit__(None, None, None)
