"""The cost of freeing extents measured on named filesystems: the built-in rates a DROP
prediction uses where this filesystem was not calibrated (:mod:`ibdtool.fs.extents`), and the
quiet figure a calibration's low end goes down to (:mod:`ibdtool.fs.calibrate`).
"""

# No ``from __future__ import annotations`` here: a NamedTuple's string annotations are each
# compiled by typing when the class is made, ~0.9 ms of every start over the records of
# inspect's path (issue 24, item 4; tests/test_startup.py checks them)

from typing import NamedTuple


class Rate(NamedTuple):
    """What freeing extents costs on one kind of filesystem: seconds per extent (typical,
    fastest, slowest expected) and a fixed part per file."""

    per_extent: float
    per_extent_low: float
    per_extent_high: float
    base: float
    base_high: float
    source: str


#: per-extent costs measured on named filesystems: (filesystem, online discard on) -> rate.
#: ext4+discard: issue 22 (0.2 s + 0.06 ms an extent, quiet; 3–27× under other IO) and
#: bench/RESULTS.md "Issue 22": 1.2–2.2 ms an extent on this VM's virtio disk at load 20–25,
#: 7–13 µs on a loop device (whose discard punches the image file), hence the wide range;
#: ext4 without discard: 10–12 µs (loop, bench), ~6× less than with it (issue 22); XFS: its
#: unlink returned at once (inodes are freed in the background), 0–15 µs an extent (bench).
RATES: dict[tuple[str, bool], Rate] = {
    ("ext4", True): Rate(80e-6, 5e-6, 3e-3, 0.05, 0.5, "built-in rate for ext4 with discard"),
    ("ext4", False): Rate(12e-6, 2e-6, 3e-4, 0.02, 0.3, "built-in rate for ext4 without discard"),
    ("xfs", True): Rate(4e-6, 0.0, 2e-4, 0.01, 0.3, "built-in rate for XFS"),
    ("xfs", False): Rate(2e-6, 0.0, 1e-4, 0.01, 0.3, "built-in rate for XFS"),
    ("tmpfs", False): Rate(0.5e-6, 0.0, 2e-5, 0.001, 0.05, "built-in rate for tmpfs"),
}
