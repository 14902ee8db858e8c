"""What one pass over a tablespace's pages adds up: page types, compression, checksum
verdicts, index pages and fill, free and unpunched pages (:class:`PageTally`).

Filled page by page from the decoder's records (:meth:`PageTally.add`) or, on the fast path,
from the stored bytes of whole runs (:mod:`ibdtool.tablespace.inspect_tally`); ranges scanned
apart, in other processes too, are merged. :mod:`ibdtool.tablespace.inspect` turns the total
into its result.
"""

from __future__ import annotations

from array import array
from collections import Counter
from typing import TYPE_CHECKING

from ibdtool.parsers.checksum import ChecksumAlgo
from ibdtool.parsers.constants import SDI_INDEX_ID, Algorithm
from ibdtool.parsers.layout import align_up

if TYPE_CHECKING:
    from ibdtool.parsers.page import PageInfo


def unpunched_bytes(info: PageInfo, allocated_in_slot: int, block: int) -> int:
    """Bytes allocated beyond what a compressed page's image needs (0 if punched or plain)."""
    if info.compression is Algorithm.NONE or info.stored_size is None:
        return 0
    ideal = align_up(info.stored_size, block)
    return max(0, allocated_in_slot - ideal)


class PageTally:
    """What one pass over a page range adds up; ranges scanned apart are merged.

    A plain class (issue 24, item 4: start-up): an accumulator nothing compares or prints, so
    it needs no generated methods, and a dataclass's cost ~0.7 ms to make at every start."""

    def __init__(self) -> None:
        self.types: Counter[str] = Counter()
        self.comp: Counter[str] = Counter()
        self.chk: Counter[str] = Counter()
        self.stored_types: set[int] = set()
        self.invalid: list[int] = []
        self.problems: list[tuple[int, str]] = []
        self.index_pages: Counter[int] = Counter()
        self.index_levels: Counter[tuple[int, int]] = Counter()
        self.unverifiable = 0
        self.unpunched_pages = 0
        self.unpunched_bytes = 0
        self.compressed_bytes = 0
        self.fill_sum = 0.0
        self.fill_n = 0
        self.free_pages = 0  # free by the extent descriptors
        self.free_with_data = 0  # ... yet not all zero: stale content of freed pages
        self.free_allocated = 0  # bytes the filesystem still holds for free pages
        self.encrypted = 0  # pages stored encrypted (decrypted or not)
        self.decrypted = 0
        self.key_versions: set[int] = set()
        self.compact_pages = 0  # index pages in compact format (the SDI index aside)
        self.redundant_pages = 0  # … in REDUNDANT format
        self.zip_leaves: array[int] = array("I")  # zip leaf page numbers

    def add(self, info: PageInfo, allocated: int, block: int, free: bool = False) -> None:
        n = info.page_no
        if free:
            self.free_pages += 1
            self.free_with_data += not info.empty
            self.free_allocated += allocated
        self.types[info.type_name] += 1
        self.comp[info.compression.value] += 1
        if info.encrypted or info.decrypted:
            self.encrypted += 1
            self.decrypted += info.decrypted
            if info.key_version:
                self.key_versions.add(info.key_version)
        bad = info.checksum_valid is False
        self.chk[ChecksumAlgo.INVALID.value if bad else info.checksum_algo.value] += 1
        self.stored_types.add(info.stored_type)
        if bad:
            self.invalid.append(n)
        elif info.checksum_valid is None:
            self.unverifiable += 1
        if info.problem:
            self.problems.append((n, info.problem))
        if info.compression is not Algorithm.NONE and info.stored_size:
            self.compressed_bytes += info.stored_size
            extra = unpunched_bytes(info, allocated, block)
            if extra:
                self.unpunched_pages += 1
                self.unpunched_bytes += extra
        if info.index is not None:
            self.index_pages[info.index.index_id] += 1
            self.index_levels[info.index.index_id, info.index.level] += 1
            if info.index.index_id != SDI_INDEX_ID:
                if info.index.compact:
                    self.compact_pages += 1
                else:
                    self.redundant_pages += 1
            if info.index.level == 0:
                self.fill_sum += info.index.fill
                self.fill_n += 1
                if info.zip_stream is not None and not free and info.index.index_id != SDI_INDEX_ID:
                    self.zip_leaves.append(n)

    def merge(self, other: PageTally) -> None:
        """Add a later range's tally (page lists stay in page order)."""
        self.types.update(other.types)
        self.comp.update(other.comp)
        self.chk.update(other.chk)
        self.stored_types |= other.stored_types
        self.invalid.extend(other.invalid)
        self.problems.extend(other.problems)
        self.index_pages.update(other.index_pages)
        self.index_levels.update(other.index_levels)
        self.unverifiable += other.unverifiable
        self.unpunched_pages += other.unpunched_pages
        self.unpunched_bytes += other.unpunched_bytes
        self.compressed_bytes += other.compressed_bytes
        self.fill_sum += other.fill_sum
        self.fill_n += other.fill_n
        self.free_pages += other.free_pages
        self.free_with_data += other.free_with_data
        self.free_allocated += other.free_allocated
        self.encrypted += other.encrypted
        self.decrypted += other.decrypted
        self.key_versions |= other.key_versions
        self.compact_pages += other.compact_pages
        self.redundant_pages += other.redundant_pages
        self.zip_leaves.extend(other.zip_leaves)

    def add_zero_run(self, info: PageInfo, count: int, free: int) -> None:
        """``count`` all-zero pages in holes (nothing allocated), ``free`` of them free, all
        decoded like ``info``: the same sums as :meth:`add` on each, without 67 million calls."""
        self.free_pages += free
        self.types[info.type_name] += count
        self.comp[info.compression.value] += count
        self.chk[info.checksum_algo.value] += count
        self.stored_types.add(info.stored_type)
        if info.checksum_valid is None:
            self.unverifiable += count
