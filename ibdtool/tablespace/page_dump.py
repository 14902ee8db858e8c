"""One page: its stored and decompressed bytes and every decoded field with its offset.

What ``ibdtool page PATH N`` prints (like innodb_ruby's ``page-dump``) and what the TUI's page
view shows and saves: the fields come from the page families of :mod:`ibdtool.parsers.pages` (the
stored image's envelope, then the logical page's FIL frame and family), the bytes from
:meth:`~ibdtool.tablespace.reader.Tablespace.page_with_data` (decrypted when the tablespace was
opened with its key). The logical page of a ROW_FORMAT=COMPRESSED index page is the uncompressed
page the server works on, rebuilt by :func:`ibdtool.parsers.zip_page.decompress_zip_page`, with its
real fill (:func:`~ibdtool.parsers.zip_page.zip_fill`: live records, and the compressed image in
use); a page that cannot be rebuilt keeps its stored image and says why (``rebuild_problem``).
:func:`save_page` writes a page's bytes to a new file in a directory, never through a link and
never over an existing file.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ibdtool.fs import create_new
from ibdtool.parsers.keyring import Keyring
from ibdtool.parsers.page import PageInfo
from ibdtool.parsers.pages import Layout, logical_layout, stored_layout
from ibdtool.parsers.space import SpaceFormat
from ibdtool.parsers.zip_page import (
    ZipFill,
    ZipPageError,
    decompress_zip_page,
    is_zip_index_page,
    zip_fill,
)
from ibdtool.tablespace.reader import Tablespace


@dataclass(frozen=True)
class PageDump:
    path: str
    info: PageInfo
    fmt: SpaceFormat
    stored: bytes
    logical: bytes
    stored_layout: Layout
    logical_layout: Layout
    #: a ROW_FORMAT=COMPRESSED index page rebuilt: its real fill (records and image)
    zip_fill: ZipFill | None = None
    #: why a ROW_FORMAT=COMPRESSED index page could not be rebuilt (None: rebuilt, or not one)
    rebuild_problem: str | None = None

    @property
    def decompressed(self) -> bool:
        """The logical page differs from the stored image (decompressed or a zip page)."""
        return self.stored != self.logical


def dump_page(
    path: str | os.PathLike[str], page_no: int, keyring: Keyring | None = None
) -> PageDump:
    """Page ``page_no`` of ``path``: both images and their layouts (``keyring`` opens an
    encrypted tablespace; a wrong key is an :class:`InputError`)."""
    with Tablespace(path, keyring) as ts:
        return dump_from(ts, page_no)


def dump_from(ts: Tablespace, page_no: int) -> PageDump:
    """Page ``page_no`` of the open tablespace ``ts`` (see :func:`dump_page`)."""
    info, stored, logical = ts.page_with_data(page_no)
    fmt = ts.format
    logical, fill, problem = zip_rebuilt(logical, info, fmt)
    return PageDump(
        str(ts.path),
        info,
        fmt,
        bytes(stored),
        bytes(logical),
        stored_layout(stored, info, fmt),
        logical_layout(logical, info, fmt),
        fill,
        problem,
    )


def zip_rebuilt(
    page: bytes, info: PageInfo, fmt: SpaceFormat
) -> tuple[bytes, ZipFill | None, str | None]:
    """``page`` (the decoded image of page ``info``) as the server's uncompressed frame when it
    is a ROW_FORMAT=COMPRESSED index page, with its real fill; else unchanged. The third item
    says why a zip index page could not be rebuilt."""
    if (
        not fmt.zip
        or info.index is None
        or info.encrypted
        or not is_zip_index_page(int.from_bytes(page[24:26], "big"))
    ):
        return page, None, None
    try:
        zp = decompress_zip_page(page, fmt.logical_size)
        return zp.page, zip_fill(zp), None
    except ZipPageError as exc:
        return page, None, f"cannot rebuild the compressed page: {exc}"


def hex_lines(data: bytes, width: int = 16) -> list[str]:
    """``xxd``-style lines: offset, bytes in hex, printable ASCII."""
    out = []
    for off in range(0, len(data), width):
        chunk = data[off : off + width]
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        out.append(f"{off:08x}: {chunk.hex(' '):<{3 * width - 1}}  {text}")
    return out


def _layout_json(layout: Layout) -> dict[str, Any]:
    return {
        "groups": [
            {
                "title": g.title,
                "fields": [
                    {"name": f.name, "offset": f.offset, "size": f.size, "value": f.value}
                    | ({"note": f.note} if f.note else {})
                    for f in g.fields
                ],
                "lines": list(g.lines),
            }
            for g in layout.groups
        ],
        "regions": [{"start": r.start, "end": r.end, "name": r.name} for r in layout.regions],
    }


def dump_json(d: PageDump, with_bytes: bool = True) -> dict[str, Any]:
    i = d.info
    out: dict[str, Any] = {
        "path": d.path,
        "page": i.page_no,
        "type": i.type_name,
        "stored_type": i.stored_type,
        "compression": i.compression.value,
        "stored_size": i.stored_size,
        "checksum": i.checksum_algo.value,
        "valid": i.checksum_valid,
        "lsn": i.lsn,
        "space_id": i.space_id,
        "problem": i.problem,
        "rebuild_problem": d.rebuild_problem,
        "zip_fill": None if d.zip_fill is None else zip_fill_json(d.zip_fill),
        "stored": _layout_json(d.stored_layout),
        "logical": _layout_json(d.logical_layout),
    }
    if with_bytes:
        out["stored_hex"] = d.stored.hex()
        out["logical_hex"] = d.logical.hex() if d.decompressed else None
    return out


def zip_fill_json(f: ZipFill) -> dict[str, Any]:
    return {
        "records_bytes": f.used,
        "records_fill": round(f.fill, 4),
        "image_bytes": f.physical_used,
        "image_size": f.physical_size,
        "image_fill": round(f.physical_fill, 4),
    }


def zip_fill_text(f: ZipFill) -> str:
    """``records 15,225 bytes (94%) · image 7,501 of 8,192 bytes (92%)``"""
    return (
        f"records {f.used:,} bytes ({100 * f.fill:.0f}%) · image {f.physical_used:,} of "
        f"{f.physical_size:,} bytes ({100 * f.physical_fill:.0f}%)"
    )


def text_lines(d: PageDump) -> list[str]:
    """The fields, one per line with its offset and size, then the hex dumps."""
    i = d.info
    verdict = (
        "valid" if i.checksum_valid else "unverifiable" if i.checksum_valid is None else "INVALID"
    )
    lines = [
        f"{d.path} page {i.page_no}: {i.type_name} (stored type {i.stored_type}), "
        f"{i.compression.value}, checksum {i.checksum_algo.value} {verdict}"
        + (f", {i.problem}" if i.problem else "")
        + (f", {d.rebuild_problem}" if d.rebuild_problem else "")
    ]
    if d.zip_fill is not None:
        lines.append(f"rebuilt from the compressed page: {zip_fill_text(d.zip_fill)}")
    for image, layout in (("stored", d.stored_layout), ("logical", d.logical_layout)):
        for g in layout.groups:
            lines.append(f"[{image}] {g.title}")
            for f in g.fields:
                note = f"  ({f.note})" if f.note else ""
                lines.append(f"  {f.offset:>6} {f.size:>4}  {f.name:<28} {f.value}{note}")
            lines.extend(f"  {line}" for line in g.lines)
    lines.append(f"stored image ({len(d.stored)} bytes):")
    lines += hex_lines(d.stored)
    if d.decompressed:
        lines.append(f"logical page ({len(d.logical)} bytes):")
        lines += hex_lines(d.logical)
    return lines


_UNSAFE = re.compile(r"[^A-Za-z0-9._@#-]+")


def dump_name(path: str, page_no: int, logical: bool = False) -> str:
    """``orders.ibd.page3.bin`` (``.logical.bin`` for the decompressed page)."""
    base = _UNSAFE.sub("_", Path(path).name) or "tablespace"
    return f"{base}.page{page_no}{'.logical' if logical else ''}.bin"


def save_page(data: bytes, name: str, directory: str | os.PathLike[str]) -> Path:
    """Write ``data`` to a new file ``name`` in ``directory``
    (:func:`ibdtool.fs.creating.create_new`: an existing file or a planted link is refused, never
    written through)."""
    return create_new(Path(directory) / name, data)
