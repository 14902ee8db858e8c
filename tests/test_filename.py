"""The filename codec on its own: every character it can meet, and whole file names.

Which code each character gets is checked against the servers in ``test_names_live.py``; here
the codec must agree with itself: decoding what it encodes gives the name back for every
character of the Basic Multilingual Plane, and no two characters share a code.
"""

from __future__ import annotations

import pytest

from ibdtool.parsers import filename

BMP = [chr(cp) for cp in range(1, 0x10000) if not 0xD800 <= cp <= 0xDFFF]


def test_every_bmp_character_round_trips_and_codes_are_unique() -> None:
    codes = {c: filename.encode(c) for c in BMP}
    assert len(set(codes.values())) == len(codes)
    for c, code in codes.items():
        assert filename.decode(code, strict=True) == c
        assert len(code) in (1, 3, 5) and (len(code) == 1) == (c in filename.SAFE)
    # letters with a two-character code never collide with a hex code's first characters
    two = {v[1:] for v in codes.values() if len(v) == 3}
    assert not [c for c, code in codes.items() if len(code) == 5 and code[1:3] in two]


@pytest.mark.parametrize("bad", ["\U0001f600", "\x00"])
def test_characters_no_identifier_can_hold(bad: str) -> None:
    with pytest.raises(filename.FilenameError):
        filename.encode("t" + bad)


def test_what_is_not_encoded_is_kept_unless_strict() -> None:
    for raw in ("#sql-ib12-34", "a-b", "x@zz", "@00", "@d800"):
        assert filename.decode(raw) == raw
        with pytest.raises(filename.FilenameError):
            filename.decode(raw, strict=True)


def test_partition_files_both_separator_cases() -> None:
    names = ("ünï©ødé", "p ü0", "p ü0sp1")
    for lower in (False, True):
        stem = filename.table_file_stem(*names, lower_separators=lower)
        assert ("#p#" in stem) == lower and ("#P#" in stem) != lower
        got = filename.split_table_file(stem)
        assert (got.table, got.partition, got.subpartition) == names
        assert got.partition_label == "p ü0/p ü0sp1"
    # MySQL 8.0.17+ lower-cases the partition names too (files seen on 8.0.33; 8.0.15 keeps them)
    assert (
        filename.table_file_stem("Tt", "Pa", "pBsp0", lower_separators=True) == "Tt#p#pa#sp#pbsp0"
    )
    assert filename.table_file_stem("Tt", "Pa", "pBsp0") == "Tt#P#Pa#SP#pBsp0"
    assert filename.split_table_file("#sql-ib1234-5678").temporary
    assert filename.split_table_file("#mysql50#a-b").table == "a-b"
