"""The real fill of a ROW_FORMAT=COMPRESSED table's leaf pages, for ``inspect``.

:func:`zip_fill_summary` rebuilds the zip leaf pages the scan found (or an even sample of them)
through :mod:`ibdtool.parsers.zip_page` and averages their fills. Only a zip file needs it, so
it lives apart from :mod:`ibdtool.tablespace.inspect`, which imports it for those files alone:
``inspect`` of any other file creates neither its record class nor the page rebuild (issue 24,
item 4: start-up; ``tests/test_startup.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ibdtool.tablespace.reader import Tablespace

#: ROW_FORMAT=COMPRESSED leaf pages rebuilt for their real fill; more are sampled evenly (a
#: rebuild costs about 1 ms a page, twenty times a header read)
ZIP_FILL_PAGES = 1024


@dataclass
class ZipFillSummary:
    """The real fill of ROW_FORMAT=COMPRESSED leaf pages of the table's indexes (the SDI's and
    pages the extent descriptors call free left out), each rebuilt as the server holds it: the
    records walked and their bytes on the uncompressed page (what INNODB_BUFFER_PAGE's
    NUMBER_RECORDS and DATA_SIZE count) and the bytes of the KEY_BLOCK_SIZE image in use
    (stream, modification log, trailer) — how close each page is to a compression failure."""

    leaf_pages: int  # zip leaf pages in the file
    rebuilt: int  # of them, rebuilt (all, or an even sample of ZIP_FILL_PAGES)
    failed: int  # that could not be rebuilt (damaged: reported by the scan too)
    records: int  # records walked on the rebuilt pages (delete-marked too, as the server counts)
    records_fill: float | None  # average live-record bytes / an empty page's free space
    image_fill: float | None  # average bytes in use / KEY_BLOCK_SIZE
    physical_size: int

    @property
    def sampled(self) -> bool:
        return self.rebuilt + self.failed < self.leaf_pages

    def to_json(self) -> dict[str, Any]:
        return {
            "leaf_pages": self.leaf_pages,
            "rebuilt": self.rebuilt,
            "failed": self.failed,
            "sampled": self.sampled,
            "records": self.records,
            "records_fill": None if self.records_fill is None else round(self.records_fill, 4),
            "image_fill": None if self.image_fill is None else round(self.image_fill, 4),
        }


def zip_fill_summary(
    ts: Tablespace, leaves: Sequence[int], limit: int = ZIP_FILL_PAGES
) -> ZipFillSummary:
    """Rebuild the zip leaf pages ``leaves`` (an even sample of ``limit`` when there are more)
    and average their fills (see :class:`ZipFillSummary`)."""
    from ibdtool.parsers.zip_page import ZipPageError, decompress_zip_page, zip_fill

    n = len(leaves)
    picked = [leaves[i * n // limit] for i in range(limit)] if n > limit else list(leaves)
    rebuilt = failed = records = 0
    records_sum = image_sum = 0.0
    for page_no in picked:
        try:
            zp = decompress_zip_page(ts.stored_page(page_no), ts.logical_size)
            fill = zip_fill(zp)
        except ZipPageError:
            failed += 1
            continue
        rebuilt += 1
        records += fill.records
        records_sum += fill.fill
        image_sum += fill.physical_fill
    return ZipFillSummary(
        leaf_pages=n,
        rebuilt=rebuilt,
        failed=failed,
        records=records,
        records_fill=records_sum / rebuilt if rebuilt else None,
        image_fill=image_sum / rebuilt if rebuilt else None,
        physical_size=ts.physical_size,
    )
