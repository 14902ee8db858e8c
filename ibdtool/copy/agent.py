"""The self-contained half of ``ibdtool copy``: sparse file primitives and the stream protocol.

This one file runs in two places. ibdtool imports it for local copies and for the local end of
a remote copy; ``ibdtool.copy.remote`` also sends its source over ssh, where the remote
``python3`` runs it (``exec`` of bytes read from stdin), so the far side needs no ibdtool. Hence:
standard library only, Python 3.6 syntax (RHEL 8's python3), no imports from ibdtool, type
comments instead of annotations.

What it knows:

* :class:`Source`: a file opened read-only, its identity and its data map
  (``SEEK_DATA``/``SEEK_HOLE``).
* :class:`Destination`: the file being written. Data goes to a temporary name in the
  destination directory (``.NAME.ibdtool-part``) sized with ``ftruncate`` first. Holes are
  not trusted to stay holes (XFS speculative preallocation fills holes left by seeking): after
  each window's fdatasync, every whole block of a hole that FIEMAP shows allocated is punched
  with ``fallocate(PUNCH_HOLE)`` (every hole, where FIEMAP is missing). The file is fsynced,
  given the source's mode and times, then renamed. A state file beside the part
  (``….ibdtool-part.json``) records the CRC-32 of every *window* of data that was
  fdatasync'ed and read back equal to the source;
  ``--resume`` reads each kept window again and continues after the last that still matches.
  Both files are created with ``O_EXCL|O_NOFOLLOW`` relative to the directory opened once: the
  directory may belong to another user, whose planted links are replaced, never followed.
* The plan: the byte ranges to write, cut into windows of about ``window`` bytes, each cut into
  pieces of at most :data:`PIECE` bytes. Both ends derive the same windows from the same plan.
* The stream: frames of ``type (1 byte) + length (u32)`` then the payload. ``J`` is a JSON
  control message, ``M`` the plan (zlib of big-endian u64 pairs), ``D`` a batch of pieces of
  about 1 MiB (count u32, codec u8, raw length u32, then offset u64 + length u32 per piece,
  then their bytes compressed together), ``K`` the end of a window (index u32, CRC-32 of the
  window's bytes u32), ``E`` the end of the file.

Remote session: the agent writes :data:`MAGIC` and a ``hello`` (protocol, python, codecs), then
serves requests until ``bye`` or end of input: ``receive`` (push: answers with the destination,
its block size and free space; then ``plan`` + ``M``, answered with the window to resume from;
then the frames; answers ``done``) and ``send`` (pull: answers with the file's identity and
``M``; then ``stream`` makes it send the frames).

``--resume`` keeps a window only if the source, read again now, still has the CRC-32 recorded
for it: in a push the receiving agent asks for them (``{"sums": n}``, answered with ``{"op":
"sums", "crcs": [...]}``) before it says where to start; in a pull the local end sends
``sums`` (with the window size and ``M``) before ``stream``, answered with ``crcs``.

Nothing the other end sends is trusted: frames longer than their kind's limit
(:data:`FRAME_LIMITS`) are refused before they are read, range maps are inflated no further
than the ranges their file can hold and checked (:func:`unpack_ranges`), data frames are
checked piece by piece against the plan (:func:`receive_stream`); the local end checks every
control message against its declared shape (:mod:`ibdtool.copy.replies`).

``report host:path`` (:mod:`ibdtool.report.remote`) uses the same agent to read, never to decode:
``walk`` lists the tablespaces under a path (names matching the patterns it is sent, with their
sizes, and the folders it could not list) a bounded batch a reply, ``walk_more`` the next batch
(the reader asks for it among its fetches: a listing of 100,000 files is never held whole on
either side); ``open`` answers with a file's allocation facts
(``st_size``, ``st_blocks``, block size, FIEMAP counts) and ``M``, its data map; ``read`` sends
the data ranges inside a byte range as ``D`` frames then ``E`` (holes are never sent: the
reader fills zeros); ``size`` is the file's size now; ``slurp`` sends a small file (the
``.cfg`` beside a tablespace) as an ``R`` frame; ``close`` answers nothing; ``fetch`` sends a
small file whole in one reply (``open``'s facts, ``M``, ``read``'s frames of the whole file and
an ``R`` frame for each small file beside it that was asked for), so the reader can keep several
requests in flight instead of waiting for four round trips a file. The pages are decoded on
the host running ibdtool, by the same engine as a local report.
"""

import bisect
import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import itertools
import json
import operator
import os
import re
import stat
import struct
import sys
import threading
import time
import zlib
from array import array

try:  # zlib's CRC-32 by ISA-L where it is installed (ibdtool depends on it; a remote python3
    # need not have it): the same values at 3-4 times the speed on a page's piece
    from isal.isal_zlib import crc32
except ImportError:
    crc32 = zlib.crc32

PROTOCOL = 4
MAGIC = b"IBDTOOL-AGENT 4\n"
PIECE = 1 << 20  # bytes per data frame / per copy call
MAX_BATCH = 2 * PIECE  # a D frame's raw bytes: pieces are sent once they reach PIECE
MIN_WINDOW = 4 << 20
MAX_WINDOW = 256 << 20
PART_SUFFIX = ".ibdtool-part"
STATE_SUFFIX = ".json"
FREE_SPACE_SLACK = 1 << 20
STATE_MAX_BYTES = 16 << 20
KERNEL_COPY_MIN = 512 << 10  # smaller pieces: pread/pwrite beat copy_file_range
COALESCE_GAP = 64 << 10  # small pieces at most this far apart are read with one pread
MAX_PIECES = 1 << 16  # pieces in one D frame: a frame is sent once it holds this many
MIN_BLOCK = 512  # the smallest filesystem block: a data map has at most one range per block
#: mode bits a copy takes from its source: never setuid, setgid, sticky or world-writable
KEPT_MODE_BITS = 0o775

FRAME = struct.Struct(">cI")
DATA_HEAD = struct.Struct(">IBI")  # pieces in the frame, codec, raw bytes
DATA_PIECE = struct.Struct(">QI")  # offset, length; one per piece, after DATA_HEAD
CHECK = struct.Struct(">II")
RANGE = struct.Struct(">QQ")

#: the largest payload of each kind of frame, checked before anything is allocated for it: a
#: control message (a pull's sums, a CRC a window; a walk's batch is read with the smaller
#: :data:`WALK_FRAME`), a plan (compressed, 16 bytes a range), a batch of pieces, a
#: checkpoint, the end, a small file (``slurp``)
FRAME_LIMITS = {
    b"J": 64 << 20,
    b"M": 256 << 20,
    b"D": DATA_HEAD.size + MAX_PIECES * DATA_PIECE.size + MAX_BATCH,
    b"K": CHECK.size,
    b"E": 0,
    b"R": 16 << 20,
}
READ_CHUNK = 1 << 20  # a declared length is read this much at a time, never allocated at once

CODEC_IDS = {"none": 0, "zlib": 1, "zstd": 2}
CODEC_NAMES = {v: k for k, v in CODEC_IDS.items()}
ZSTD_LEVEL = 1
#: zstd's level for ``report``'s fetches, where the agent's CPU is a host's share of a report of
#: all its files (a copy moves one file over a link it may fill: level 1). Against level 1, on
#: the real tablespaces of ``tests/fleet_tree.py``: a fetch 0.65 -> 0.50 ms of the agent's CPU
#: a file, 122 -> 126 KB sent, inflating 18% faster
ZSTD_FAST_LEVEL = -1
ZLIB_LEVEL = 1

FALLOC_FL_KEEP_SIZE = 0x01
FALLOC_FL_PUNCH_HOLE = 0x02


class AgentError(Exception):
    """A failure with a one-line message for the user (bad path, no space, source changed)."""


class Interrupted(Exception):
    """The stream ended early or a signal arrived: keep the part file for --resume."""


class VerifyError(AgentError):
    """Data read back from the destination differs from the source."""


class RemoteFailed(AgentError):
    """The other end reported a failure (``ok`` false): its message, made one printable line."""


class ProtocolError(AgentError):
    """The other end sent what the protocol does not allow: a frame too large or of an unknown
    kind, a control message that is not a JSON object, a plan or a data frame that lies. The
    local end names the host in front of it."""


# --- ranges and windows --------------------------------------------------------------------------


def seek_data_ranges(fd, size):
    """``[start, end)`` ranges holding data, by SEEK_DATA/SEEK_HOLE, as :class:`WireRanges`
    (~4 bytes a range: a page-compressed file has one a page); all data if unsupported.

    The remote twin of ``ibdtool.fs.allocation.data_ranges`` (this file cannot import ibdtool).
    """
    out = WireRanges()
    held_start = held_end = -1
    pos = 0
    while pos < size:
        try:
            start = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                break
            if exc.errno == errno.EINVAL and pos == 0:
                return WireRanges([(0, size)] if size else [])
            raise
        if start >= size:
            break
        end = min(os.lseek(fd, start, os.SEEK_HOLE), size)
        end = max(end, start + 1)
        if start <= held_end:
            held_end = max(held_end, end)
        else:
            if held_end > held_start:
                out.append((held_start, held_end))
            held_start, held_end = start, end
        pos = end
    if held_end > held_start:
        out.append((held_start, held_end))
    return out


def complement(ranges, size):
    """The gaps of sorted, disjoint ``ranges`` within ``[0, size)``."""
    out = []  # type: list
    pos = 0
    for start, end in ranges:
        if start > pos:
            out.append((pos, start))
        pos = max(pos, end)
    if pos < size:
        out.append((pos, size))
    return out


#: ranges packed or unpacked at a time: the wire form is never held whole beside the arrays
RANGE_CHUNK = 1 << 10


def pairs_from(ranges, index):
    """The ranges from the ``index``-th on: their own walk where they have one (:class:`Pieces`,
    ``ibdtool.fs.ranges.PackedRanges``: a chunk of its deltas decoded at a time), else the
    iteration with the first ``index`` skipped. Never a copy of the ranges."""
    own = getattr(ranges, "pairs_from", None)
    if own is not None:
        return own(index)
    return itertools.islice(ranges, index, None)


def _packed_chunks(ranges):
    """The wire form of ``ranges`` (:data:`RANGE` each: big-endian start, end), a chunk of
    :data:`RANGE_CHUNK` ranges at a time, from their iteration (whatever keeps them)."""
    pairs = iter(ranges)
    while True:
        both = array("Q", itertools.chain.from_iterable(itertools.islice(pairs, RANGE_CHUNK)))
        if not both:
            return
        if sys.byteorder == "little":
            both.byteswap()
        yield both.tobytes()


