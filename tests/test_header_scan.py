"""Scans that inflate only a compressed page's header agree with whole-page decoding.

``header_only`` decoding (``inspect``, ``pages``, the TUI's scan) inflates the first bytes of a
full_crc32 compressed image; on every page of every sample and corpus file each verdict and
header field must be what inflating the whole page gives — only ``compressed_size`` may differ
(the envelope's payload bound instead of the bytes the stream took).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ibdtool.errors import InputError
from ibdtool.tablespace import Tablespace
from parsers.codecs import codec_for
from tests.catalog import load_catalog
from tests.conftest import SAMPLES

FILES = sorted(SAMPLES.rglob("*.ibd")) + [e.path for e in load_catalog() if e.path.is_file()]


def _same(path: Path) -> int:
    """Pages compared; asserts every field but compressed_size matches."""
    try:
        ts = Tablespace(path)
    except InputError:
        return 0  # files the corpus keeps as bad input
    n = 0
    with ts:
        for whole, head in zip(ts.pages(), ts.pages(header_only=True), strict=True):
            if whole.compression.value != "none" and not codec_for(whole.compression).available():
                continue
            assert dataclasses.replace(head, compressed_size=whole.compressed_size) == whole, (
                f"{path} page {whole.page_no}"
            )
            n += 1
    return n


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_header_only_scan_matches_whole_pages(path: Path) -> None:
    _same(path)


def test_header_only_covers_full_crc32_compressed_pages() -> None:
    """The comparison above does reach the pages the fast path changes."""
    compressed = 0
    for path in FILES:
        with Tablespace(path) as ts:
            if not ts.format.full_crc32:
                continue
            compressed += sum(1 for i in ts.pages(header_only=True) if i.is_compressed)
    assert compressed > 100
