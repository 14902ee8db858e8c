"""Measure what freeing an extent costs on this filesystem, in place, and remember it.

``ibdtool calibrate DIR`` makes, in ``DIR``, a scratch file with a bounded number of extents
(16 KiB slots, each keeping 8 KiB of data before a punched 8 KiB hole, as page compression
leaves a 16K-page tablespace that compresses to half), times its unlink, and times the unlink
of a plain file holding the same data (the part of an unlink that does not depend on
extents). Several repetitions, interleaved, so
that a busy spell on the disk shows as spread rather than as the answer; the spread is
reported (how noisy the disk was) and kept. The scratch files are created with
``O_CREAT|O_EXCL|O_NOFOLLOW`` under a name no server uses, relative to the directory opened
once, and removed whatever happens. Nothing else in ``DIR`` is touched.

The result goes to a small JSON state file, ``$XDG_STATE_HOME/ibdtool/calibration.json``
(``~/.local/state/ibdtool/`` by default), one entry per mount (device, filesystem, discard),
which :mod:`ibdtool.fs.extents` reads for every prediction. The directory is created 0700,
the file written to a fresh O_EXCL name and renamed over the old one. Reading it treats it as
untrusted input: a file that is not what this module writes is one ``InputError`` (exit 2),
never a traceback and never a rate taken on trust.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ibdtool.errors import InputError
from ibdtool.fs.allocation import fiemap_tuples
from ibdtool.fs.mounts import Mount, mount_of
from ibdtool.fs.rates import RATES, Rate
from ibdtool.fs.statefile import STATE_NAME, state_path
from ibdtool.fs.statefile import state_dir as state_dir  # where it always was

STATE_VERSION = 1
SCRATCH_PREFIX = ".ibdtool-calibrate-"
MIN_EXTENTS, DEFAULT_EXTENTS, MAX_EXTENTS = 256, 2048, 16384
#: the scratch file's slot (a 16K page) and the data each keeps (half: a 2:1 compression)
SLOT, KEEP = 16384, 8192
MIN_REPETITIONS, DEFAULT_REPETITIONS, MAX_REPETITIONS = 3, 5, 10
#: the calibrated range: the fastest run's rate times LOW (or the built-in quiet figure for
#: the filesystem, if lower) to the slowest run's times HIGH (the disk will not be exactly as
#: quiet, or as busy, at the DROP as during calibration: on ext4 the unlink waits for journal
#: commits that carry every other writer's data)
LOW, HIGH = 0.5, 4.0
MAX_STATE_BYTES = 256 * 1024
MAX_ENTRIES = 64
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE = 0x01, 0x02


@dataclass(frozen=True)
class Calibration:
    """One mount's measured cost of freeing extents: a figure per repetition."""

    device: str
    fstype: str
    mount_point: str
    discard: bool
    directory: str
    measured_at: str
    extents: int
    per_extent_s: tuple[float, ...]
    base_s: tuple[float, ...]
    load_average: float | None = None

    @property
    def spread(self) -> float:
        """Slowest repetition's per-extent cost over the fastest's (1.0: a quiet disk)."""
        lo = min(self.per_extent_s)
        return max(self.per_extent_s) / lo if lo > 0 else math.inf

    def rate(self) -> Rate:
        import statistics

        runs = len(self.per_extent_s)
        # a disk busy while calibrating says little of how fast it is when quiet: the low end
        # goes down to the quiet figure measured on this kind of filesystem, where there is one
        quiet = RATES.get((self.fstype, self.discard))
        low = LOW * min(self.per_extent_s)
        return Rate(
            per_extent=statistics.median(self.per_extent_s),
            per_extent_low=min(low, quiet.per_extent_low) if quiet else low,
            per_extent_high=HIGH * max(self.per_extent_s),
            base=statistics.median(self.base_s),
            # the plain file's unlink is not all of a DROP's fixed part: the server's own work
            # (its dictionary, the buffer pool's pages of the space) is in the built-in figure
            # for this filesystem (seen: a DROP 0.11 s above a calibrated range whose plain
            # unlinks took 1 ms)
            base_high=max(HIGH * max(self.base_s), quiet.base_high if quiet else 0.0),
            source=f"calibrated {self.measured_at} in {self.directory} "
            f"({runs} runs of {self.extents:,} extents, spread {self.spread:.1f}×)",
        )

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["per_extent_s"] = list(self.per_extent_s)
        doc["base_s"] = list(self.base_s)
        return doc


# --- the state file ------------------------------------------------------------------------


def _bad(path: Path, why: str) -> InputError:
    return InputError(
        f"{path}: not an ibdtool calibration file ({why}); remove it or run calibrate"
    )


