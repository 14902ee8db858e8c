"""The processes a test looks for: the children of a process, read from /proc."""

from __future__ import annotations

from pathlib import Path


def children(pid: int) -> list[int]:
    """The pids whose parent is ``pid`` now (zombies not yet reaped included)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(entry.name))
    return out
