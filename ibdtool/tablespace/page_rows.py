"""Rows for ``ibdtool pages``: one flat dict per page, with the page's allocated bytes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ibdtool.errors import InputError
from ibdtool.parsers.constants import MARIADB_TYPE_NAMES, MYSQL_TYPE_NAMES, SDI_INDEX_ID
from ibdtool.parsers.page import DOUBLEWRITE_NAME, ENCRYPTED_NAME, PageInfo
from ibdtool.tablespace.inspect import index_names_of
from ibdtool.tablespace.reader import Tablespace

if TYPE_CHECKING:  # ibdtool.parsers.keyring loads construct and cryptography: only with --keyring
    from ibdtool.parsers.keyring import Keyring
    from ibdtool.parsers.tabledef import TableDef

KNOWN_TYPE_NAMES = sorted(
    set(MYSQL_TYPE_NAMES.values())
    | set(MARIADB_TYPE_NAMES.values())
    | {DOUBLEWRITE_NAME, ENCRYPTED_NAME}
)


def parse_type_filter(types: Sequence[str]) -> tuple[set[str], set[int]]:
    """Type names (case-insensitive, FIL_PAGE_ prefix allowed) and numbers from ``--type``."""
    names: set[str] = set()
    numbers: set[int] = set()
    for t in types:
        for part in t.split(","):
            part = part.strip()
            if not part:
                continue
            if part.isdigit():
                numbers.add(int(part))
                continue
            name = part.upper().removeprefix("FIL_PAGE_").removeprefix("TYPE_")
            if name not in KNOWN_TYPE_NAMES:
                raise InputError(
                    f"unknown page type {part!r}; valid: {', '.join(KNOWN_TYPE_NAMES)}"
                )
            names.add(name)
    return names, numbers


def _index_name(index_id: int, names: dict[int, str] | None) -> str | None:
    return "SDI" if index_id == SDI_INDEX_ID else (names or {}).get(index_id)


def page_row(
    info: PageInfo, allocated: int | None, names: dict[int, str] | None = None
) -> dict[str, Any]:
    idx = info.index
    return {
        "page": info.page_no,
        "type": info.type_name,
        "stored_type": info.stored_type,
        "compression": info.compression.value,
        "compressed_size": info.compressed_size,
        "stored_size": info.stored_size,
        "allocated": allocated,
        "checksum": info.checksum_algo.value,
        "valid": info.checksum_valid,
        "lsn": info.lsn,
        "space_id": info.space_id,
        # the SDI's B-tree has no index id: its pages carry an all-ones sentinel
        "index_id": idx.index_id if idx and idx.index_id != SDI_INDEX_ID else None,
        "index": _index_name(idx.index_id, names) if idx else None,
        "level": idx.level if idx else None,
        "n_recs": idx.n_recs if idx else None,
        "fill": round(idx.fill, 3) if idx else None,
        "zip_stream": info.zip_stream,
        "problem": info.problem,
    }


def read_page_rows(
    path: str,
    *,
    types: Sequence[str] = (),
    start: int = 0,
    stop: int | None = None,
    keyring: Keyring | None = None,
    schema: TableDef | None = None,
) -> Iterator[dict[str, Any]]:
    names, numbers = parse_type_filter(types)
    with Tablespace(path, keyring) as ts:
        if start >= ts.n_pages:
            raise InputError(f"{path}: --from {start} is past the last page ({ts.n_pages - 1})")
        alloc = ts.allocation
        psize = ts.physical_size
        by_id = index_names_of(ts, schema=schema).names
        for info in ts.pages(start, stop, header_only=True):
            if (names or numbers) and not (
                info.type_name in names or info.real_type in numbers or info.stored_type in numbers
            ):
                continue
            yield page_row(info, alloc.allocated_bytes_in(info.page_no * psize, psize), by_id)
