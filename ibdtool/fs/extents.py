"""What freeing a file's extents costs: DROP TABLE, DROP DATABASE and unlink, predicted as a
range with what the range rests on.

Unlinking a file frees every extent it has; the statement waits for it (a DROP TABLE runs it
in the client's thread). The time is about ``base + per_extent × extents``: a plain 1 GiB
tablespace has a hundred extents, the same table page-compressed one per page (65,000). How
much an extent costs is the filesystem's business: ext4 mounted with ``discard`` sends one
discard to the device per freed extent while the unlink waits (0.06 ms an extent on a quiet
disk, 3–27× that with other IO, in issue 22's measurements and on this project's machine),
ext4 without it about 6× less, XFS far less.

The rate comes, best first, from a calibration of this filesystem (:mod:`ibdtool.fs.calibrate`,
``ibdtool calibrate DIR``), else from :data:`ibdtool.fs.rates.RATES`, figures measured on named
filesystems;
which one, and the mount it applies to, is the prediction's ``basis``. The range is wide on
purpose: a disk busier than when the rate was measured frees extents several times slower, and
nothing here can know tomorrow's load. Extents are FIEMAP records counted one by one
(:mod:`ibdtool.fs.allocation`): ``filefrag``'s summary merges contiguous ones and said
"36 extents found" for a file with 65,453.
"""

# No ``from __future__ import annotations`` here: a NamedTuple's string annotations are each
# compiled by typing when the class is made, ~0.9 ms of every start over the records of
# inspect's path (issue 24, item 4; tests/test_startup.py checks them)

import os
import stat
from functools import lru_cache
from typing import Any, NamedTuple

from ibdtool.fs.mounts import Mount, discard_max_bytes, mount_of, read_mounts
from ibdtool.fs.rates import RATES, Rate
from ibdtool.fs.statefile import has_state

GIB = 1 << 30


class DropCost(NamedTuple):
    """The predicted time to free a file's extents: ``seconds`` (typical) within
    ``[low, high]``, and what it is based on. ``seconds`` is None when nothing is known of
    the filesystem (then ``basis`` says so)."""

    extents: int
    extents_per_gib: float | None
    seconds: float | None
    low: float | None
    high: float | None
    basis: str
    #: "calibration", "built-in" or "none"
    source: str
    #: the rate's own words, without the mount (``basis`` has both)
    rate: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "extents": self.extents,
            "extents_per_gib": self.extents_per_gib,
            "seconds": _round(self.seconds),
            "low": _round(self.low),
            "high": _round(self.high),
            "basis": self.basis,
            "source": self.source,
            "rate": self.rate,
        }


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


class Where(NamedTuple):
    """The filesystem a file is on, as far as the cost of its extents goes."""

    mount: Mount | None
    #: the device's discard_max_bytes (None: unknown, 0: it does not discard)
    device_discard: int | None

    @property
    def discards(self) -> bool:
        """Freed extents are discarded as they are freed (the mount asks, the device can)."""
        return self.mount is not None and self.mount.discard and self.device_discard != 0

    def describe(self) -> str:
        m = self.mount
        if m is None:
            return "filesystem unknown"
        how = "mounted with discard" if m.discard else "mounted without discard"
        if m.discard and self.device_discard == 0:
            how += " (the device does not discard)"
        return f"{m.fstype} {m.source} on {m.mount_point}, {how}"


@lru_cache(maxsize=64)
def _where_by_device(st_dev: int, path: str) -> Where:
    mount = mount_of(path, read_mounts())
    return Where(mount, None if mount is None else discard_max_bytes(mount.device))


#: (st_dev, absolute folder as given) -> its mount: :func:`filesystem_of` without a
#: ``realpath`` per file
_BY_FOLDER: dict[tuple[int, str], Where] = {}
_BY_FOLDER_MAX = 4096


def filesystem_of(path: str | os.PathLike[str]) -> Where:
    """The mount holding ``path`` (cached per device and folder: a report asks for every file,
    and resolving each one's path, ``realpath``, cost more than all the rest)."""
    name = os.fspath(path)
    try:
        st = os.lstat(name)
        if stat.S_ISLNK(st.st_mode):  # the link's target decides: resolved each time
            st_dev = os.stat(name).st_dev
            return _where_by_device(st_dev, os.path.dirname(os.path.realpath(name)) or "/")
    except OSError:
        return Where(None, None)
    key = (st.st_dev, os.path.dirname(os.path.abspath(name)))
    where = _BY_FOLDER.get(key)
    if where is None:
        if len(_BY_FOLDER) >= _BY_FOLDER_MAX:
            _BY_FOLDER.clear()
        where = _BY_FOLDER[key] = _where_by_device(
            st.st_dev, os.path.dirname(os.path.realpath(name)) or "/"
        )
    return where


def builtin_rate(w: Where) -> Rate | None:
    if w.mount is None:
        return None
    return RATES.get((w.mount.fstype, w.discards)) or RATES.get((w.mount.fstype, False))


