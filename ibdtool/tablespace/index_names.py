"""Index names for a tablespace's index ids, from whichever source has them.

Every index page carries only PAGE_INDEX_ID. The names come from, in this order:

* the MySQL 8 SDI (``se_private_data`` ``id=``), read by
:func:`ibdtool.tablespace.inspect.summarise_sdi`;
* the ``.cfg`` file ``FLUSH TABLES … FOR EXPORT`` writes beside the ``.ibd`` (MySQL 5.6+,
  MariaDB; :mod:`ibdtool.parsers.cfg`), used only when its indexes name this file's space id (a
  stale export of another tablespace is ignored with a warning); its table flags also say the row
  format (``dict_tf``: bit 0 compact, bits 1–4 zip size, bit 5 atomic blobs);
* a live server's ``INNODB_INDEXES`` / ``INNODB_SYS_INDEXES`` rows for the space
  (:func:`from_rows`, filled by the caller that holds the connection);
* ``--schema 'CREATE TABLE …'``, matched by order (:mod:`ibdtool.tablespace.schemas`): the only
source
  without index ids, used after the SDI and the ``.cfg`` file.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

DICT_TF_COMPACT = 1
DICT_TF_ZSSIZE_SHIFT = 1
DICT_TF_ATOMIC_BLOBS = 1 << 5
MAX_CFG_BYTES = 16 << 20  # a table of 4,096 columns and 64 indexes is far smaller


class IndexNames:
    """id → name, where the names came from, and what the source says of the row format.

    A plain class (issue 24, item 4: start-up): nothing compares or prints it."""

    def __init__(
        self,
        source: str | None = None,
        names: dict[int, str] | None = None,
        roots: dict[int, int] | None = None,
        row_format: str | None = None,
        warnings: list[str] | None = None,
    ) -> None:
        self.source = source  # "sdi", "cfg", "server", "schema" (--schema, by order)
        self.names: dict[int, str] = {} if names is None else names
        self.roots: dict[int, int] = {} if roots is None else roots  # id → root page, if known
        self.row_format = row_format
        self.warnings: list[str] = [] if warnings is None else warnings

    @property
    def described(self) -> str:
        """Where the names come from, in words: ``from the sdi``, ``(from --schema, by order)``."""
        if self.source == "schema":
            return "(from --schema, by order)"
        return f"from the {self.source or 'nowhere'}"


def _row_format(tf: int) -> str:
    if not tf & DICT_TF_COMPACT:
        return "REDUNDANT"
    if (tf >> DICT_TF_ZSSIZE_SHIFT) & 0xF:
        return "COMPRESSED"
    return "DYNAMIC" if tf & DICT_TF_ATOMIC_BLOBS else "COMPACT"


def cfg_path(ibd: str | Path) -> Path:
    p = Path(ibd)
    return p.with_suffix(".cfg")


def from_cfg(
    ibd: str | Path,
    space_id: int,
    read: Callable[[Path, int], bytes | None],
) -> IndexNames | None:
    """The ``.cfg`` beside ``ibd``; None when there is none (or it cannot be read).
    ``read(path, limit)`` reads it (:meth:`Tablespace.read_sibling`: locally or through the
    agent of ``report host:path``)."""
    path = cfg_path(ibd)
    out = IndexNames()
    data = read(path, MAX_CFG_BYTES)
    if data is None:
        return None
    # imported only when a .cfg exists: its declarations cost start-up time (issue 14)
    from ibdtool.parsers.cfg import CfgError, read_cfg

    try:
        cfg: Any = read_cfg(data)
    except CfgError as exc:
        out.warnings.append(f"{path.name}: {exc}")
        return out
    spaces = {int(ix.space) for ix in cfg.indexes}
    if spaces != {space_id}:
        got = ", ".join(map(str, sorted(spaces))) or "none"
        out.warnings.append(f"{path.name} is for space {got}, not {space_id}: ignored")
        return out
    out.source = "cfg"
    out.row_format = _row_format(int(cfg.flags))
    for ix in cfg.indexes:
        out.names[int(ix.id)] = str(ix.name).rstrip("\x00")
        out.roots[int(ix.id)] = int(ix.page_no)
    return out


def from_rows(rows: list[tuple[Any, Any, Any]]) -> IndexNames:
    """``(INDEX_ID, NAME, PAGE_NO)`` rows of a server's index catalog for one space."""
    out = IndexNames(source="server")
    for index_id, name, page_no in rows:
        out.names[int(index_id)] = str(name)
        if page_no is not None and int(page_no) >= 0:
            out.roots[int(index_id)] = int(page_no)
    return out
