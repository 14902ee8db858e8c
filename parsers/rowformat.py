"""A tablespace's row format, from its flags, its index pages and what its table says.

The FSP flags (§4.2) say COMPRESSED (ZIP_SSIZE) and DYNAMIC (ATOMIC_BLOBS) but not COMPACT from
REDUNDANT: MySQL 5.6 and earlier, MySQL 8 and MariaDB all write no POST_ANTELOPE bit for either,
and MariaDB's full_crc32 flags carry no row format at all. Every index page does: bit 15 of
PAGE_N_HEAP is set on a compact-format page (COMPACT, DYNAMIC, COMPRESSED) and clear on a
REDUNDANT one (§5.1). The table's own declaration (the SDI's ``row_format``, the ``.cfg`` file's
table flags) settles COMPACT from DYNAMIC where the flags cannot.

The row format is one property of the tablespace: a single table's every partition and index
agree, so the pages are counted over the whole file (the SDI index, always compact, aside).
"""

from __future__ import annotations

from ibdtool.parsers.flags import FspFlags

COMPACT_OR_DYNAMIC = "DYNAMIC or COMPACT"
UNDECIDED = "REDUNDANT or COMPACT"


def row_format(
    flags: FspFlags,
    compact_pages: int,
    redundant_pages: int,
    declared: str | None = None,
) -> str | None:
    """The row format; ``declared`` is what the SDI or .cfg says (None when they do not).

    Pages outvote a declaration that contradicts them (a damaged or foreign SDI).
    """
    declared = declared.upper() if declared else None
    if not flags.full_crc32:
        if flags.zip:
            return "COMPRESSED"
        if flags.atomic_blobs:
            return "DYNAMIC"
    if redundant_pages and not compact_pages:
        return "REDUNDANT"
    if compact_pages and not redundant_pages:
        if declared in ("COMPACT", "DYNAMIC"):
            return declared
        if flags.full_crc32:
            return COMPACT_OR_DYNAMIC
        return "COMPACT"
    if declared:
        return declared
    if flags.full_crc32:
        return None
    return "COMPACT" if flags.post_antelope else UNDECIDED
