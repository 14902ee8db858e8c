"""A report's rows, kept small until they are printed in order: the memory of ``report`` over
100,000 files.

Every printed format but JSON lines sorts the rows (:func:`ibdtool.report.batch.sort_key`)
and most print totals before them, so the rows must all be at hand when the scan ends. As
dicts they cost ~8.5 KB each (850 MB for 100,000 files); here each is a pickle compressed
(zstd) against the first row's pickle as a dictionary (rows share their keys and most
values: ~50–300 bytes) beside its sort key: one compressor made once, ~5 µs a row, where
deflate, whose dictionary is set again for every stream, took ~15–35 µs. Iterating a
:class:`RowStore` gives the rows back, unpacked one at a time, in sorted order, as many
times as a writer needs: it stands in for the document's ``tablespaces`` list
(:func:`ibdtool.report.batch.document`), and a row comes out exactly as it went in.

A store made with ``text`` (``report --format json``) keeps each row as that text of it
instead, made as the row arrives (while the workers scan) rather than after the scan, on one
core: :meth:`RowStore.texts` gives the texts back in order, and iterating gives each text's
``json.loads`` (string keys, lists for tuples: the same text again).
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable, Iterable, Iterator
from typing import Any

Row = dict[str, Any]

#: zstd level: 3 packs a row as fast as 1 (the dictionary's tables are made once) and smaller
_LEVEL = 3
#: the dictionary's size limit (the first row's pickle or text is all of it in practice)
_ZDICT_MAX = 32768


class RowStore:
    """Rows packed as they arrive; ``iter()`` gives them unpacked in ``key`` order.
    ``text(row)``: keep each row as this JSON text of it (:meth:`texts`)."""

    def __init__(self, key: Callable[[Row], Any], text: Callable[[Row], str] | None = None) -> None:
        self.key = key
        self.text = text
        self._blobs: list[bytes] = []
        self._keys: list[Any] = []
        self._zdict = b""
        self._packer: Any = None
        self._unpacker: Any = None
        self._order: list[int] | None = None

    def _pack(self, row: Row) -> bytes:
        if self.text is not None:
            data = self.text(row).encode()
        else:
            data = pickle.dumps(row, protocol=pickle.HIGHEST_PROTOCOL)
        if self._packer is None:
            import zstandard  # ~2.5 ms: only once a report has a row to keep

            self._zdict = data[-_ZDICT_MAX:]
            zdict = zstandard.ZstdCompressionDict(
                self._zdict, dict_type=zstandard.DICT_TYPE_RAWCONTENT
            )
            zdict.precompute_compress(level=_LEVEL)
            self._packer = zstandard.ZstdCompressor(
                level=_LEVEL, dict_data=zdict, write_checksum=False, write_dict_id=False
            )
            self._unpacker = zstandard.ZstdDecompressor(dict_data=zdict)
        # copied: zstandard's bytes keep the whole compress bound allocated behind their
        # size (tracemalloc: 2,112 bytes held for an 18-byte frame), 200 MB a 100,000 rows
        return bytes(memoryview(self._packer.compress(data)))

    def _inflate(self, blob: bytes) -> bytes:
        data: bytes = self._unpacker.decompress(blob)
        return data

    def _unpack(self, blob: bytes) -> Row:
        data = self._inflate(blob)
        row: Row = json.loads(data) if self.text is not None else pickle.loads(data)
        return row

    def texts(self) -> Iterator[str]:
        """The rows' texts (``text``), in ``key`` order."""
        if self.text is None:
            raise TypeError("a RowStore made without text keeps no texts")
        for i in self._sorted():
            yield self._inflate(self._blobs[i]).decode()

    def append(self, row: Row) -> None:
        self._blobs.append(self._pack(row))
        self._keys.append(self.key(row))
        self._order = None

    def __len__(self) -> int:
        return len(self._blobs)

    def __bool__(self) -> bool:
        return bool(self._blobs)

    def _sorted(self) -> list[int]:
        if self._order is None:
            keys = self._keys
            self._order = sorted(range(len(keys)), key=keys.__getitem__)
        return self._order

    def __iter__(self) -> Iterator[Row]:
        for i in self._sorted():
            yield self._unpack(self._blobs[i])

    def order(self) -> list[int]:
        """The rows' arrival indices in ``key`` order (what iterating goes through)."""
        return list(self._sorted())

    def row_at(self, index: int) -> Row:
        """The row that arrived ``index``-th, unpacked."""
        return self._unpack(self._blobs[index])

    def in_arrival_order(self) -> Iterator[Row]:
        for blob in self._blobs:
            yield self._unpack(blob)

    def rewrite(self, change: Callable[[Row], bool]) -> None:
        """``change(row)`` on every row, in place; a row it returns True for is packed again
        (and its sort key taken again)."""
        for i, blob in enumerate(self._blobs):
            row = self._unpack(blob)
            if change(row):
                self._blobs[i] = self._pack(row)
                self._keys[i] = self.key(row)
                self._order = None

    def extend(self, rows: Iterable[Row]) -> None:
        for row in rows:
            self.append(row)
