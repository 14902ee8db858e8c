"""Collation ids (as the SDI, the ``.cfg`` file and a column's ``prtype`` carry them) → charset.

A column's bytes are decoded with its character set; InnoDB also needs the charset's minimum
and maximum bytes per character to lay a CHAR column out (fixed when they are equal, variable in
COMPACT/DYNAMIC otherwise). The ids are MySQL's and MariaDB's (``SHOW COLLATION``); MariaDB's
``_nopad_`` collations are their PAD SPACE twin + 1024, its UCA 14.0 collations are numbered
from 2048 by charset.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Charset:
    name: str  # MySQL's name
    codec: str | None  # Python codec; None for binary
    mbminlen: int
    mbmaxlen: int


_SETS: dict[str, Charset] = {
    c.name: c
    for c in (
        Charset("binary", None, 1, 1),
        Charset("latin1", "cp1252", 1, 1),
        Charset("latin2", "iso8859_2", 1, 1),
        Charset("latin5", "iso8859_9", 1, 1),
        Charset("latin7", "iso8859_13", 1, 1),
        Charset("ascii", "ascii", 1, 1),
        Charset("greek", "iso8859_7", 1, 1),
        Charset("hebrew", "iso8859_8", 1, 1),
        Charset("koi8r", "koi8_r", 1, 1),
        Charset("koi8u", "koi8_u", 1, 1),
        Charset("cp1250", "cp1250", 1, 1),
        Charset("cp1251", "cp1251", 1, 1),
        Charset("cp1256", "cp1256", 1, 1),
        Charset("cp1257", "cp1257", 1, 1),
        Charset("cp850", "cp850", 1, 1),
        Charset("cp852", "cp852", 1, 1),
        Charset("cp866", "cp866", 1, 1),
        Charset("macroman", "mac_roman", 1, 1),
        Charset("macce", "mac_latin2", 1, 1),
        Charset("tis620", "tis_620", 1, 1),
        Charset("dec8", "latin-1", 1, 1),
        Charset("hp8", "latin-1", 1, 1),
        Charset("swe7", "latin-1", 1, 1),
        Charset("keybcs2", "latin-1", 1, 1),
        Charset("armscii8", "latin-1", 1, 1),
        Charset("geostd8", "latin-1", 1, 1),
        Charset("big5", "big5", 1, 2),
        Charset("gbk", "gbk", 1, 2),
        Charset("gb2312", "gb2312", 1, 2),
        Charset("sjis", "shift_jis", 1, 2),
        Charset("cp932", "cp932", 1, 2),
        Charset("euckr", "euc_kr", 1, 2),
        Charset("ujis", "euc_jp", 1, 3),
        Charset("eucjpms", "euc_jp", 1, 3),
        Charset("gb18030", "gb18030", 1, 4),
        Charset("utf8mb3", "utf-8", 1, 3),
        Charset("utf8mb4", "utf-8", 1, 4),
        Charset("ucs2", "utf-16-be", 2, 2),
        Charset("utf16", "utf-16-be", 2, 4),
        Charset("utf16le", "utf-16-le", 2, 4),
        Charset("utf32", "utf-32-be", 4, 4),
    )
}

# (first id, last id, charset) — SHOW COLLATION of MySQL 8.0 and MariaDB 10.11
_RANGES: tuple[tuple[int, int, str], ...] = (
    (1, 1, "big5"), (2, 2, "latin2"), (3, 3, "dec8"), (4, 4, "cp850"), (5, 5, "latin1"),
    (6, 6, "hp8"), (7, 7, "koi8r"), (8, 8, "latin1"), (9, 9, "latin2"), (10, 10, "swe7"),
    (11, 11, "ascii"), (12, 12, "ujis"), (13, 13, "sjis"), (14, 14, "cp1251"),
    (15, 15, "latin1"), (16, 16, "hebrew"), (18, 18, "tis620"), (19, 19, "euckr"),
    (20, 20, "latin7"), (21, 21, "latin2"), (22, 22, "koi8u"), (23, 23, "cp1251"),
    (24, 24, "gb2312"), (25, 25, "greek"), (26, 26, "cp1250"), (27, 27, "latin2"),
    (28, 28, "gbk"), (29, 29, "cp1257"), (30, 30, "latin5"), (31, 31, "latin1"),
    (32, 32, "armscii8"), (33, 33, "utf8mb3"), (34, 34, "cp1250"), (35, 35, "ucs2"),
    (36, 36, "cp866"), (37, 37, "keybcs2"), (38, 38, "macce"), (39, 39, "macroman"),
    (40, 40, "cp852"), (41, 42, "latin7"), (43, 43, "macce"), (44, 44, "cp1250"),
    (45, 46, "utf8mb4"), (47, 49, "latin1"), (50, 52, "cp1251"), (53, 53, "macroman"),
    (54, 55, "utf16"), (56, 56, "utf16le"), (57, 57, "cp1256"), (58, 59, "cp1257"),
    (60, 61, "utf32"), (62, 62, "utf16le"), (63, 63, "binary"), (64, 64, "armscii8"),
    (65, 65, "ascii"), (66, 66, "cp1250"), (67, 67, "cp1256"), (68, 68, "cp866"),
    (69, 69, "dec8"), (70, 70, "greek"), (71, 71, "hebrew"), (72, 72, "hp8"),
    (73, 73, "keybcs2"), (74, 74, "koi8r"), (75, 75, "koi8u"), (76, 76, "utf8mb3"),
    (77, 77, "latin2"), (78, 78, "latin5"), (79, 79, "latin7"), (80, 80, "cp850"),
    (81, 81, "cp852"), (82, 82, "swe7"), (83, 83, "utf8mb3"), (84, 84, "big5"),
    (85, 85, "euckr"), (86, 86, "gb2312"), (87, 87, "gbk"), (88, 88, "sjis"),
    (89, 89, "tis620"), (90, 90, "ucs2"), (91, 91, "ujis"), (92, 93, "geostd8"),
    (94, 94, "latin1"), (95, 96, "cp932"), (97, 98, "eucjpms"), (99, 99, "cp1250"),
    (101, 124, "utf16"), (128, 151, "ucs2"), (159, 159, "ucs2"), (160, 183, "utf32"),
    (192, 215, "utf8mb3"), (223, 223, "utf8mb3"), (224, 247, "utf8mb4"),
    (248, 250, "gb18030"), (255, 323, "utf8mb4"),
    # MariaDB
    (576, 579, "utf8mb3"), (608, 611, "utf8mb4"), (640, 643, "ucs2"), (672, 675, "utf16"),
    (736, 739, "utf32"),
    (2048, 2303, "utf8mb3"), (2304, 2559, "utf8mb4"), (2560, 2815, "ucs2"),
    (2816, 3071, "utf16"), (3072, 3327, "utf32"),
)  # fmt: skip


def charset_by_name(name: str) -> Charset | None:
    """``utf8``/``utf8mb3``/``utf8mb4``/``latin1``… (case-insensitive) or None."""
    key = name.lower()
    if key == "utf8":
        key = "utf8mb3"
    return _SETS.get(key)


def charset_of(collation_id: int) -> Charset | None:
    """The character set of a collation id, or None when the id is unknown."""
    cid = collation_id
    if 1024 <= cid < 2048:  # MariaDB NO PAD twin
        cid -= 1024
    for first, last, name in _RANGES:
        if first <= cid <= last:
            return _SETS[name]
    return None


def collation_charset_name(collation: str) -> str:
    """``utf8mb4_general_ci`` → ``utf8mb4``; ``utf8_bin`` → ``utf8mb3``; ``binary`` → ``binary``."""
    head = collation.lower().split("_", 1)[0]
    return "utf8mb3" if head == "utf8" else head
