"""Numbers and names in words for people: sizes, counts, durations, intervals, and any text
from outside shown safely (no Rich, no click).

The CLI's printers, the engine's messages (preflight checks) and the TUI's screens all say
"1.5 MiB" and "1:05:09" the same way because they all call these, and every front end passes
text it did not write (file, table, column, index names; record values; messages quoting them)
through :func:`shown` before a terminal sees it.
"""

from __future__ import annotations

import re

#: what a terminal or a reader's eye would obey rather than show: C0 (with TAB and newline: a
#: name must not fake a line of output), DEL, C1, the bidirectional marks, embeddings, overrides
#: and isolates (U+061C, U+200E/F, U+202A-E, U+2066-9), the line and paragraph separators, and
#: lone surrogates (a file name's undecodable bytes, which no terminal encoding can write)
UNSAFE_CHARACTERS = "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]"


class _CompiledAtFirstUse:
    """Stands in for :data:`_UNSAFE` until first used, then compiles it and puts the pattern
    in its place (later calls find the pattern itself: nothing added to :func:`shown`, which
    runs once a printed value). The class's ranges up to U+DFFF take ~0.5 ms to compile, paid
    by every start that imports this module (the CLI does, for its error lines) even when
    nothing is escaped (issue 24, start-up)."""

    def __getattr__(self, name: str) -> object:
        global _UNSAFE
        _UNSAFE = re.compile(UNSAFE_CHARACTERS)
        return getattr(_UNSAFE, name)


_UNSAFE: re.Pattern[str] = _CompiledAtFirstUse()  # type: ignore[assignment]


def _escaped(m: re.Match[str]) -> str:
    c = ord(m.group())
    if 0xDC80 <= c <= 0xDCFF:  # os.fsdecode's surrogateescape of one undecodable byte
        return f"\\x{c - 0xDC00:02x}"
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def is_safe(text: str) -> bool:
    """True when :func:`shown` would leave ``text`` as it is."""
    return _UNSAFE.search(text) is None


def json_shown(doc: str) -> str:
    """A JSON text written with ``ensure_ascii=False`` made safe for a terminal: the characters
    :func:`shown` escapes (JSON already escapes C0; not C1, the bidi marks or lone surrogates)
    as ``\\uXXXX`` escapes inside their strings, so the document parses to the same values."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", doc)


def shown_offsets(text: str) -> tuple[str, list[int]]:
    """:func:`shown` for styled text: the escaped text (line breaks kept: the renderable's
    own) and, per original offset ``i`` (and the end), where it now starts, so that a
    front end can move its style spans with the characters."""
    ends = [0]
    parts = []
    for ch in text:
        parts.append(ch if ch == "\n" else shown(ch))
        ends.append(ends[-1] + len(parts[-1]))
    return "".join(parts), ends


def shown_spans(
    text: str, spans: list[tuple[int, int]]
) -> tuple[str, list[tuple[int, int]]] | None:
    """:func:`shown_offsets` for a styled text's spans: None when nothing needs escaping (line
    breaks aside), else the escaped text and each span's ``(start, end)`` moved with it."""
    if is_safe(text.replace("\n", "")):
        return None
    escaped, ends = shown_offsets(text)
    return escaped, [(ends[min(a, len(text))], ends[min(b, len(text))]) for a, b in spans]


def shown(text: object) -> str:
    """``text`` with every character a terminal would act on written as an escape: ESC as
    ``\\x1b``, a newline as ``\\x0a``, U+202E as ``\\u202e``, an undecodable file-name byte as
    ``\\xff``; everything else (accents, CJK, emoji, backslashes) as it is. The one helper every
    front end uses for text it did not write."""
    s = text if isinstance(text, str) else str(text)
    return _UNSAFE.sub(_escaped, s) if _UNSAFE.search(s) else s


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
