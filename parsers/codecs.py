"""Decompressors (and compressors, for simulation) of every page-compression algorithm.

One function pair per algorithm, each taking the exact payload and the expected output size.
zlib/lzma/bzip2 tolerate trailing padding after end-of-stream, as the servers rely on (§3.2).
Libraries: zlib, lzma, bz2 (stdlib), ``lz4.block`` (raw LZ4 blocks, not frames), ``lzo``
(python-lzo, LZO1X), ``cramjam.snappy`` (raw snappy).
"""

from __future__ import annotations

import bz2
import lzma
import zlib
from collections.abc import Callable

import cramjam
import lz4.block
import lzo

from parsers.constants import Algorithm
from parsers.errors import ParseError


class CodecError(ParseError):
    """A payload did not decompress to the expected size."""


def _zlib_decompress(data: bytes, size: int) -> bytes:
    d = zlib.decompressobj()
    out = d.decompress(data, size)
    if not d.eof and len(out) < size:
        raise CodecError("zlib stream ended early")
    return out


def _lz4_decompress(data: bytes, size: int) -> bytes:
    return lz4.block.decompress(data, uncompressed_size=size)


def _lzo_decompress(data: bytes, size: int) -> bytes:
    return lzo.decompress(data, False, size)


def _lzma_decompress(data: bytes, size: int) -> bytes:
    d = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
    return d.decompress(data, size)


def _bzip2_decompress(data: bytes, size: int) -> bytes:
    d = bz2.BZ2Decompressor()
    return d.decompress(data, size)


def _snappy_decompress(data: bytes, size: int) -> bytes:
    return bytes(cramjam.snappy.decompress_raw(data))


DECOMPRESSORS: dict[Algorithm, Callable[[bytes, int], bytes]] = {
    Algorithm.ZLIB: _zlib_decompress,
    Algorithm.LZ4: _lz4_decompress,
    Algorithm.LZO: _lzo_decompress,
    Algorithm.LZMA: _lzma_decompress,
    Algorithm.BZIP2: _bzip2_decompress,
    Algorithm.SNAPPY: _snappy_decompress,
}


def decompress(algorithm: Algorithm, data: bytes | memoryview, size: int) -> bytes:
    """Decompress ``data`` to exactly ``size`` bytes, or raise :class:`CodecError`."""
    try:
        out = DECOMPRESSORS[algorithm](bytes(data), size)
    except CodecError:
        raise
    except KeyError:
        raise CodecError(f"no decompressor for {algorithm.value}") from None
    except Exception as exc:  # every codec library raises its own error type
        raise CodecError(f"{algorithm.value}: {exc}") from None
    if len(out) != size:
        raise CodecError(f"{algorithm.value} gave {len(out)} bytes, expected {size}")
    return out


def compress(algorithm: Algorithm, data: bytes, level: int | None = None) -> bytes:
    """Compress as the servers do (MariaDB fil_page_compress, MySQL os_file_compress_page)."""
    if algorithm is Algorithm.ZLIB:
        return zlib.compress(data, 6 if level is None else level)
    if algorithm is Algorithm.LZ4:
        return lz4.block.compress(data, store_size=False)
    if algorithm is Algorithm.LZO:
        return lzo.compress(data, 1, False)
    if algorithm is Algorithm.LZMA:
        return lzma.compress(
            data, format=lzma.FORMAT_XZ, check=lzma.CHECK_NONE, preset=6 if level is None else level
        )
    if algorithm is Algorithm.BZIP2:
        return bz2.compress(data, 9 if level is None else level)
    if algorithm is Algorithm.SNAPPY:
        return bytes(cramjam.snappy.compress_raw(data))
    raise CodecError(f"no compressor for {algorithm.value}")