def _number(path: Path, value: Any, what: str, top: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _bad(path, f"{what} is not a number")
    if not math.isfinite(value) or not 0 <= value <= top:
        raise _bad(path, f"{what} out of range")
    return float(value)


def _text(path: Path, value: Any, what: str, limit: int = 4096) -> str:
    if not isinstance(value, str) or len(value) > limit:
        raise _bad(path, f"{what} is not a short string")
    return value


def _entry(path: Path, doc: Any) -> Calibration:
    if not isinstance(doc, dict):
        raise _bad(path, "an entry is not an object")
    device = _text(path, doc.get("device"), "device", 32)
    major, _, minor = device.partition(":")
    if not (major.isdigit() and minor.isdigit()):
        raise _bad(path, "device is not MAJ:MIN")
    discard = doc.get("discard")
    if not isinstance(discard, bool):
        raise _bad(path, "discard is not true or false")
    extents = doc.get("extents")
    if isinstance(extents, bool) or not isinstance(extents, int):
        raise _bad(path, "extents is not an integer")
    if not 1 <= extents <= 10 * MAX_EXTENTS:
        raise _bad(path, "extents out of range")
    runs = []
    for key, top in (("per_extent_s", 1.0), ("base_s", 600.0)):
        values = doc.get(key)
        if not isinstance(values, list) or not 1 <= len(values) <= MAX_REPETITIONS:
            raise _bad(path, f"{key} is not a list of 1 to {MAX_REPETITIONS} numbers")
        runs.append(tuple(_number(path, v, key, top) for v in values))
    if len(runs[0]) != len(runs[1]):
        raise _bad(path, "per_extent_s and base_s differ in length")
    load = doc.get("load_average")
    return Calibration(
        device=device,
        fstype=_text(path, doc.get("fstype"), "fstype", 64),
        mount_point=_text(path, doc.get("mount_point"), "mount_point"),
        discard=discard,
        directory=_text(path, doc.get("directory"), "directory"),
        measured_at=_text(path, doc.get("measured_at"), "measured_at", 64),
        extents=extents,
        per_extent_s=runs[0],
        base_s=runs[1],
        load_average=None if load is None else _number(path, load, "load_average", 1e6),
    )


def parse_state(path: Path, data: bytes) -> list[Calibration]:
    """The entries of a state file's bytes, each checked (InputError naming ``path``)."""
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise _bad(path, f"not JSON: {str(exc)[:80]}") from None
    if not isinstance(doc, dict) or doc.get("ibdtool_calibration") != STATE_VERSION:
        raise _bad(path, f'no "ibdtool_calibration": {STATE_VERSION}')
    entries = doc.get("entries")
    if not isinstance(entries, list) or len(entries) > MAX_ENTRIES:
        raise _bad(path, f"entries is not a list of at most {MAX_ENTRIES}")
    return [_entry(path, e) for e in entries]


def _read_state(path: Path) -> list[Calibration]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return []
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _bad(path, "a symbolic link") from None
        if exc.errno == errno.EACCES:
            return []
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    try:
        import stat

        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _bad(path, "not a regular file")
        data = os.read(fd, MAX_STATE_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_STATE_BYTES:
        raise _bad(path, f"larger than {MAX_STATE_BYTES // 1024} KiB")
    return parse_state(path, data)


@cache
def _cached_state(path: str, mtime_ns: int, size: int) -> tuple[Calibration, ...]:
    return tuple(_read_state(Path(path)))


def load_calibrations(path: Path | None = None) -> list[Calibration]:
    """The state file's entries (none if it does not exist or is not readable by this user);
    read again when it changed."""
    path = path or state_path()
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:  # none, or not ours to read (another user's home): the built-in rates
        return []
    return list(_cached_state(str(path), st.st_mtime_ns, st.st_size))


def lookup(mount: Mount) -> Calibration | None:
    """The newest calibration of this mount, if its discard setting is still the same."""
    found = [
        c
        for c in load_calibrations()
        if c.device == mount.device and c.fstype == mount.fstype and c.discard == mount.discard
    ]
    return max(found, key=lambda c: c.measured_at) if found else None


def save_calibration(cal: Calibration, path: Path | None = None) -> Path:
    """Add ``cal`` to the state file, replacing the entry for the same mount."""
    path = path or state_path()
    entries = [
        c
        for c in _read_state(path)
        if not (c.device == cal.device and c.fstype == cal.fstype and c.discard == cal.discard)
    ]
    entries = [*entries[-(MAX_ENTRIES - 1) :], cal]
    data = json.dumps(
        {"ibdtool_calibration": STATE_VERSION, "entries": [c.to_json() for c in entries]},
        indent=1,
    ).encode()
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        dfd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise InputError(f"{path.parent}: {exc.strerror or exc}") from None
    tmp = f".{STATE_NAME}.{os.urandom(6).hex()}"
    try:
        fd = os.open(tmp, _CREATE, 0o600, dir_fd=dfd)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, STATE_NAME, src_dir_fd=dfd, dst_dir_fd=dfd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dfd)
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    finally:
        os.close(dfd)
    return path


# --- the measurement ------------------------------------------------------------------------


@cache
def _fallocate() -> Any:
    import ctypes
    import ctypes.util

    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    fn = libc.fallocate
    fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong]
    fn.restype = ctypes.c_int
    return fn


def punch_hole(fd: int, offset: int, length: int) -> None:
    """``fallocate(PUNCH_HOLE|KEEP_SIZE)``; OSError when the filesystem cannot."""
    if _fallocate()(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length) != 0:
        import ctypes

        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


