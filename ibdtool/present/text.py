"""Numbers in words for people: sizes, counts, durations, intervals (no Rich, no click).

The CLI's printers, the engine's messages (preflight checks) and the TUI's screens all say
"1.5 MiB" and "1:05:09" the same way because they all call these.
"""

from __future__ import annotations


def human_bytes(n: int | None) -> str:
    """``1536`` → ``"1.5 KiB"``; whole bytes below 1 KiB; ``"?"`` when unknown."""
    if n is None:
        return "?"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def size_k(n: int) -> str:
    """A page or block size as InnoDB names it: ``16384`` → ``"16K"``."""
    return f"{n // 1024}K" if n >= 1024 else f"{n}"


def plural(n: int, word: str) -> str:
    """``"1 page"``, ``"2 pages"``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def hms(seconds: float | None) -> str:
    """A duration as ``m:ss`` or ``h:mm:ss``; ``"?"`` when unknown."""
    if seconds is None:
        return "?"
    s = round(seconds)
    return (
        f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"
    )


def ci_text(ci: tuple[int, int] | list[int] | None, predicted: int) -> str:
    """A 95% interval as ``±1.2%`` of the prediction; ``"exact"`` for a full scan."""
    if not ci:
        return "exact"
    half = (ci[1] - ci[0]) / 2
    return f"±{100 * half / predicted:.1f}%" if predicted else "±?"


def us_text(us: float) -> str:
    """Microseconds as people compare them: ``4.6`` below 10, whole numbers from there."""
    return f"{us:.1f}" if us < 10 else f"{us:.0f}"
