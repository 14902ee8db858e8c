"""The records every page family returns, and the helpers they share.

A :class:`Field` is one named on-disk field, a :class:`FieldGroup` one structure of the page, a
:class:`Region` a labelled byte range of the hex dump, a :class:`Layout` all of them for one
image. :func:`spans` reads each field's offset and size off its construct declaration in
:mod:`ibdtool.parsers.structs`, so no family types an offset the declaration already knows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from construct import Construct

from ibdtool.parsers.constants import FIL_NULL
from ibdtool.parsers.page import PageInfo
from ibdtool.parsers.space import SpaceFormat
from ibdtool.parsers.vendor import Vendor

#: Region names, in the order a legend lists them.
REGION_NAMES = (
    "fil_header",
    "compression",
    "payload",
    "padding",
    "trailer",
    "index_header",
    "fseg",
    "records",
    "free",
    "directory",
    "fsp_header",
    "xdes",
    "inode",
    "lob_header",
    "data",
)


@dataclass(frozen=True, slots=True)
class Field:
    """One on-disk field: its server name, where it is, and its value as text."""

    name: str
    offset: int
    size: int
    value: str
    note: str = ""


@dataclass(frozen=True, slots=True)
class FieldGroup:
    """A structure of the page (FIL header, index header, XDES array…)."""

    title: str
    fields: tuple[Field, ...] = ()
    #: free-form rows for arrays (one line per XDES entry or inode)
    lines: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Region:
    """Bytes ``[start, end)`` of an image belong to the structure ``name``."""

    start: int
    end: int
    name: str


@dataclass(frozen=True, slots=True)
class Layout:
    """Fields and regions of one image."""

    groups: tuple[FieldGroup, ...]
    regions: tuple[Region, ...]


#: What a family adds to a page's layout: its field groups and its regions.
Parts = tuple[list[FieldGroup], list[Region]]


class Family(Protocol):
    """The contract of a page-family module (see :mod:`ibdtool.parsers.pages`)."""

    def page_types(self, vendor: Vendor) -> frozenset[int]: ...

    def layout(self, page: bytes, info: PageInfo, fmt: SpaceFormat) -> Parts: ...


class Span(NamedTuple):
    """Where a declared field lies in the page."""

    offset: int
    size: int

    @property
    def end(self) -> int:
        return self.offset + self.size


#: The place of a value that is computed, not stored (a page view lists it with the fields).
NOWHERE = Span(0, 0)


def spans(con: Construct, at: int = 0) -> dict[str, Span]:
    """Offset and size of each field of the fixed-size construct Struct ``con`` placed at ``at``."""
    out: dict[str, Span] = {}
    for sub in con.subcons:
        size = sub.sizeof()
        out[sub.name] = Span(at, size)
        at += size
    return out


def field(span: Span, name: str, value: str, note: str = "") -> Field:
    """The field ``name`` at its declared place."""
    return Field(name, span.offset, span.size, value, note)


def page_ref(n: int) -> str:
    return "FIL_NULL" if n == FIL_NULL else str(n)


def addr(a: Any) -> str:
    return "FIL_NULL" if a.page == FIL_NULL else f"{a.page}:{a.offset}"


def flst(base: Any) -> str:
    return f"len {base.length}, first {addr(base.first)}, last {addr(base.last)}"


def ranges(numbers: list[int]) -> str:
    """``[0,1,2,5,7,8]`` -> ``0-2,5,7-8``."""
    parts: list[str] = []
    start = prev = None
    for n in numbers:
        if start is None:
            start = prev = n
        elif prev is not None and n == prev + 1:
            prev = n
        else:
            parts.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = n
    if start is not None:
        parts.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ",".join(parts)


def clip(regions: list[Region], size: int) -> tuple[Region, ...]:
    """The regions cut to ``[0, size)``, empty ones dropped."""
    out = [Region(max(0, r.start), min(size, r.end), r.name) for r in regions]
    return tuple(r for r in out if r.end > r.start)


def region_at(regions: tuple[Region, ...], offset: int) -> str | None:
    """The name of the region holding ``offset`` (the last declared wins), or None."""
    found = None
    for r in regions:
        if r.start <= offset < r.end:
            found = r.name
    return found