@dataclass(frozen=True)
class CalibrationRun:
    """One repetition: the unlink of the punched file and of the plain one."""

    extents: int
    punched_s: float
    plain_s: float

    @property
    def per_extent_s(self) -> float:
        return max(0.0, self.punched_s - self.plain_s) / max(1, self.extents)


class _Scratch:
    """Files made and removed in one directory, opened once, by name relative to it."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        try:
            self.dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise InputError(f"{directory}: {exc.strerror or exc}") from None
        self.names: set[str] = set()

    def create(self) -> tuple[str, int]:
        name = f"{SCRATCH_PREFIX}{os.getpid()}-{os.urandom(4).hex()}.tmp"
        fd = os.open(name, _CREATE, 0o600, dir_fd=self.dfd)
        self.names.add(name)
        return name, fd

    def timed_unlink(self, name: str) -> float:
        t0 = time.perf_counter()
        os.unlink(name, dir_fd=self.dfd)
        elapsed = time.perf_counter() - t0
        self.names.discard(name)
        return elapsed

    def close(self) -> None:
        for name in list(self.names):
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=self.dfd)
        os.close(self.dfd)


def _write(fd: int, nbytes: int) -> None:
    chunk = os.urandom(1 << 20)
    left = nbytes
    while left:
        left -= os.write(fd, memoryview(chunk)[: min(left, len(chunk))])


def _punched(scratch: _Scratch, extents: int) -> tuple[str, int]:
    """A file of ``extents`` slots, each punched after its first :data:`KEEP` bytes; its
    FIEMAP count."""
    name, fd = scratch.create()
    try:
        _write(fd, extents * SLOT)
        os.fsync(fd)
        for i in range(extents):
            punch_hole(fd, i * SLOT + KEEP, SLOT - KEEP)
        os.fsync(fd)
        found = fiemap_tuples(fd, 8192)
    finally:
        os.close(fd)
    return name, extents if found is None else len(found)


def _plain(scratch: _Scratch, nbytes: int) -> str:
    name, fd = scratch.create()
    try:
        _write(fd, nbytes)
        os.fsync(fd)
    finally:
        os.close(fd)
    return name


def measure(
    directory: str | os.PathLike[str],
    extents: int = DEFAULT_EXTENTS,
    repetitions: int = DEFAULT_REPETITIONS,
) -> Iterator[CalibrationRun]:
    """Yield one :class:`CalibrationRun` per repetition (the punched and the plain file
    alternate which goes first). Bounded: ``extents`` and ``repetitions`` are clamped to
    their limits, and at most ``extents`` × 24 KiB are written per repetition."""
    extents = min(MAX_EXTENTS, max(MIN_EXTENTS, extents))
    repetitions = min(MAX_REPETITIONS, max(MIN_REPETITIONS, repetitions))
    vfs = os.statvfs(directory)
    need = extents * (SLOT + KEEP)
    if vfs.f_bavail * vfs.f_frsize < 4 * need:
        raise InputError(f"{directory}: less than {4 * need >> 20} MiB free; not calibrated here")
    scratch = _Scratch(directory)
    try:
        for rep in range(repetitions):
            order = (True, False) if rep % 2 == 0 else (False, True)
            punched_s = plain_s = 0.0
            found = extents
            for punched in order:
                try:
                    if punched:
                        name, found = _punched(scratch, extents)
                    else:
                        name = _plain(scratch, extents * KEEP)
                    os.fsync(scratch.dfd)
                except OSError as exc:
                    if exc.errno in (errno.EOPNOTSUPP, errno.ENOSYS):
                        raise InputError(f"{directory}: cannot punch holes here") from None
                    raise InputError(f"{directory}: {exc.strerror or exc}") from None
                elapsed = scratch.timed_unlink(name)
                if punched:
                    punched_s = elapsed
                else:
                    plain_s = elapsed
            yield CalibrationRun(found, punched_s, plain_s)
    finally:
        scratch.close()


def measure_filesystem(
    directory: str | os.PathLike[str],
    extents: int = DEFAULT_EXTENTS,
    repetitions: int = DEFAULT_REPETITIONS,
    on_run: Callable[[CalibrationRun], None] | None = None,
) -> Calibration:
    """Measure ``directory``'s filesystem (:func:`measure`) and return its calibration."""
    import statistics
    from datetime import UTC, datetime

    mount = mount_of(directory)
    if mount is None:
        raise InputError(f"{directory}: no mount found for it in /proc/self/mountinfo")
    runs = []
    for run in measure(directory, extents, repetitions):
        runs.append(run)
        if on_run:
            on_run(run)
    try:
        load: float | None = round(os.getloadavg()[0], 2)
    except OSError:
        load = None
    return Calibration(
        device=mount.device,
        fstype=mount.fstype,
        mount_point=mount.mount_point,
        discard=mount.discard,
        directory=os.path.realpath(directory),
        measured_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        extents=round(statistics.median(r.extents for r in runs)),
        per_extent_s=tuple(r.per_extent_s for r in runs),
        base_s=tuple(r.plain_s for r in runs),
        load_average=load,
    )