def pack_ranges(ranges):
    """The range map's frame payload: the ranges' wire form, zlib-compressed as it is made."""
    z = zlib.compressobj(1)
    out = [z.compress(chunk) for chunk in _packed_chunks(ranges)]
    out.append(z.flush())
    return b"".join(out)


def max_ranges(size, block):
    """The most ranges a data map of a ``size``-byte file can hold: one a ``block``."""
    return size // max(MIN_BLOCK, block) + 1


def inflate(blob, cap, what):
    """zlib ``blob`` inflated to at most ``cap`` bytes: more is a :class:`ProtocolError`
    (a bomb never gets past the cap it could legally hold)."""
    d = zlib.decompressobj()
    try:
        raw = d.decompress(blob, cap + 1)
    except zlib.error:
        raise ProtocolError(f"{what} is not zlib data") from None
    if len(raw) > cap or d.unconsumed_tail:
        raise ProtocolError(f"{what} inflates past the {cap} bytes it can hold")
    if not d.eof:
        raise ProtocolError(f"{what} is cut short")
    return raw


def unpack_ranges(blob, size, block=MIN_BLOCK, into=None):
    """The ranges of a data map or plan of a ``size``-byte file, checked: each non-empty,
    sorted, disjoint, inside the file, at most one a ``block``. Inflated a chunk at a time
    (never past the cap the file could legally need) and checked as it comes, straight into
    ``into`` (anything with ``extend(starts, ends)``: the host gives
    ``ibdtool.fs.ranges.PackedRanges``, ~2.5 bytes a range) or a new :class:`WireRanges`
    (~4)."""
    cap = max_ranges(size, block) * RANGE.size
    what = "the range map"
    d = zlib.decompressobj()
    out = WireRanges() if into is None else into
    last_end = 0
    held = 0
    tail = blob
    rest = b""
    step = RANGE_CHUNK * RANGE.size
    try:
        while True:
            raw = d.decompress(tail, step)
            tail = d.unconsumed_tail
            held += len(raw)
            if held > cap:
                raise ProtocolError(f"{what} inflates past the {cap} bytes it can hold")
            if rest:
                raw, rest = rest + raw, b""
            whole = len(raw) // RANGE.size * RANGE.size
            if whole:
                both = array("Q", raw[:whole])
                if sys.byteorder == "little":
                    both.byteswap()
                starts, ends = both[0::2], both[1::2]
                check_ranges(starts, ends, size, last_end)
                last_end = ends[-1]
                out.extend(starts, ends)
            rest = raw[whole:]
            if not tail and (d.eof or not raw):
                break
    except zlib.error:
        raise ProtocolError(f"{what} is not zlib data") from None
    if not d.eof:
        raise ProtocolError(f"{what} is cut short")
    if rest:
        raise ProtocolError(f"{what} is not a whole number of ranges")
    return out


def check_ranges(starts, ends, size, pos=0):
    """Each range ``(starts[k], ends[k])`` non-empty, sorted after the one before (the first
    at or after ``pos``), inside ``[0, size)``: else a :class:`ProtocolError` naming the first
    that is not."""
    n = len(starts)
    ok = not n or (
        starts[0] >= pos
        and all(map(operator.lt, starts, ends))
        and all(map(operator.le, ends, itertools.islice(starts, 1, None)))
        and ends[-1] <= size
    )
    if ok:
        return
    for start, end in zip(starts, ends):  # noqa: B905 (Python 3.6; same lengths)
        if not pos <= start < end <= size:
            raise ProtocolError(
                f"the range map holds [{start}, {end}), not sorted, disjoint and inside the "
                f"file's {size} bytes"
            )
        pos = end


def plan_crc(ranges, size):
    crc = 0
    for chunk in _packed_chunks(ranges):
        crc = crc32(chunk, crc)
    return crc32(struct.pack(">Q", size), crc)


