"""The mount that holds a file, as ``/proc/self/mountinfo`` describes it, and its device's
discard support (``/sys/dev/block/MAJ:MIN/queue/discard_max_bytes``).

What freeing a file's extents costs depends on both (:mod:`ibdtool.fs.extents`): ext4 mounted
with ``discard`` sends the device one discard per freed extent while the unlink waits. A file's
mount is found by its device number (``st_dev``, the mountinfo's ``MAJ:MIN`` field), the
longest mount point holding its path first (bind mounts repeat a device). mountinfo escapes
space, tab, newline and backslash in paths as octal (``\\040``); they are unescaped here.
"""

# No ``from __future__ import annotations`` here: a NamedTuple's string annotations are each
# compiled by typing when the class is made, ~0.9 ms of every start over the records of
# inspect's path (issue 24, item 4; tests/test_startup.py checks them)

import os
import re
from pathlib import Path
from typing import NamedTuple

MOUNTINFO = "/proc/self/mountinfo"
_OCTAL = re.compile(r"\\([0-7]{3})")


class Mount(NamedTuple):
    """One line of mountinfo: where, what filesystem, with which options."""

    device: str  # "MAJ:MIN"
    mount_point: str
    fstype: str
    source: str
    #: the mount's own options and the superblock's, together (``discard`` is a super option)
    options: frozenset[str]

    @property
    def discard(self) -> bool:
        """Mounted with online discard: every freed extent is discarded as it is freed."""
        return "discard" in self.options and "nodiscard" not in self.options

    def option_text(self) -> str:
        return ",".join(sorted(self.options))


def _unescape(text: str) -> str:
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), text)


def parse_mountinfo(text: str) -> list[Mount]:
    """Every well-formed line of a mountinfo text (others are skipped: the kernel writes it,
    but a line we cannot read must not stop an inspect)."""
    mounts = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 6 or len(tail) < 2:
            continue
        opts = set(fields[5].split(","))
        if len(tail) > 2:
            opts.update(tail[2].split(","))
        mounts.append(
            Mount(
                device=fields[2],
                mount_point=_unescape(fields[4]),
                fstype=tail[0],
                source=_unescape(tail[1]),
                options=frozenset(o for o in opts if o),
            )
        )
    return mounts


def read_mounts() -> list[Mount]:
    try:
        return parse_mountinfo(Path(MOUNTINFO).read_text(errors="replace"))
    except OSError:
        return []


def _inside(path: str, mount_point: str) -> bool:
    return path == mount_point or path.startswith(mount_point.rstrip("/") + "/")


def mount_of(path: str | os.PathLike[str], mounts: list[Mount] | None = None) -> Mount | None:
    """The mount holding ``path``: among the lines for its device the longest mount point that
    contains it (any line for the device if none does, as in a chroot); the longest mount point
    containing it when no line names the device."""
    mounts = read_mounts() if mounts is None else mounts
    try:
        st_dev = os.stat(path).st_dev
        target = os.path.realpath(path)
    except OSError:
        return None
    device = f"{os.major(st_dev)}:{os.minor(st_dev)}"
    same = [m for m in mounts if m.device == device]
    inside = [m for m in (same or mounts) if _inside(target, m.mount_point)]
    if inside:
        return max(inside, key=lambda m: len(m.mount_point))
    return same[0] if same else None


def discard_max_bytes(device: str) -> int | None:
    """The block device's ``discard_max_bytes`` (0: it does not discard), from sysfs; a
    partition's comes from its disk's queue. None when the device has no queue (tmpfs,
    network filesystems, btrfs' anonymous devices) or sysfs cannot be read."""
    base = Path("/sys/dev/block") / device
    for queue in (base / "queue", base / ".." / "queue"):
        try:
            return int((queue / "discard_max_bytes").read_text().strip())
        except (OSError, ValueError):
            continue
    return None