def rate_for(w: Where) -> tuple[Rate | None, str]:
    """The rate for this filesystem and where it comes from: a calibration of this mount
    (ibdtool's state file), else the built-in table."""
    if w.mount is not None and has_state():
        # the state file's reader (its classes, the measuring code beside it) only on a
        # machine that was calibrated: without a file it finds nothing (tests/test_startup.py)
        from ibdtool.fs.calibrate import lookup

        cal = lookup(w.mount)
        if cal is not None:
            return cal.rate(), "calibration"
    rate = builtin_rate(w)
    return rate, "built-in" if rate else "none"


def predict(extents: int, size: int, w: Where, rate: Rate | None, source: str) -> DropCost:
    """The DROP/unlink cost of a file of ``size`` bytes and ``extents`` FIEMAP records."""
    per_gib = round(extents * GIB / size, 1) if size else None
    if rate is None:
        fs = w.mount.fstype if w.mount else "this filesystem"
        return DropCost(
            extents, per_gib, None, None, None,
            f"{w.describe()}: no rate known for {fs}; run `ibdtool calibrate DIR`", "none",
            f"no rate known for {fs}",
        )  # fmt: skip
    value = rate.base + rate.per_extent * extents
    low = rate.per_extent_low * extents
    high = rate.base_high + rate.per_extent_high * extents
    basis = f"{w.describe()}: {rate.source}"
    return DropCost(extents, per_gib, value, low, high, basis, source, rate.source)


def predict_between(
    extents: int, low: int, high: int, size: int, w: Where, rate: Rate | None, source: str
) -> DropCost:
    """:func:`predict` for an extent count that is itself an estimate in ``[low, high]``
    (a simulation's sample): the time's range spans both."""
    mid = predict(extents, size, w, rate, source)
    if rate is None:
        return mid
    return mid._replace(
        low=predict(low, size, w, rate, source).low,
        high=predict(high, size, w, rate, source).high,
    )


#: ext4's longest extent (32,768 blocks of 4 KiB): a dense file has at least one per 128 MiB
MAX_EXTENT_BYTES = 128 << 20


def dense_extents(size: int) -> int:
    """The fewest extents a file of ``size`` bytes written in one go can have."""
    return max(1, -(-size // MAX_EXTENT_BYTES))


def dense_drop_cost(path: str | os.PathLike[str], size: int) -> DropCost:
    """The DROP cost of a file of ``size`` bytes with no holes (ROW_FORMAT=COMPRESSED, plain)
    in ``path``'s filesystem: :func:`dense_extents` of them."""
    w = filesystem_of(path)
    rate, source = rate_for(w)
    return predict(dense_extents(size), size, w, rate, source)


def drop_cost(path: str | os.PathLike[str], extents: int | None, size: int) -> DropCost | None:
    """The predicted time to free ``path``'s extents (None when FIEMAP gave no count)."""
    if extents is None:
        return None
    w = filesystem_of(path)
    rate, source = rate_for(w)
    return predict(extents, size, w, rate, source)


def drop_total(costs: list[DropCost]) -> dict[str, Any]:
    """Files dropped one after another (DROP DATABASE): the sums of their figures."""
    known = [c for c in costs if c.seconds is not None]
    return {
        "files": len(costs),
        "extents": sum(c.extents for c in costs),
        "seconds": _round(sum(c.seconds or 0.0 for c in known)) if known else None,
        "low": _round(sum(c.low or 0.0 for c in known)) if known else None,
        "high": _round(sum(c.high or 0.0 for c in known)) if known else None,
        "unknown": len(costs) - len(known),
    }


# --- contiguity and the cold scan --------------------------------------------------------------

#: a cold sequential read: bytes a second off the device, and what each extent adds (a new
#: request where read-ahead would have gone on). Derived from issue 22's measurement: the
#: 516 MiB page-compressed file (65,453 extents) read raw in 1.2× the time of the same data
#: dense; bench/RESULTS.md "Issue 22" measures this machine.
SCAN_BYTES_PER_S = 500e6
SCAN_PER_EXTENT_S = 3e-6


class Layout(NamedTuple):
    """How contiguous a file is, and what that costs a cold full scan."""

    extents: int
    data_runs: int
    data_bytes: int
    size: int
    #: physically contiguous runs (``filefrag``'s count)
    physical_runs: int | None

    @property
    def mean_extent_bytes(self) -> float:
        return self.data_bytes / self.extents if self.extents else 0.0

    @property
    def scan_factor(self) -> float:
        """A cold full scan's read time against the same data dense (the layout term only:
        decompression CPU is apart, in simulate's µs per page)."""
        base = self.data_bytes / SCAN_BYTES_PER_S
        dense = base + dense_extents(self.data_bytes) * SCAN_PER_EXTENT_S
        return (base + self.extents * SCAN_PER_EXTENT_S) / dense if dense else 1.0

    def to_json(self) -> dict[str, Any]:
        return {
            "extents": self.extents,
            "data_runs": self.data_runs,
            "physical_runs": self.physical_runs,
            "mean_extent_bytes": round(self.mean_extent_bytes),
            "scan_layout_factor": round(self.scan_factor, 3),
        }


def layout(extents: int | None, data_runs: int, data_bytes: int, size: int,
           physical_runs: int | None) -> Layout | None:  # fmt: skip
    """The :class:`Layout` of a file (None without a FIEMAP count)."""
    if extents is None:
        return None
    return Layout(extents, data_runs, data_bytes, size, physical_runs)
