"""Where ibdtool keeps its calibration state file: ``$XDG_STATE_HOME/ibdtool/calibration.json``
(an absolute ``XDG_STATE_HOME`` only, as the spec says), else ``~/.local/state/ibdtool/``.

Apart from :mod:`ibdtool.fs.calibrate`, which reads, checks and writes the file, so that a
prediction (:func:`ibdtool.fs.extents.rate_for`) can see that there is none without loading
that module, its classes and its measuring code: on a machine never calibrated, every
``inspect`` (issue 24, start-up).
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

STATE_NAME = "calibration.json"


def state_dir() -> Path:
    """``$XDG_STATE_HOME/ibdtool`` (an absolute XDG_STATE_HOME only, as the spec says), else
    ``~/.local/state/ibdtool``."""
    return _state_dir(os.environ.get("XDG_STATE_HOME", ""), os.environ.get("HOME"))


@lru_cache(maxsize=8)
def _state_dir(xdg: str, home: str | None) -> Path:
    """:func:`state_dir` for these variables (a report asks once a file: no Path built each
    time)."""
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".local" / "state"
    return base / "ibdtool"


def state_path() -> Path:
    return _state_path(os.environ.get("XDG_STATE_HOME", ""), os.environ.get("HOME"))


@lru_cache(maxsize=8)
def _state_path(xdg: str, home: str | None) -> Path:
    return _state_dir(xdg, home) / STATE_NAME


def has_state() -> bool:
    """Whether there is anything at :func:`state_path` (``lstat`` succeeds): when not,
    :func:`ibdtool.fs.calibrate.load_calibrations` finds no entry (it reads nothing that
    ``lstat`` cannot see)."""
    return os.path.lexists(state_path())
