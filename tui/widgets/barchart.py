"""Horizontal bars with eighth-cell precision, for table cells (the simulation's chart)."""

from __future__ import annotations

from rich.text import Text

EIGHTHS = " ▏▎▍▌▋▊▉"


def bar(value: float, scale: float, width: int, color: str) -> Text:
    """A bar ``value / scale`` of ``width`` cells long, padded to ``width``."""
    if scale <= 0 or value <= 0:
        return Text(" " * width)
    eighths = round(8 * width * min(1.0, value / scale))
    full, part = divmod(eighths, 8)
    body = "█" * full + (EIGHTHS[part] if part else "")
    return Text(body.ljust(width), style=color)
