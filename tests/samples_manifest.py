"""samples/MANIFEST.json: what the servers that made the samples measured (the oracle)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from tests.catalog import REPO

SAMPLES = REPO / "samples"


@cache
def manifest() -> dict[str, dict[str, Any]]:
    data = json.loads((SAMPLES / "MANIFEST.json").read_text())
    return {s["path"]: s for s in data["samples"]}


def sample(rel: str) -> Path:
    path = SAMPLES / rel
    assert path.is_file(), f"missing sample {rel}"
    return path


def live_allocated(rel: str) -> int:
    """st_blocks*512 of the server's own file, taken while FLUSH TABLES ... FOR EXPORT held."""
    return int(manifest()[rel]["live"]["allocated_size"])
