"""Compressors exactly as the servers link them, for byte-exact simulation.

MariaDB's lz4 and lzo providers call the system liblz4 (``LZ4_compress_default``) and liblzo2
(``lzo1x_1_15_compress``). python-lz4 bundles its own build of lz4, whose output differs by a
few hundred bytes a page, and python-lzo only offers ``lzo1x_1``; either would move pages across
block boundaries. So when the system libraries are present (Debian: liblz4-1, liblzo2-2) they
are called through ctypes; otherwise the Python codecs stand in, and the result says so.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import cache

from parsers.codecs import compress as library_compress
from parsers.constants import Algorithm

LZO1X_1_15_MEM_COMPRESS = 1 << 20  # generous: the real need is 32768 dictionary entries


@cache
def _liblz4() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("lz4") or "liblz4.so.1"
    try:
        lib = ctypes.CDLL(name)
        lib.LZ4_compress_default.restype = ctypes.c_int
        lib.LZ4_compressBound.restype = ctypes.c_int
        return lib
    except (OSError, AttributeError):
        return None


@cache
def _liblzo2() -> ctypes.CDLL | None:
    import lzo  # noqa: F401  (python-lzo links the same liblzo2 and runs lzo_init for it)

    name = ctypes.util.find_library("lzo2") or "liblzo2.so.2"
    try:
        lib = ctypes.CDLL(name)
        lib.lzo1x_1_15_compress.restype = ctypes.c_int
        return lib
    except (OSError, AttributeError):
        return None


def exact(algorithm: Algorithm) -> bool:
    """Whether :func:`compress` is byte-exact with the server for this algorithm."""
    if algorithm is Algorithm.LZ4:
        return _liblz4() is not None
    if algorithm is Algorithm.LZO:
        return _liblzo2() is not None
    return True


def compress(algorithm: Algorithm, data: bytes, level: int | None = None) -> bytes:
    """The server's compressed image payload for ``data``."""
    if algorithm is Algorithm.LZ4 and (lib := _liblz4()) is not None:
        bound = lib.LZ4_compressBound(len(data))
        out = ctypes.create_string_buffer(bound)
        n = lib.LZ4_compress_default(data, out, len(data), bound)
        if n > 0:
            return out.raw[:n]
    if algorithm is Algorithm.LZO and (lib := _liblzo2()) is not None:
        out = ctypes.create_string_buffer(len(data) + len(data) // 16 + 64 + 3)
        out_len = ctypes.c_size_t(len(out))
        work = ctypes.create_string_buffer(LZO1X_1_15_MEM_COMPRESS)
        if lib.lzo1x_1_15_compress(data, len(data), out, ctypes.byref(out_len), work) == 0:
            return out.raw[: out_len.value]
    if algorithm is Algorithm.BZIP2 and level is None:
        level = 1  # BZ2_bzBuffToBuffCompress(..., blockSize100k=1, ...) in fil_page_compress
    return library_compress(algorithm, data, level)
