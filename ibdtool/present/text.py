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


def seconds_text(s: float | None) -> str:
    """A short duration: ``"0.018 s"``, ``"3.7 s"``, ``"4.2 min"``; ``"?"`` when unknown."""
    if s is None:
        return "?"
    if s >= 120:
        return f"{s / 60:.1f} min"
    if s >= 10:
        return f"{s:.0f} s"
    if s >= 1:
        return f"{s:.1f} s"
    return f"{s:.2g} s" if s >= 0.001 else "<1 ms"


def range_text(value: float | None, low: float | None, high: float | None) -> str:
    """A prediction with its range: ``"3.7 s (1.2 s–11 s)"``; ``"?"`` when unknown."""
    if value is None:
        return "?"
    return f"{seconds_text(value)} ({seconds_text(low)}–{seconds_text(high)})"


def shown(text: str) -> str:
    """``text`` with control characters escaped (``\\n``, ``\\x1b``) before it reaches a
    terminal: names come from files, servers and the user's own directory tree."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