def choose_window(plan_bytes):
    """About 8 windows a file, 4 to 256 MiB each: each fdatasync commits the journal and
    flushes the device cache, so few of them, yet a resume loses little."""
    w = plan_bytes // 8
    w = max(MIN_WINDOW, min(MAX_WINDOW, w))
    return -(-w // PIECE) * PIECE


class _Pairs:
    """What :class:`Pieces` and :class:`WireRanges` share: ``==`` with any sequence of pairs
    ``(start, end)`` (a list of tuples, the other class), and no hash (they grow)."""

    __slots__ = ()

    def __iter__(self):  # each subclass's own
        raise NotImplementedError

    def __len__(self):  # each subclass's own
        raise NotImplementedError

    def __eq__(self, other):
        try:
            pairs = zip(other, self)  # noqa: B905 (Python 3.6; the lengths are compared)
            return len(other) == len(self) and all(tuple(o) == s for o, s in pairs)
        except TypeError:
            return NotImplemented

    __hash__ = None  # type: ignore[assignment]


class Pieces(_Pairs):
    """A window's pieces (or holes) ``(start, end)``, in order, kept as two ``array('Q')``:
    16 bytes a piece where a list of tuples costs ~130. A page-compressed file has a piece a
    page, so a 256 MiB window of 8 KiB pages is 32,768 of them, and a remote copy keeps every
    window. Reads like the list of pairs it replaces: ``len``, indexing (a slice is a
    :class:`Pieces`), iteration, ``==`` with any sequence of pairs."""

    __slots__ = ("ends", "starts")

    def __init__(self, pairs=()):
        self.starts = array("Q")
        self.ends = array("Q")
        for start, end in pairs:
            self.append((start, end))

    def append(self, pair):
        self.starts.append(pair[0])
        self.ends.append(pair[1])

    def extend(self, starts, ends):
        self.starts.extend(starts)
        self.ends.extend(ends)

    def pairs_from(self, index):
        """The pieces from the ``index``-th on (no copy of the arrays)."""
        return zip(  # noqa: B905 (Python 3.6; same lengths)
            itertools.islice(self.starts, index, None), itertools.islice(self.ends, index, None)
        )

    def total(self):
        """Bytes inside the pieces."""
        return sum(self.ends) - sum(self.starts)

    def __len__(self):
        return len(self.starts)

    def __getitem__(self, index):
        if isinstance(index, slice):
            out = Pieces()
            out.starts = self.starts[index]
            out.ends = self.ends[index]
            return out
        return self.starts[index], self.ends[index]

    def __iter__(self):
        return zip(self.starts, self.ends)  # noqa: B905 (Python 3.6: no strict=)

    def __repr__(self):
        return f"Pieces({list(self)!r})"


class WireRanges(_Pairs):
    """Ranges ``(start, end)`` in order, kept in their wire form (:data:`RANGE` each) and
    zlib-compressed :data:`RANGE_CHUNK` at a time: ~4 bytes a range for a page-compressed
    file's map (a range a page) where :class:`Pieces` takes 16. The agent's data maps and
    plans (this file cannot import ``ibdtool.fs.ranges.PackedRanges``, the host's). Built by
    :meth:`append` or :meth:`extend` (kept as given: :func:`seek_data_ranges` merges, and a
    plan is cut into windows range by range); read by iteration and :meth:`pairs_from`, a
    chunk inflated at a time, ``len``, :meth:`total` and ``==`` with any sequence of pairs."""

    __slots__ = ("_chunks", "_ends", "_n", "_starts", "_total")

    def __init__(self, pairs=()):
        self._chunks = []  # type: list  # RANGE_CHUNK ranges each, compressed
        self._starts = array("Q")  # the chunk being filled
        self._ends = array("Q")
        self._n = 0
        self._total = 0
        for pair in pairs:
            self.append(pair)

    def append(self, pair):
        self.extend((pair[0],), (pair[1],))

    def extend(self, starts, ends):
        at = 0
        while at < len(starts):
            room = RANGE_CHUNK - len(self._starts)
            s, e = starts[at : at + room], ends[at : at + room]
            self._starts.extend(s)
            self._ends.extend(e)
            self._n += len(s)
            self._total += sum(e) - sum(s)
            at += len(s)
            if len(self._starts) == RANGE_CHUNK:
                self._chunks.append(zlib.compress(_wire(self._starts, self._ends), 1))
                self._starts, self._ends = array("Q"), array("Q")

    def _chunk_pairs(self, index):
        if index == len(self._chunks):
            return zip(self._starts, self._ends)  # noqa: B905 (Python 3.6; same lengths)
        both = array("Q", zlib.decompress(self._chunks[index]))
        if sys.byteorder == "little":
            both.byteswap()
        flat = iter(both)
        return zip(flat, flat)  # noqa: B905 (Python 3.6; pairs)

    def pairs_from(self, index):
        """The ranges from the ``index``-th on, a chunk inflated at a time."""
        index = max(0, index)
        first, skip = divmod(index, RANGE_CHUNK)
        if first > len(self._chunks):
            return iter(())
        chunks = range(first, len(self._chunks) + 1)
        pairs = itertools.chain.from_iterable(map(self._chunk_pairs, chunks))
        return itertools.islice(pairs, skip, None)

    def __iter__(self):
        return self.pairs_from(0)

    def __len__(self):
        return self._n

    def total(self):
        """Bytes inside the ranges."""
        return self._total

    def __repr__(self):
        return f"WireRanges(<{self._n} ranges>)"


def _wire(starts, ends):
    """The wire form (:data:`RANGE` each) of the ranges ``(starts[k], ends[k])``."""
    both = array("Q", bytes(16 * len(starts)))
    both[0::2] = starts
    both[1::2] = ends
    if sys.byteorder == "little":
        both.byteswap()
    return both.tobytes()


def iter_windows(ranges, window):
    """Yield :class:`Pieces` ``(start, end)``; each holds about ``window`` bytes."""
    pieces = Pieces()
    held = 0
    for start, end in ranges:
        pos = start
        while pos < end:
            stop = min(end, pos + PIECE, pos + (window - held))
            pieces.append((pos, stop))
            held += stop - pos
            pos = stop
            if held >= window:
                yield pieces
                pieces = Pieces()
                held = 0
    if pieces:
        yield pieces


def plan_bytes(ranges):
    """Bytes inside ``ranges``: their own ``total()`` where they keep one (:class:`Pieces`,
    ``ibdtool.fs.ranges.PackedRanges``), else summed."""
    total = getattr(ranges, "total", None)
    if total is not None:
        return total()
    return sum(end - start for start, end in ranges)


class Windows:
    """The windows :func:`iter_windows` cuts ``plan`` into, each made when it is read: only
    where each window starts is kept (a few per GiB), never a second copy of the plan's
    ranges. The last few windows read are kept (the one being received piece by piece, the
    one being flushed). Reads like the list of :class:`Pieces` it replaces."""

    KEEP = 3

    def __init__(self, plan, window):
        self.plan = plan
        self.window = window
        self._first = array("Q")  # per window: the index of the range it starts in
        self._at = array("Q")  # per window: the byte it starts at
        held = 0
        for k, (start, end) in enumerate(plan):
            # the windows starting inside this range: at each multiple of ``window`` of the
            # plan's bytes (as iter_windows cuts them)
            first = -(-held // window) * window
            for cut in range(first, held + end - start, window):
                self._first.append(k)
                self._at.append(start + cut - held)
            held += end - start
        self._kept = {}
        self._lock = threading.Lock()

    def __len__(self):
        return len(self._first)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        with self._lock:
            pieces = self._kept.get(index)
            if pieces is None:
                pieces = self._make(index)
                if len(self._kept) >= self.KEEP:
                    del self._kept[max(self._kept, key=lambda i: abs(i - index))]
                self._kept[index] = pieces
            return pieces

    def _make(self, index):
        window = self.window
        pieces = Pieces()
        held = 0
        pos = self._at[index]
        for start, end in pairs_from(self.plan, self._first[index]):
            pos = max(pos, start)  # the window's first byte in its first range, else the start
            while pos < end and held < window:
                stop = min(end, pos + PIECE, pos + (window - held))
                pieces.starts.append(pos)
                pieces.ends.append(stop)
                held += stop - pos
                pos = stop
            if held >= window:
                break
        return pieces

    def __iter__(self):
        for index in range(len(self)):
            yield self[index]


# --- codecs --------------------------------------------------------------------------------------


def _zstd_module():
    try:
        from compression import zstd  # Python 3.14+

        return ("stdlib", zstd)
    except ImportError:
        pass
    try:
        import zstandard

        return ("zstandard", zstandard)
    except ImportError:
        return None


_ZSTD = _zstd_module()


def available_codecs():
    return (["zstd"] if _ZSTD else []) + ["zlib", "none"]


class Codec:
    """Compresses pieces one by one; a piece that does not shrink goes raw. ``level``: zstd's
    (default :data:`ZSTD_LEVEL`; a report's fetches ask for :data:`ZSTD_FAST_LEVEL`)."""

    def __init__(self, name, level=None):
        if name == "zstd" and not _ZSTD:
            raise AgentError("zstd is not available here")
        self.name = name
        self.level = ZSTD_LEVEL if level is None else max(ZSTD_FAST_LEVEL, min(int(level), 19))
        self._c = self._d = None
        if name == "zstd" and _ZSTD and _ZSTD[0] == "zstandard":
            self._c = _ZSTD[1].ZstdCompressor(level=self.level)
            self._d = _ZSTD[1].ZstdDecompressor()

    def encode(self, data):
        if self.name == "none" or not data:
            return 0, data
        if self.name == "zlib":
            out = zlib.compress(data, ZLIB_LEVEL)
        elif self._c is not None:
            out = self._c.compress(data)
        else:
            out = _ZSTD[1].compress(data, self.level)
        if len(out) >= len(data):
            return 0, data
        return CODEC_IDS[self.name], out

    def decode(self, codec_id, payload, raw_len):
        # never inflate past the batch: the declared length, itself at most MAX_BATCH
        if raw_len > MAX_BATCH:
            raise ProtocolError(f"corrupt stream: a batch of {raw_len} bytes")
        if codec_id not in (0, CODEC_IDS[self.name]):
            raise ProtocolError(f"the stream uses codec {codec_id}, not the one agreed")
        try:
            if codec_id == 0:
                out = payload
            elif codec_id == 1:
                out = zlib.decompressobj().decompress(payload, raw_len + 1)
            elif codec_id == 2 and self._d is not None:
                # zstandard sizes its output by the frame's content size when there is one
                if _ZSTD[1].frame_content_size(payload) > raw_len:
                    raise ProtocolError("corrupt stream: a zstd frame larger than its batch")
                out = self._d.decompress(payload, max_output_size=raw_len)
            elif codec_id == 2 and _ZSTD:
                out = _ZSTD[1].ZstdDecompressor().decompress(payload, max_length=raw_len + 1)
            else:
                raise ProtocolError(f"stream uses codec {codec_id} which is not available here")
        except ProtocolError:
            raise
        except Exception as exc:  # zlib.error, zstd's own errors: the bytes are not the codec's
            raise ProtocolError(f"corrupt stream: {type(exc).__name__}") from None
        if len(out) != raw_len:
            raise ProtocolError(f"corrupt stream: piece of {len(out)} bytes, expected {raw_len}")
        return out


# --- framing -------------------------------------------------------------------------------------


def write_frame(out, kind, payload=b""):
    out.write(FRAME.pack(kind, len(payload)))
    if payload:
        out.write(payload)


def write_json(out, obj):
    write_frame(out, b"J", json.dumps(obj).encode())
    out.flush()


def read_exact(inp, n):
    """``n`` bytes, read a chunk at a time: a length the other end declares is never
    allocated before its bytes arrive."""
    if n <= READ_CHUNK:
        data = inp.read(n)
        if data is None or len(data) != n:
            raise Interrupted("the stream ended early")
        return data
    buf = bytearray()
    while len(buf) < n:
        data = inp.read(min(READ_CHUNK, n - len(buf)))
        if not data:
            raise Interrupted("the stream ended early")
        buf += data
    return bytes(buf)


def read_frame(inp, kinds=None, limit=None):
    """The next frame ``(kind, payload)``; a kind not in ``kinds`` (default: any the protocol
    has) or a length past the kind's :data:`FRAME_LIMITS` (or past ``limit``, when the reader
    expects less) is a :class:`ProtocolError`."""
    kind, length = FRAME.unpack(read_exact(inp, FRAME.size))
    if kind not in FRAME_LIMITS or (kinds is not None and kind not in kinds):
        raise ProtocolError(f"a frame of kind {kind!r} where the protocol has none")
    most = FRAME_LIMITS[kind] if limit is None else min(limit, FRAME_LIMITS[kind])
    if length > most:
        raise ProtocolError(f"a {kind!r} frame of {length} bytes (at most {most})")
    return kind, read_exact(inp, length) if length else b""


def parse_json(payload):
    """A control message: strict UTF-8, JSON, an object (nesting bounded by the recursion
    limit: the message shapes are at most four deep)."""
    try:
        msg = json.loads(payload.decode("utf-8"))
    except (ValueError, RecursionError):
        raise ProtocolError("a control message that is not UTF-8 JSON") from None
    if not isinstance(msg, dict):
        raise ProtocolError("a control message that is not a JSON object")
    return msg


def read_json(inp, limit=None):
    kind, payload = read_frame(inp, limit=limit)
    if kind != b"J":
        raise ProtocolError(f"expected a control message, got a {kind!r} frame")
    return parse_json(payload)


def one_line(text, limit=500):
    """``text`` from the other end as one printable line: control characters, line breaks and
    lone surrogates escaped, at most ``limit`` characters."""
    out = []
    for c in text[:limit]:
        if c.isprintable() and not 0xD800 <= ord(c) <= 0xDFFF:
            out.append(c)
        else:
            out.append(repr(c)[1:-1] if ord(c) < 0xD800 else f"\\u{ord(c):04x}")
    return "".join(out) + ("..." if len(text) > limit else "")


def expect_ok(msg):
    if msg.get("ok") is not True:
        error = msg.get("error")
        if not isinstance(error, str) or not error:
            raise ProtocolError("a failure without a message")
        raise RemoteFailed(one_line(error))
    return msg


# --- punching holes ------------------------------------------------------------------------------

_fallocate = None


def _libc_fallocate():
    global _fallocate
    if _fallocate is None:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        fn = getattr(libc, "fallocate64", None) or libc.fallocate
        fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
        fn.restype = ctypes.c_int
        _fallocate = fn
    return _fallocate


def punch_hole(fd, offset, length):
    """Deallocate ``[offset, offset+length)``, keeping the size; partial blocks are zeroed.

    Returns False when the filesystem cannot punch holes (the range then still reads as zeros
    only if it was never written).
    """
    if length <= 0:
        return True
    if _libc_fallocate()(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EOPNOTSUPP, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(err, "fallocate(PUNCH_HOLE) failed: " + os.strerror(err))


# --- source --------------------------------------------------------------------------------------

_preadv = getattr(os, "preadv", None)  # Python 3.7+


def _open_read(path):
    # O_NONBLOCK: a FIFO named like a tablespace must not block the open; Source refuses it
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | os.O_NONBLOCK | os.O_NOCTTY
    noatime = getattr(os, "O_NOATIME", 0)
    if noatime:
        try:
            return os.open(path, flags | noatime)
        except OSError as exc:
            if exc.errno != errno.EPERM:
                raise
    return os.open(path, flags)


def describe_oserror(path, exc):
    """``path: no such file`` and friends, for one-line messages."""
    names = {
        errno.ENOENT: "no such file or directory",
        errno.EACCES: "permission denied",
        errno.EPERM: "operation not permitted",
        errno.EISDIR: "is a directory",
        errno.ENOTDIR: "not a directory",
        errno.ENOSPC: "no space left on device",
        errno.EFBIG: "file too large (the file size limit was reached)",
        errno.EDQUOT: "disk quota exceeded",
        errno.EROFS: "read-only file system",
        errno.EIO: "input/output error",
        errno.ENXIO: "not a regular file (a socket or device)",
    }
    return f"{path}: {names.get(exc.errno, exc.strerror or str(exc))}"


def _crc_of(fd, start, end, crc, name):
    """CRC-32 of ``[start, end)`` of ``fd``, continuing ``crc``."""
    pos = start
    while pos < end:
        try:
            data = os.pread(fd, min(PIECE, end - pos), pos)
        except OSError as exc:
            raise AgentError(describe_oserror(name, exc)) from None
        if not data:
            raise AgentError(f"{name}: shorter than expected")
        crc = crc32(data, crc)
        pos += len(data)
    return crc


class Source:
    """A regular file opened read-only."""

    def __init__(self, path):
        self.path = path
        try:
            self.fd = _open_read(path)
        except OSError as exc:
            raise AgentError(describe_oserror(path, exc)) from None
        st = os.fstat(self.fd)
        if stat.S_ISDIR(st.st_mode):
            self.close()
            raise AgentError(f"{path}: is a directory")
        if not stat.S_ISREG(st.st_mode):
            self.close()
            raise AgentError(f"{path}: not a regular file")
        fcntl.fcntl(self.fd, fcntl.F_SETFL, fcntl.fcntl(self.fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        self.st = st
        self.size = st.st_size

    def identity(self):
        st = self.st
        return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ino": st.st_ino, "dev": st.st_dev}

    def meta(self):
        st = self.st
        return {
            "name": os.path.basename(self.path.rstrip("/")),
            "size": st.st_size,
            "mode": stat.S_IMODE(st.st_mode),
            "uid": st.st_uid,
            "gid": st.st_gid,
            "atime_ns": st.st_atime_ns,
            "mtime_ns": st.st_mtime_ns,
            "allocated": st.st_blocks * 512,
            "identity": self.identity(),
        }

    def data_ranges(self):
        return seek_data_ranges(self.fd, self.size)

    def read(self, start, end):
        chunks = []
        pos = start
        while pos < end:
            try:
                data = os.pread(self.fd, end - pos, pos)
            except OSError as exc:
                raise AgentError(describe_oserror(self.path, exc)) from None
            if not data:
                raise AgentError(f"{self.path}: file shrank while being copied")
            chunks.append(data)
            pos += len(data)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def window_crc(self, pieces):
        crc = 0
        for start, end in pieces:
            crc = _crc_of(self.fd, start, end, crc, self.path)
        return crc

    def check_unchanged(self):
        st = os.fstat(self.fd)
        if st.st_size != self.st.st_size or st.st_mtime_ns != self.st.st_mtime_ns:
            raise AgentError(f"{self.path}: changed while being copied")

    def close(self):
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


# --- destination ---------------------------------------------------------------------------------


def part_paths(final):
    d, name = os.path.split(final)
    part = os.path.join(d, "." + name + PART_SUFFIX)
    return part, part + STATE_SUFFIX


def _unlink_quiet(path, dir_fd=None):
    with contextlib.suppress(OSError):
        os.unlink(path, dir_fd=dir_fd)


# Files ibdtool writes live in directories other users may write (a datadir belongs to mysql):
# each is created with O_EXCL|O_NOFOLLOW relative to the directory opened once, so a symbolic
# or hard link planted under its name is never written through, and reopened for --resume only
# when it is still a regular file with one link, owned by us.
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def create_private(name, dir_fd, mode=0o600):
    """A new file ``name`` in ``dir_fd``, opened read-write; whatever held the name (a link
    planted there, a stale file) is unlinked first, never followed. EEXIST means someone
    recreated the name meanwhile: an error, not a retry."""
    _unlink_quiet(name, dir_fd)
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    return os.open(name, flags, mode, dir_fd=dir_fd)


def reopen_private(name, dir_fd, owners, flags=os.O_RDWR):
    """Reopen ``name`` (ours from an earlier run), or return ``(-1, why)`` when it is missing,
    a symbolic link, not a regular file, hard-linked elsewhere or owned by another user than
    ``owners``."""
    try:
        fd = os.open(name, flags | os.O_NONBLOCK | _NOFOLLOW | _CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return -1, "missing"
        if exc.errno == errno.ELOOP:
            return -1, "a symbolic link"
        return -1, describe_oserror(name, exc)
    st = os.fstat(fd)
    why = None
    if not stat.S_ISREG(st.st_mode):
        why = "not a regular file"
    elif st.st_nlink != 1:
        why = "linked to another name"
    elif st.st_uid not in owners:
        why = f"owned by uid {st.st_uid}"
    if why is not None:
        os.close(fd)
        return -1, why
    return fd, None


def resolve_destination(path, name, want_dir=False):
    """Where a copy of a file called ``name`` lands when asked to go to ``path``.

    An existing directory receives ``name``; anything else names the file itself, whose
    directory must exist. Returns the final path.
    """
    path = os.path.expanduser(path) if path else "."
    if os.path.isdir(path):
        return os.path.join(path, name)
    if want_dir or path.endswith("/"):
        raise AgentError(f"{path}: no such directory")
    parent = os.path.dirname(path) or "."
    if not os.path.isdir(parent):
        if os.path.exists(parent):
            raise AgentError(f"{parent}: not a directory")
        raise AgentError(f"{parent}: no such directory")
    return path


class Destination:
    """The file being written, under a temporary name until :meth:`finish` renames it.

    ``meta`` is the source's :meth:`Source.meta`. :meth:`prepare` fixes the plan and says
    from which window to continue; nothing exists on disk before it.
    """

    def __init__(self, final, meta, force=False, resume=False, verify=True, keep_owner=False):
        self.final = final
        self.meta = meta
        self.size = meta["size"]
        self.force = force
        self.resume = resume
        self.verify = verify
        self.keep_owner = keep_owner
        self.part, self.state_path = part_paths(final)
        self.dir = os.path.dirname(final) or "."
        self.part_name = os.path.basename(self.part)
        self.state_name = os.path.basename(self.state_path)
        self.final_name = os.path.basename(final)
        self.fd = -1
        self.dir_fd = -1
        self.plan = []
        self.plan_crc = 0
        self.window = MIN_WINDOW
        self.windows = Windows(Pieces(), MIN_WINDOW)  # the plan's, cut by :meth:`prepare`
        self.verified = []  # CRC of each window verified so far
        self.notes = []
        self.punch_supported = True
        self._next_window = 0
        self._flusher = None
        self._flush_error = None
        self._kernel_copy = hasattr(os, "copy_file_range")
        # read_back(fd, pieces) -> CRC-32 of the pieces as the part holds them (None: short),
        # set by a caller that checks more in the same read (ibdtool.copy.local: page checksums)
        self.read_back = None
        self.bytes_written = 0
        self._run_buf = None  # copy_pieces' read buffer, made on first use
        self.created = False
        if os.path.isdir(final):
            raise AgentError(f"{final}: is a directory")
        if os.path.lexists(final) and not force:
            raise AgentError(f"{final}: already exists (use --force to overwrite)")
        try:  # every name below is used relative to this, even if the path is swapped later
            self.dir_fd = os.open(self.dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
            st = os.fstatvfs(self.dir_fd)
            self.fs_block = st.f_bsize
            self.free = st.f_bavail * st.f_frsize
        except OSError as exc:
            self.close_dir()
            raise AgentError(describe_oserror(self.dir, exc)) from None
        owners = {os.geteuid()}
        if keep_owner:  # a sealed part, interrupted while its pages were checked
            owners.add(meta["uid"])
        self.owners = owners

    def close_dir(self):
        if self.dir_fd >= 0:
            os.close(self.dir_fd)
            self.dir_fd = -1

    def __del__(self):
        self.close_dir()

    def info(self):
        return {"dest": self.final, "fs_block": self.fs_block, "free": self.free}

    # -- plan and resume state ------------------------------------------------------------------

    def prepare(self, plan, window, streamed=None, source_sums=None):
        """Open (or reopen, with --resume) the part file; return the first window to send.

        A window of an interrupted copy is kept only when the part still reads back as
        recorded *and* ``source_sums(n)`` (the CRC-32s of the current source's first ``n``
        windows, read again now) gives the recorded CRC too: a source rewritten in place with
        its size, mtime and inode kept is copied again from its first changed window. Without
        ``source_sums`` nothing is kept.

        ``streamed`` replaces ``plan`` where keeping every range would not fit (a local copy
        of a densified compressed tablespace: one range a page): its ``windows`` is a sequence
        that makes each window's pieces on demand, ``crc`` is :func:`plan_crc` of the plan and
        ``bytes`` its :func:`plan_bytes`."""
        self.plan = plan
        self.window = window
        if streamed is None:
            self.windows = Windows(plan, window)
            self.plan_crc = plan_crc(plan, self.size)
            total = plan_bytes(plan)
        else:
            self.windows = streamed.windows
            self.plan_crc = streamed.crc
            total = streamed.bytes
        state = self._load_state(self.plan_crc) if self.resume else None
        if not self.resume and self._part_exists():
            self.notes.append("discarded an interrupted copy (use --resume to continue one)")
        if state is not None:
            self.fd, why = reopen_private(self.part_name, self.dir_fd, self.owners)
            if self.fd < 0:
                self.notes.append(f"{self.part}: {why}, not resumed: starting over")
                state = None
        if self.fd < 0:
            self._refuse_if_busy()
            try:
                self.fd = create_private(self.part_name, self.dir_fd)
            except OSError as exc:
                if exc.errno == errno.EEXIST:
                    raise AgentError(
                        f"{self.part}: created by another process meanwhile; not overwritten"
                    ) from None
                raise AgentError(describe_oserror(self.part, exc)) from None
        self.created = True
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self.fd)
            self.fd = -1
            self.created = False
            raise AgentError(f"{self.part}: another ibdtool copy is writing it") from None
        if state is not None and os.fstat(self.fd).st_size == self.size:
            self.verified = self._proven_windows(state["windows"][: len(self.windows)])
            self.verified = self._source_unchanged(self.verified, source_sums)
        if not self.verified:
            self.verified = []
            _unlink_quiet(self.state_name, self.dir_fd)
            os.ftruncate(self.fd, 0)
        self._next_window = len(self.verified)
        # every window but the last holds exactly ``window`` bytes
        remaining = max(0, total - len(self.verified) * window)
        try:
            st = os.fstatvfs(self.dir_fd)
            free = st.f_bavail * st.f_frsize
        except OSError:
            free = self.free
        if remaining + FREE_SPACE_SLACK > free:
            raise AgentError(
                f"{self.dir}: not enough free space: the copy needs {remaining} bytes, "
                f"{free} are available"
            )
        try:
            os.ftruncate(self.fd, self.size)
        except OSError as exc:
            raise self._oserror(exc) from None
        return len(self.verified)

    def _refuse_if_busy(self):
        """A part another ibdtool copy holds locked is not replaced under it."""
        try:
            fd = os.open(self.part_name, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW | _CLOEXEC,
                         dir_fd=self.dir_fd)  # fmt: skip
        except OSError:
            return
        try:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise AgentError(f"{self.part}: another ibdtool copy is writing it") from None
        finally:
            os.close(fd)

    def _part_exists(self):
        try:
            os.stat(self.part_name, dir_fd=self.dir_fd, follow_symlinks=False)
        except OSError:
            return False
        return True

    def _load_state(self, crc):
        if not self._part_exists():
            self.notes.append("nothing to resume: starting from the beginning")
            return None
        state = None
        fd, _ = reopen_private(self.state_name, self.dir_fd, self.owners, os.O_RDONLY)
        if fd >= 0:
            try:
                with os.fdopen(fd, "rb") as f:
                    state = json.loads(f.read(STATE_MAX_BYTES).decode("utf-8"))
            except (OSError, ValueError, RecursionError):  # damaged: a note, then start over
                state = None
        if (
            not isinstance(state, dict)
            or state.get("protocol") != PROTOCOL
            or state.get("plan_crc") != crc
            or state.get("window") != self.window
            or state.get("size") != self.size
            or not isinstance(state.get("windows"), list)
            or not all(isinstance(c, int) for c in state["windows"])
        ):
            self.notes.append("no usable record of the interrupted copy: starting over")
            return None
        if state.get("source") != self.meta["identity"]:
            self.notes.append("the source changed since the interrupted copy: starting over")
            return None
        return state

    def _proven_windows(self, recorded):
        """The CRCs of the leading windows of the part file that still read back as recorded:
        every kept window is read again, so a byte changed anywhere in the part since it was
        verified is copied again, not kept."""
        for index, crc in enumerate(recorded):
            if not self._readback_matches(index, crc):
                if index == 0:
                    self.notes.append(
                        "the interrupted copy does not read back right: starting over"
                    )
                else:
                    self.notes.append(
                        f"window {index + 1} of the interrupted copy does not read back "
                        f"as recorded: resuming from there"
                    )
                return list(recorded[:index])
        return list(recorded)

    def _source_unchanged(self, kept, source_sums):
        """The leading windows of ``kept`` whose bytes in the current source still have the
        recorded CRC-32 (``source_sums`` reads them again)."""
        if not kept:
            return kept
        if source_sums is None:
            self.notes.append("the source cannot be read again to compare: starting over")
            return []
        sums = source_sums(len(kept))
        for index, crc in enumerate(kept):
            if index >= len(sums) or sums[index] != crc:
                self.notes.append(
                    f"window {index + 1} of the source differs from the interrupted copy's "
                    f"(CRC-32 of the source read again now): "
                    + ("starting over" if index == 0 else "resuming from there")
                )
                return list(kept[:index])
        self.notes.append(
            f"kept {len(kept)} window{'s' if len(kept) != 1 else ''} of the interrupted copy: "
            "the part and the source both read again, their CRC-32s equal to those recorded"
        )
        return list(kept)

    def _readback_matches(self, index, crc):
        got = 0
        try:
            for start, end in self.windows[index]:
                got = _crc_of(self.fd, start, end, got, self.part)
        except AgentError:
            return False
        return got == crc

    def _window_reads_back(self, index, crc):
        if self.read_back is None:
            return self._readback_matches(index, crc)
        try:
            return self.read_back(self.fd, self.windows[index]) == crc
        except OSError:  # as _readback_matches: a window that cannot be read back differs
            return False

    def _save_state(self):
        state = {
            "protocol": PROTOCOL,
            "source": self.meta["identity"],
            "plan_crc": self.plan_crc,
            "window": self.window,
            "size": self.size,
            "windows": self.verified,
        }
        tmp = self.state_name + ".tmp"
        try:
            with os.fdopen(create_private(tmp, self.dir_fd), "w") as f:
                json.dump(state, f)
                f.flush()
                os.fsync(f.fileno())
            os.rename(tmp, self.state_name, src_dir_fd=self.dir_fd, dst_dir_fd=self.dir_fd)
        except OSError as exc:
            raise self._oserror(exc) from None

    # -- writing -------------------------------------------------------------------------------

    def _oserror(self, exc):
        if exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
            return AgentError(describe_oserror(self.final, exc))
        return AgentError(describe_oserror(self.part, exc))

    def write(self, offset, data):
        view = memoryview(data)
        pos = 0
        try:
            while pos < len(view):
                pos += os.pwrite(self.fd, view[pos:], offset + pos)
        except OSError as exc:
            raise self._oserror(exc) from None
        self.bytes_written += len(view)

    def copy_from(self, src_fd, start, end, crc=None):
        """Copy ``[start, end)`` of ``src_fd``; return the running CRC-32 when ``crc`` is given.

        Large pieces go through ``copy_file_range`` (no copy through user space, a reflink
        where the filesystem offers one); small ones, where a system call costs more than the
        copy (a page-compressed file is one data range per page), through pread/pwrite.
        """
        if self._kernel_copy and end - start >= KERNEL_COPY_MIN:
            pos = self._copy_in_kernel(src_fd, start, end)
            if crc is not None and pos > start:
                crc = _crc_of(src_fd, start, pos, crc, self.final)
        else:
            pos = start
        while pos < end:
            try:
                data = os.pread(src_fd, min(PIECE, end - pos), pos)
            except OSError as exc:
                raise AgentError(describe_oserror(self.final, exc)) from None
            if not data:
                raise AgentError("the source shrank while being copied")
            if crc is not None:
                crc = crc32(data, crc)
            self.write(pos, data)
            pos += len(data)
        return crc

    def copy_pieces(self, src_fd, pieces, crc=None):
        """:meth:`copy_from` for each of ``pieces``, the small ones in one tight loop: a run
        of small pieces close together (a page-compressed file has a piece a page, its zero
        tail between them) is read with one pread of at most :data:`PIECE` bytes, then each
        piece written with its own pwrite (the gaps stay holes); returns ``(crc, bytes
        copied)``."""
        pwrite, crc_of = os.pwrite, crc32
        fd = self.fd
        copied = 0
        if not isinstance(pieces, Pieces):
            pieces = Pieces(pieces)
        starts, ends = pieces.starts, pieces.ends
        count = len(starts)
        i = 0
        while i < count:
            start, end = starts[i], ends[i]
            if end - start >= KERNEL_COPY_MIN:
                copied += end - start
                crc = self.copy_from(src_fd, start, end, crc)
                i += 1
                continue
            j = i + 1  # pieces i..j-1 are read together
            last = end
            while (
                j < count
                and ends[j] - start <= PIECE
                and starts[j] - last <= COALESCE_GAP
                and ends[j] - starts[j] < KERNEL_COPY_MIN
            ):
                last = ends[j]
                j += 1
            try:
                data = self._read_run(src_fd, start, last - start)
            except OSError as exc:
                raise AgentError(describe_oserror(self.final, exc)) from None
            if len(data) != last - start:  # short: the careful loop copies each again
                for k in range(i, j):
                    copied += ends[k] - starts[k]
                    crc = self.copy_from(src_fd, starts[k], ends[k], crc)
                i = j
                continue
            view = data
            for k in range(i, j):
                at, stop = starts[k], ends[k]
                n = stop - at
                chunk = view[at - start : stop - start]
                if crc is not None:
                    crc = crc_of(chunk, crc)
                try:
                    done = pwrite(fd, chunk, at)
                except OSError as exc:
                    raise self._oserror(exc) from None
                self.bytes_written += done
                if done < n:
                    self.write(at + done, chunk[done:])
                copied += n
            i = j
        return crc, copied

    def _read_run(self, src_fd, start, n):
        """``n`` bytes at ``start`` (fewer at the end of the file) as a view of one buffer
        reused for every run (a fresh 1 MiB ``bytes`` a run is as many page faults as the copy
        of its bytes costs); valid until the next call. ``pread`` where there is no
        ``preadv`` (Python 3.6)."""
        if _preadv is None:
            return memoryview(os.pread(src_fd, n, start))
        if self._run_buf is None:
            self._run_buf = memoryview(bytearray(PIECE))
        view = self._run_buf[:n]
        return view[: _preadv(src_fd, [view], start)]

    def _copy_in_kernel(self, src_fd, start, end):
        pos = start
        try:
            while pos < end:
                try:
                    n = os.copy_file_range(src_fd, self.fd, end - pos, pos, pos)
                except OSError as exc:
                    if exc.errno in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
                        self._kernel_copy = False
                        break
                    raise
                if n <= 0:
                    self._kernel_copy = False
                    break
                pos += n
                self.bytes_written += n
        except OSError as exc:
            raise self._oserror(exc) from None
        return pos

    def checkpoint(self, index, crc):
        """Window ``index`` is written: make it durable, read it back, record it.

        This runs in a thread while the next window is written (the flush of one window
        overlaps the copy of the next); a failure surfaces at the next checkpoint or at
        :meth:`seal`. Windows are recorded strictly in order.
        """
        if index != self._next_window:
            raise AgentError(f"protocol error: window {index} out of order")
        self._next_window += 1
        self.wait_checkpoints()
        self._flusher = threading.Thread(target=self._checkpoint, args=(index, crc))
        self._flusher.daemon = True
        self._flusher.start()

    def _holes_before(self, index):
        """The holes up to the end of window ``index`` (the file's end past the last window),
        from the end of the window before; the flusher punches them with each window."""
        lo = self.windows[index - 1][-1][1] if index > 0 else 0
        if index >= len(self.windows):
            return Pieces([(lo, self.size)] if lo < self.size else [])
        out = Pieces()
        for start, end in self.windows[index]:
            if start > lo:
                out.append((lo, start))
            lo = max(lo, end)
        return out

    def wait_checkpoints(self):
        """Wait for the window being flushed; raise its failure, if any."""
        if self._flusher is not None:
            self._flusher.join()
            self._flusher = None
        if self._flush_error is not None:
            exc, self._flush_error = self._flush_error, None
            raise exc

    def _checkpoint(self, index, crc):
        try:
            try:
                os.fdatasync(self.fd)
            except OSError as exc:
                raise self._oserror(exc) from None
            self.punch(self._allocated_holes(self._holes_before(index)))
            if self.verify and not self._window_reads_back(index, crc):
                first, last = self.windows[index][0][0], self.windows[index][-1][1]
                raise VerifyError(
                    f"{self.final}: bytes {first}..{last} differ from the source after writing"
                )
            self.verified.append(crc)
            self._save_state()
        except BaseException as exc:
            self._flush_error = exc

    def allocated(self):
        return os.fstat(self.fd).st_blocks * 512 if self.fd >= 0 else 0

    def drop_plan(self):
        """Once every window is received: keep of the plan only what :meth:`seal` needs
        (how many windows there were, and the last one: the holes after it are punched
        there). A pull re-punches the received file next, reading its data map: the plan
        beside it would be a second map of a page-compressed file (16 bytes a range)."""
        self.wait_checkpoints()
        self.windows = _LastWindow(self.windows)  # type: ignore[assignment]
        self.plan = []

    def _allocated_holes(self, holes):
        """The parts of ``holes`` that hold blocks, after the window's fdatasync. The part
        file starts empty and only the plan's pieces are written, so on most filesystems
        there are none; a hole is still punched wherever one holds a block (XFS speculative
        preallocation, a resumed part), and every hole where FIEMAP is missing. A page-
        compressed plan has a hole a page: 89,088 punches a 1.4 GB file, most of the flush
        thread's time (RESULTS.md, h-copy)."""
        if not self.punch_supported:
            return holes
        try:
            return allocated_within(self.fd, holes, self.fs_block)
        except OSError as exc:
            raise self._oserror(exc) from None

    def punch(self, ranges):
        """Punch ``ranges`` in the part file; False once the filesystem refuses."""
        for start, end in ranges:
            if not self.punch_supported:
                return False
            try:
                self.punch_supported = punch_hole(self.fd, start, end - start)
            except OSError as exc:
                raise self._oserror(exc) from None
        return self.punch_supported

    def seal(self):
        """Punch every hole, fsync, give the source's mode (less the setuid, setgid, sticky
        and world-write bits: :data:`KEPT_MODE_BITS`), its owner (``keep_owner``: a local copy
        by root) and times."""
        self.wait_checkpoints()
        if len(self.verified) != len(self.windows):
            raise AgentError("protocol error: the stream ended before the last window")
        try:
            os.fdatasync(self.fd)  # FIEMAP then sees the tail's blocks as they will stay
        except OSError as exc:
            raise self._oserror(exc) from None
        if not self.punch(self._allocated_holes(self._holes_before(len(self.windows)))):
            self.notes.append(
                f"{self.dir}: the filesystem cannot punch holes, the copy is not sparse"
            )
        m = self.meta
        try:
            os.fsync(self.fd)
            os.fchmod(self.fd, m["mode"] & KEPT_MODE_BITS)
            if self.keep_owner:
                try:
                    os.fchown(self.fd, m["uid"], m["gid"])
                except OSError:
                    self.notes.append("could not keep the owner of the source")
            os.utime(self.fd, ns=(m["atime_ns"], m["mtime_ns"]))
            os.fsync(self.fd)
        except OSError as exc:
            raise self._oserror(exc) from None
        return self.allocated()

    def commit(self):
        """Rename the sealed part into place; the copy now exists under its final name."""
        self._rename()
        _unlink_quiet(self.state_name, self.dir_fd)
        with contextlib.suppress(OSError):
            os.fsync(self.dir_fd)
        os.close(self.fd)
        self.fd = -1
        self.close_dir()

    def finish(self):
        allocated = self.seal()
        self.commit()
        return allocated

    def _rename(self):
        """Give the part its final name; rename() and link() replace or refuse a name, never
        follow it. Refused when the part's name no longer leads to the file written."""
        try:
            st = os.stat(self.part_name, dir_fd=self.dir_fd, follow_symlinks=False)
        except OSError as exc:
            raise AgentError(describe_oserror(self.part, exc)) from None
        mine = os.fstat(self.fd)
        if (st.st_dev, st.st_ino) != (mine.st_dev, mine.st_ino):
            raise AgentError(f"{self.part}: replaced by another process; not renamed")
        at = {"src_dir_fd": self.dir_fd, "dst_dir_fd": self.dir_fd}
        if self.force:
            os.rename(self.part_name, self.final_name, **at)
            return
        try:  # link() fails if the name appeared meanwhile: never clobber without --force
            os.link(self.part_name, self.final_name, follow_symlinks=False, **at)
        except OSError as exc:
            if exc.errno == errno.EEXIST:
                raise AgentError(
                    f"{self.final}: appeared during the copy; not overwritten"
                ) from None
            if os.path.lexists(self.final):
                raise AgentError(
                    f"{self.final}: already exists (use --force to overwrite)"
                ) from None
            os.rename(self.part_name, self.final_name, **at)
            return
        os.unlink(self.part_name, dir_fd=self.dir_fd)

    def abandon(self, keep):
        """After a failure: keep the part for --resume when asked and useful, else remove."""
        with contextlib.suppress(BaseException):  # the failure being handled matters more
            self.wait_checkpoints()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if not self.created or (keep and self.verified):
            self.close_dir()
            return self.created
        for name in (self.part_name, self.state_name, self.state_name + ".tmp"):
            _unlink_quiet(name, self.dir_fd)
        self.created = False
        self.close_dir()
        return False


# --- streaming -----------------------------------------------------------------------------------


class _LastWindow:
    """What :meth:`Destination.drop_plan` keeps of the windows: their count and the last."""

    def __init__(self, windows):
        self.count = len(windows)
        self.last = windows[self.count - 1] if self.count else Pieces()

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        if index < 0:
            index += self.count
        if index != self.count - 1:
            raise IndexError(f"window {index} was dropped with the plan")
        return self.last


class RateLimit:
    def __init__(self, rate):
        self.rate = rate
        self.start = time.monotonic()
        self.sent = 0

    def account(self, n):
        if not self.rate:
            return
        self.sent += n
        ahead = self.sent / float(self.rate) - (time.monotonic() - self.start)
        if ahead > 0:
            time.sleep(ahead)


def encode_batch(batch, codec):
    """One ``D`` frame payload: the pieces' offsets and lengths, then their bytes, compressed
    together (a page-compressed file has one small data range per page)."""
    raw = b"".join(data for _, data in batch)
    cid, payload = codec.encode(raw)
    head = DATA_HEAD.pack(len(batch), cid, len(raw))
    return head + b"".join(DATA_PIECE.pack(a, len(data)) for a, data in batch) + payload


def batch_table(payload):
    """``(codec id, raw bytes, [(offset, length), ...], body start)`` of a ``D`` frame,
    checked: at least one piece, none empty, the table inside the frame, the lengths adding up
    to the raw bytes."""
    if len(payload) < DATA_HEAD.size:
        raise ProtocolError("a data frame shorter than its head")
    count, cid, raw_len = DATA_HEAD.unpack_from(payload)
    body = DATA_HEAD.size + count * DATA_PIECE.size
    if not 0 < count <= min(MAX_PIECES, raw_len) or body > len(payload):
        raise ProtocolError(f"a data frame of {count} pieces and {raw_len} bytes")
    table = [
        DATA_PIECE.unpack_from(payload, at) for at in range(DATA_HEAD.size, body, DATA_PIECE.size)
    ]
    if sum(length for _, length in table) != raw_len or not all(n for _, n in table):
        raise ProtocolError("a data frame whose pieces do not add up to its bytes")
    return cid, raw_len, table, body


def decode_batch(payload, codec):
    """``[(offset, bytes), ...]`` from a ``D`` frame payload."""
    cid, raw_len, table, body = batch_table(payload)
    data = memoryview(codec.decode(cid, payload[body:], raw_len))
    out = []
    pos = 0
    for offset, length in table:
        out.append((offset, data[pos : pos + length]))
        pos += length
    return out


def batch_extent(payload):
    """(end of the last piece, raw bytes) of a ``D`` frame payload, for progress."""
    _, raw_len, table, _ = batch_table(payload)
    return table[-1][0] + table[-1][1], raw_len


def send_stream(out, src, windows, start, codec, verify=True, bwlimit=0, progress=None):
    """Frames for ``windows[start:]`` of ``src``; ``progress(piece_end, raw, sent)``."""
    limit = RateLimit(bwlimit)

    def flush(batch, held):
        frame = encode_batch(batch, codec)
        write_frame(out, b"D", frame)
        limit.account(FRAME.size + len(frame))
        if progress is not None:
            progress(batch[-1][0] + len(batch[-1][1]), held, FRAME.size + len(frame))

    for index in range(start, len(windows)):
        crc = 0
        batch = []
        held = 0
        for a, b in windows[index]:
            data = src.read(a, b)
            if verify:
                crc = crc32(data, crc)
            batch.append((a, data))
            held += len(data)
            if held >= PIECE or len(batch) >= MAX_PIECES:
                flush(batch, held)
                batch, held = [], 0
        if batch:
            flush(batch, held)
        write_frame(out, b"K", CHECK.pack(index, crc & 0xFFFFFFFF))
        out.flush()
    src.check_unchanged()
    write_frame(out, b"E")
    out.flush()


def receive_stream(inp, dest, codec, on_window=None, progress=None):
    """Apply frames to ``dest`` until ``E``; ``on_window(index)`` after each checkpoint.

    The sender cuts the same windows from the same plan, so every piece must be the next one
    of ``dest.windows``, exactly, and each window's ``K`` must follow its last piece, with the
    CRC-32 of the bytes received (when verifying): a piece anywhere else, a window skipped or
    a checksum that does not match is a :class:`ProtocolError`, before anything is written
    there."""
    windows = dest.windows
    index = dest._next_window
    at = 0  # the next piece of window ``index``
    crc = 0
    while True:
        kind, payload = read_frame(inp, (b"D", b"K", b"E", b"J"))
        if kind == b"D":
            pieces = decode_batch(payload, codec)
            for offset, data in pieces:
                if index >= len(windows) or at >= len(windows[index]):
                    raise ProtocolError(f"a piece at byte {offset} past the end of its window")
                start, end = windows[index][at]
                if (offset, len(data)) != (start, end - start):
                    raise ProtocolError(
                        f"a piece of {len(data)} bytes at byte {offset}, not the plan's "
                        f"{end - start} at {start}"
                    )
                if dest.verify:
                    crc = crc32(data, crc)
                dest.write(offset, data)
                at += 1
            if progress is not None:
                progress(pieces[-1][0] + len(pieces[-1][1]), sum(len(d) for _, d in pieces),
                         len(payload) + FRAME.size)  # fmt: skip
        elif kind == b"K":
            if len(payload) != CHECK.size:
                raise ProtocolError(f"a checkpoint frame of {len(payload)} bytes")
            got, sent_crc = CHECK.unpack(payload)
            if got != index or index >= len(windows) or at != len(windows[index]):
                raise ProtocolError(f"window {got} ended out of order")
            if dest.verify and (crc & 0xFFFFFFFF) != sent_crc:
                raise ProtocolError(
                    f"the bytes received for window {index + 1} do not match the sender's CRC-32"
                )
            dest.checkpoint(index, sent_crc)
            if on_window is not None:
                on_window(index)
            index, at, crc = index + 1, 0, 0
        elif kind == b"E":
            if payload or at or index != len(windows):
                raise ProtocolError(f"the stream ended after {index} of its {len(windows)} windows")
            return
        else:
            expect_ok(parse_json(payload))
            raise ProtocolError("a control message inside the data stream")


# --- the remote program --------------------------------------------------------------------------


def _serve_receive(req, inp, out):
    """Push: answer where the file goes, take the plan, apply the frames, rename."""
    meta = req["meta"]
    final = resolve_destination(req["path"], meta["name"], req.get("want_dir", False))
    dest = Destination(
        final, meta, force=req.get("force", False), resume=req.get("resume", False),
        verify=req.get("verify", True),
    )  # fmt: skip
    write_json(out, dict(dest.info(), ok=True))
    plan_msg = read_json(inp)
    if plan_msg.get("op") != "plan":
        dest.close_dir()
        return  # the sender gave up on this file (e.g. its own checks failed)
    kind, blob = read_frame(inp)
    if kind != b"M":
        dest.close_dir()
        raise ProtocolError("expected the plan")
    finished = False

    def source_sums(count):
        """Ask the sender for the CRC-32s of its source's first ``count`` windows, now."""
        write_json(out, {"ok": True, "sums": count})
        msg = read_json(inp)
        crcs = msg.get("crcs") if msg.get("op") == "sums" else None
        if not isinstance(crcs, list) or not all(isinstance(c, int) for c in crcs):
            raise ProtocolError("the source's window sums are not a list of numbers")
        return crcs

    try:
        plan = unpack_ranges(blob, dest.size)
        start = dest.prepare(plan, plan_msg["window"], source_sums=source_sums)
        write_json(out, {"ok": True, "start": start, "notes": dest.notes})
        codec = Codec(plan_msg.get("codec", "none"))

        def on_window(index):
            write_json(out, {"ok": True, "window": index, "allocated": dest.allocated()})

        receive_stream(inp, dest, codec, on_window=on_window)
        allocated = dest.finish()
        finished = True
        write_json(
            out,
            {"ok": True, "done": True, "dest": final, "allocated": allocated, "notes": dest.notes,
             "bytes_written": dest.bytes_written},
        )  # fmt: skip
    except AgentError as exc:
        exc.fatal = True  # type: ignore[attr-defined]  # the stream is out of step now
        dest.abandon(keep=False)
        raise
    finally:
        if not finished:  # the link broke or a signal came: keep what was verified
            dest.abandon(keep=True)


def _serve_send(req, inp, out):
    """Pull: describe the file and its data map, then stream the plan asked for."""
    src = Source(os.path.expanduser(req["path"]))
    try:
        write_json(out, dict(src.meta(), ok=True, fs_block=os.fstatvfs(src.fd).f_bsize))
        write_frame(out, b"M", pack_ranges(src.data_ranges()))
        out.flush()
        while True:
            msg = read_json(inp)
            if msg.get("op") not in ("sums", "stream"):
                return
            plan = unpack_ranges(read_frame(inp, (b"M",))[1], src.size)
            windows = Windows(plan, msg["window"])
            if msg["op"] == "stream":
                break
            # --resume: the CRC-32 of each window the other end would keep, read again now
            crcs = [src.window_crc(windows[i]) for i in range(min(msg["count"], len(windows)))]
            write_json(out, {"ok": True, "crcs": crcs})
        try:
            send_stream(
                out, src, windows, msg["start"], Codec(msg.get("codec", "none")),
                verify=msg.get("verify", True), bwlimit=msg.get("bwlimit", 0),
            )  # fmt: skip
        except AgentError as exc:
            exc.fatal = True  # type: ignore[attr-defined]
            raise
    finally:
        src.close()


# --- reading for ``report host:path`` ------------------------------------------------------------

FS_IOC_FIEMAP = 0xC020660B
FIEMAP_HEAD = struct.Struct("=QQIIII")
FIEMAP_EXTENT = struct.Struct("=QQQ16xI12x")
FIEMAP_BATCH = 512
FIEMAP_LAST = 0x0001
FIEMAP_UNWRITTEN = 0x0800


class _NoFiemap(Exception):
    """The filesystem has no FS_IOC_FIEMAP."""


def _fiemap_answers(fd, start, end):
    """Each FS_IOC_FIEMAP answer over ``[start, end)`` (never with FIEMAP_FLAG_SYNC,
    ``FIEMAP_BATCH`` extents an ioctl) as the bytes of its extent records, in order; raises
    :class:`_NoFiemap` where the filesystem has none. Only one answer is held at a time."""
    buf = bytearray(FIEMAP_HEAD.size + FIEMAP_BATCH * FIEMAP_EXTENT.size)
    head = FIEMAP_HEAD.size
    pos = start
    while pos < end:
        FIEMAP_HEAD.pack_into(buf, 0, pos, end - pos, 0, 0, FIEMAP_BATCH, 0)
        try:
            fcntl.ioctl(fd, FS_IOC_FIEMAP, buf, True)
        except OSError as exc:
            if exc.errno in (errno.ENOTTY, errno.EOPNOTSUPP, getattr(errno, "ENOTSUP", -1)):
                raise _NoFiemap() from None
            raise
        mapped = min(FIEMAP_HEAD.unpack_from(buf, 0)[3], FIEMAP_BATCH)
        if not mapped:
            return
        last = FIEMAP_EXTENT.unpack_from(buf, head + (mapped - 1) * FIEMAP_EXTENT.size)
        yield bytes(buf[head : head + mapped * FIEMAP_EXTENT.size])
        if last[3] & FIEMAP_LAST or last[0] + last[2] <= pos:
            return
        pos = last[0] + last[2]


def _fiemap(fd, start, end):
    """Each extent ``(logical, physical, length, flags)`` of ``fd`` overlapping ``[start,
    end)``, in order (:func:`_fiemap_answers`)."""
    for answer in _fiemap_answers(fd, start, end):
        yield from FIEMAP_EXTENT.iter_unpack(answer)


#: FIEMAP's length field is 64 bits: "to the end of the file"
_TO_EOF = 0xFFFFFFFFFFFFFFFF


def fiemap_counts(fd):
    """``[extents, unwritten extents, contiguous runs, unwritten bytes]`` by FS_IOC_FIEMAP, or
    None where the filesystem has none: the remote twin of ``ibdtool.fs.allocation.fiemap`` and
    ``contiguous_runs`` (this file cannot import ibdtool)."""
    extents = unwritten = runs = unwritten_bytes = 0
    prev = None
    try:
        for logical, physical, length, flags in _fiemap(fd, 0, _TO_EOF):
            extents += 1
            if flags & FIEMAP_UNWRITTEN:
                unwritten += 1
                unwritten_bytes += length
            if prev is None:
                runs = 1
            elif physical not in (prev[1] + prev[2], prev[1] + (logical - prev[0])):
                runs += 1
            prev = (logical, physical, length)
    except _NoFiemap:
        return None
    return [extents, unwritten, runs, unwritten_bytes]


def _extent_batches(fd, start, end):
    """The extents of :func:`_fiemap_answers` over ``[start, end)``, an answer at a time, as
    two arrays: their starts and their ends (each answer unpacked at once, no Python step an
    extent). Only one answer is held: a window of a page-compressed part has an extent a
    page, and holding them all would cost 16 bytes an extent beside the plan."""
    for answer in _fiemap_answers(fd, start, end):
        rows = list(FIEMAP_EXTENT.iter_unpack(answer))
        lows = array("Q", [r[0] for r in rows])
        highs = array("Q", map(operator.add, lows, (r[2] for r in rows)))
        del rows, answer  # not held while the caller walks this answer
        yield lows, highs


def allocated_within(fd, holes, block):
    """The whole ``block``s of ``holes`` (sorted, disjoint) the filesystem holds allocated:
    what punching them would free, as :class:`Pieces`. All of ``holes`` where FIEMAP is
    missing (then every hole is punched, as before). The extents over the holes' span are
    walked beside the holes, one FIEMAP answer at a time (:func:`_extent_batches`): each hole
    skips the extents that end at or before its start (``bisect`` within an answer) and takes
    those that begin before its end; an extent reaching past a hole's end is kept for the
    next hole."""
    if not len(holes):
        return Pieces()
    try:
        return _allocated_of(holes, _extent_batches(fd, holes[0][0], holes[-1][1]), block)
    except _NoFiemap:
        return holes


def _allocated_of(holes, batches, block):
    """:func:`allocated_within` of ``holes`` over the extents of ``batches``."""
    out = Pieces()
    lows, highs = array("Q"), array("Q")
    i = 0

    def refill():
        """The next answer's extents from its first; False: there are no more."""
        nonlocal lows, highs, i
        answer = next(batches, None)
        if answer is None:
            return False
        (lows, highs), i = answer, 0
        return True

    for start, end in holes:
        start, end = -(-start // block) * block, end // block * block
        if end <= start:
            continue
        while True:
            if i >= len(lows) and not refill():
                return out
            if highs[-1] > start:
                break
            i = len(lows)  # every extent of this answer ends before the hole
        i = max(i, bisect.bisect_right(highs, start))
        while True:
            if i >= len(lows) and not refill():
                return out
            if lows[i] >= end:
                break
            out.append((max(start, lows[i]), min(end, highs[i])))
            if highs[i] > end:
                break  # the extent goes on past this hole: the next hole may take it too
            i += 1
    return out


#: a ``walk`` batch ends once its entries' JSON reaches this many bytes (or the number of files
#: the reader asked for): one entry more is at most ~50 KB (a 4096-character path, escaped), so
#: a batch's control message stays under :data:`WALK_FRAME`, the limit its reader reads it with
WALK_BYTES = 256 << 10
WALK_FRAME = 1 << 20

#: the walk in progress (``walk`` starts it, ``walk_more`` goes on with it): its entries as
#: ``os.walk`` finds them, a folder at a time
_WALK = {}  # type: dict


def _listed(path, st=None):
    """``[path, st_size, st_size, st_blocks * 512]``, the last two null but for a regular
    file (what a local report's error row shows)."""
    try:
        st = st or os.stat(path)
    except OSError:
        return [path, 0, None, None]
    if not stat.S_ISREG(st.st_mode):
        return [path, st.st_size, None, None]
    return [path, st.st_size, st.st_size, st.st_blocks * 512]


def _walk_entries(root, names):
    """``(0, :func:`_listed`)`` for each tablespace under ``root`` (folders and files in name
    order), then ``(1, [folder, why])`` for each folder that could not be listed, as a local
    report lists them."""
    unlisted = []  # type: list
    for folder, dirnames, filenames in os.walk(root, onerror=unlisted.append):
        dirnames.sort()
        for name in sorted(filenames):
            if any(p.match(name) for p in names):
                yield 0, _listed(os.path.join(folder, name))
    for e in unlisted:
        yield 1, [e.filename or root, e.strerror or str(e)]


def _walk_batch(reply, limit):
    """``reply`` with the walk's next entries (at most ``limit``, or :data:`WALK_BYTES` of
    JSON) as ``files`` and ``unlisted``, and ``more``: whether the walk goes on."""
    files = []  # type: list
    unlisted = []  # type: list
    entries = _WALK.get("entries")
    budget = WALK_BYTES
    more = False
    if entries is not None:
        for kind, entry in entries:
            (unlisted if kind else files).append(entry)
            budget -= len(json.dumps(entry)) + 2
            if len(files) + len(unlisted) >= limit or budget <= 0:
                more = True
                break
        else:
            _WALK.clear()
    reply.update({"files": files, "unlisted": unlisted, "more": more})
    return reply


def _serve_walk(req, out):
    """The tablespaces under ``path`` (or the file itself), a batch at a time: the first
    batch with the root, whether it is a folder and whether it is a data directory; the next
    ones on ``walk_more`` while ``more`` says so (:func:`_walk_batch`). The reader asks for the
    next batch among its other requests, so it never holds more than a batch or two of a
    listing of 100,000 files, and reads its first files while the walk goes on."""
    _WALK.clear()
    root = os.path.abspath(os.path.expanduser(req["path"]))
    names = [re.compile(p) for p in req.get("patterns", [])]
    markers = req.get("markers", [])
    limit = max(1, int(req.get("batch", 1000)))

    def is_datadir(folder):
        return any(os.path.lexists(os.path.join(folder, m)) for m in markers)

    try:
        st = os.stat(root)
    except OSError as exc:
        raise AgentError(describe_oserror(root, exc)) from None
    if not stat.S_ISDIR(st.st_mode):
        parent = os.path.dirname(root)
        entries = iter([(0, _listed(root, st))])
        head = {"ok": True, "root": root, "dir": False, "datadir": is_datadir(parent)}
    else:
        entries = _walk_entries(root, names)
        head = {"ok": True, "root": root, "dir": True, "datadir": is_datadir(root)}
    _WALK["entries"] = entries
    write_json(out, _walk_batch(head, limit))


def _serve_walk_more(req, out):
    """The next batch of the walk in progress (none: an empty last batch)."""
    write_json(out, _walk_batch({"ok": True}, max(1, int(req.get("batch", 1000)))))


_OPEN = {}  # type: dict


def _allocation_facts(src, req):
    """An open file's data map, filesystem block and FIEMAP counts (none unless asked), as
    ``open`` and ``fetch`` send them; an OSError is the :class:`AgentError` naming the file."""
    try:
        ranges = src.data_ranges()
        try:
            block = os.fstatvfs(src.fd).f_bsize or src.st.st_blksize
        except OSError:
            block = src.st.st_blksize
        counts = fiemap_counts(src.fd) if req.get("extents", True) else None
    except OSError as exc:
        raise AgentError(describe_oserror(src.path, exc)) from None
    return ranges, block, counts


def _serve_open(req, out):
    """Open a file read-only (a FIFO or device is refused); its allocation facts and data map."""
    src = Source(os.path.expanduser(req["path"]))
    try:
        ranges, block, counts = _allocation_facts(src, req)
    except AgentError:
        src.close()
        raise
    handle = max(_OPEN, default=0) + 1
    _OPEN[handle] = (src, ranges)
    allocated = src.st.st_blocks * 512
    write_json(out, {"ok": True, "handle": handle, "size": src.size, "allocated": allocated,
                     "fs_block": block, "fiemap": counts})  # fmt: skip
    write_frame(out, b"M", pack_ranges(ranges))
    out.flush()


def _opened(req):
    try:
        return _OPEN[req["handle"]]
    except KeyError:
        raise AgentError("protocol error: no such open file") from None


def _serve_read(req, out):
    """The data of ``[start, end)`` as ``D`` frames (holes left out), then ``E``."""
    src, ranges = _opened(req)
    _send_data(out, src, ranges, req["start"], req["end"], Codec(req.get("codec", "none")))
    out.flush()


#: the pieces of a ``D`` frame being made are read into one buffer (two :data:`PIECE`\ s: a
#: frame is sent once it holds one), side by side: no fresh buffer a piece, and the frame's
#: bytes are one run to compress, not pieces to join. Made on first use.
_BATCH = []  # type: list


def _send_data(out, src, ranges, lo, hi, codec):
    """The data of ``src`` in ``[lo, hi)`` as ``D`` frames (its ``ranges`` only), then ``E``
    (each frame the :func:`encode_batch` of its pieces, read into one reused buffer)."""
    if not _BATCH:
        _BATCH.append(memoryview(bytearray(MAX_BATCH)))
    view = _BATCH[0]
    table = []
    held = 0
    for a, b in ranges:
        a, b = max(a, lo), min(b, hi)
        while a < b:
            n = min(PIECE, b - a)
            try:
                if _preadv is not None:
                    got = _preadv(src.fd, [view[held : held + n]], a)
                else:  # Python 3.6
                    data = os.pread(src.fd, n, a)
                    got = len(data)
                    view[held : held + got] = data
            except OSError as exc:
                raise AgentError(describe_oserror(src.path, exc)) from None
            if not got:
                raise AgentError(f"{src.path}: file shrank while reading (at byte {a})")
            table.append((a, got))
            held += got
            a += got
            if held >= PIECE or len(table) >= MAX_PIECES:
                _write_batch(out, table, view[:held], codec)
                table, held = [], 0
    if table:
        _write_batch(out, table, view[:held], codec)
    write_frame(out, b"E")


def _write_batch(out, table, raw, codec):
    """The ``D`` frame (:func:`encode_batch`) of the pieces ``table`` (offset, length) whose
    bytes are ``raw``, side by side, written in three parts: its body is not copied behind
    its head (what is sent raw is copied out of the reused buffer ``raw`` views)."""
    cid, payload = codec.encode(raw)
    if payload is raw:
        payload = bytes(raw)
    head = DATA_HEAD.pack(len(table), cid, len(raw))
    head += b"".join(DATA_PIECE.pack(a, n) for a, n in table)
    out.write(FRAME.pack(b"D", len(head) + len(payload)))
    out.write(head)
    out.write(payload)


def _read_small(path, limit):
    """At most ``limit`` bytes of the regular file ``path``, or None when it cannot be read
    (as :class:`Source` opens it; most tablespaces have no ``.cfg``: a failed open costs no
    more than the open)."""
    try:
        fd = _open_read(os.path.expanduser(path))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        return os.pread(fd, min(st.st_size, limit), 0)
    except OSError:
        return None
    finally:
        os.close(fd)


_CODECS = {}  # type: dict


def _codec(name, level=None):
    """The :class:`Codec` ``name`` (at ``level``), made once (a fetch a file: its compressor
    made anew each time cost as much as the rest of the request)."""
    if (name, level) not in _CODECS:
        _CODECS[name, level] = Codec(name, level)
    return _CODECS[name, level]


#: a reply is gathered up to this many bytes and written in one call: the reader wakes once
#: for a small file's whole reply, not once for each of its frames
GATHER_BYTES = 1 << 20


class _Gathered:
    """A writer that keeps what is written (no copy) and passes it on in one ``write`` once it
    holds :data:`GATHER_BYTES`, and on :meth:`flush`."""

    def __init__(self, out):
        self.out = out
        self.parts = []  # type: list
        self.held = 0

    def write(self, data):
        self.parts.append(data)
        self.held += len(data)
        if self.held >= GATHER_BYTES:
            self._pass()

    def _pass(self):
        if self.parts:
            self.out.write(b"".join(self.parts))
            self.parts, self.held = [], 0

    def flush(self):
        self._pass()
        self.out.flush()


def _serve_fetch(req, out):
    """:func:`_fetch` of ``req``, its reply written to ``out`` in one piece (:class:`_Gathered`;
    what was gathered goes out before a failure the main loop reports after it)."""
    gathered = _Gathered(out)
    try:
        _fetch(req, gathered)
    finally:
        gathered._pass()
    out.flush()


def _fetch(req, out):
    """A small file whole, in one reply: its allocation facts (as ``open``) and the sizes of
    the small files asked for beside it (``siblings``: ``[path, max]`` each; null for one that
    cannot be read), then ``M`` (its data map; none when ``dense`` says the file has no hole:
    its map is the one run ``[0, size)``, as most small files' is), its data as ``read`` sends
    it (``D`` frames, then ``E``) and an ``R`` frame for each sibling read. A file larger than
    ``max`` is only named so (``whole`` false): the reader reads it a range at a time."""
    src = Source(os.path.expanduser(req["path"]))
    try:
        if src.size > int(req["max"]):
            named = {"ok": True, "whole": False, "size": src.size}
            write_frame(out, b"J", json.dumps(named).encode())
            return
        ranges, block, counts = _allocation_facts(src, req)
        siblings = [_read_small(path, int(limit)) for path, limit in req.get("siblings", [])]
        lengths = [None if s is None else len(s) for s in siblings]
        dense = ranges.total() == src.size  # one run from byte 0 to the end: no M
        facts = {"ok": True, "whole": True, "size": src.size, "dense": dense,
                 "allocated": src.st.st_blocks * 512, "fs_block": block, "fiemap": counts,
                 "siblings": lengths}  # fmt: skip
        write_frame(out, b"J", json.dumps(facts).encode())
        if not dense:
            write_frame(out, b"M", pack_ranges(ranges))
        codec = _codec(req.get("codec", "none"), req.get("level"))
        _send_data(out, src, ranges, 0, src.size, codec)
        for data in siblings:
            if data is not None:
                write_frame(out, b"R", data)
    finally:
        src.close()


def _serve_size(req, out):
    src, _ = _opened(req)
    write_json(out, {"ok": True, "size": os.fstat(src.fd).st_size})


def _serve_close(req, out):
    entry = _OPEN.pop(req.get("handle"), None)
    if entry is not None:
        entry[0].close()


def _serve_slurp(req, out):
    """A small regular file, at most ``max`` bytes of it, as an ``R`` frame."""
    src = Source(os.path.expanduser(req["path"]))
    try:
        data = os.pread(src.fd, min(src.size, int(req.get("max", PIECE))), 0)
    except OSError as exc:
        raise AgentError(describe_oserror(src.path, exc)) from None
    finally:
        src.close()
    write_json(out, {"ok": True})
    write_frame(out, b"R", data)
    out.flush()


SCAN_OPS = {
    "walk": _serve_walk,
    "walk_more": _serve_walk_more,
    "open": _serve_open,
    "read": _serve_read,
    "size": _serve_size,
    "close": _serve_close,
    "slurp": _serve_slurp,
    "fetch": _serve_fetch,
}


def _on_signal(signum, frame):
    raise Interrupted(f"signal {signum}")


def main():
    """The remote end: serve requests on stdin/stdout until ``bye`` or end of input."""
    import signal

    for sig in (signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, _on_signal)
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    out.write(MAGIC)
    write_json(out, {"ok": True, "protocol": PROTOCOL, "python": sys.version.split()[0],
                     "codecs": available_codecs()})  # fmt: skip
    while True:
        try:
            req = read_json(inp)
        except Interrupted:
            return 0
        op = req.get("op")
        try:
            if op == "receive":
                _serve_receive(req, inp, out)
            elif op == "send":
                _serve_send(req, inp, out)
            elif op in SCAN_OPS:
                SCAN_OPS[op](req, out)
            elif op == "bye":
                return 0
            else:
                raise AgentError(f"unknown request {op!r}")
        except Interrupted:
            return 3
        except (AgentError, OSError) as exc:
            if isinstance(exc, AgentError):
                message = str(exc)
            else:
                message = describe_oserror(req.get("path"), exc)
            try:
                write_json(out, {"ok": False, "error": message})
            except OSError:
                return 3
            if getattr(exc, "fatal", False) or not isinstance(exc, AgentError):
                return 2


if __name__ == "__main__":
    sys.exit(main())
