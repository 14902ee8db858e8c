"""The system liblz4 and liblzo2, called through ctypes, for what the Python packages lack.

MariaDB's lz4 and lzo providers link the system libraries (``LZ4_compress_default``,
``lzo1x_1_15_compress``). python-lz4 bundles its own lz4 build, whose output differs by a few
hundred bytes a page, and python-lzo only offers ``lzo1x_1``; byte-exact predictions need the
libraries themselves. python-lz4 also has no ``LZ4_decompress_safe_partial``, which stops after
the first bytes of a block. Each function returns None when its library is not installed
(Debian: liblz4-1, liblzo2-2), and the caller falls back to the Python package.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ctypes

LZO1X_1_15_MEM_COMPRESS = 1 << 20  # generous: the real need is 32768 dictionary entries


@cache
def liblz4() -> ctypes.CDLL | None:
    """The system liblz4, or None."""
    import ctypes.util  # here, not at import: ctypes.util costs the CLI's start-up 20 ms

    name = ctypes.util.find_library("lz4") or "liblz4.so.1"
    try:
        lib = ctypes.CDLL(name)
        lib.LZ4_compress_default.restype = ctypes.c_int
        lib.LZ4_compressBound.restype = ctypes.c_int
        lib.LZ4_decompress_safe_partial.restype = ctypes.c_int
        return lib
    except (OSError, AttributeError):
        return None


@cache
def liblzo2() -> ctypes.CDLL | None:
    """The system liblzo2, or None."""
    try:
        import lzo  # noqa: F401  (python-lzo links the same liblzo2 and runs lzo_init for it)
    except ImportError:
        return None
    import ctypes.util

    name = ctypes.util.find_library("lzo2") or "liblzo2.so.2"
    try:
        lib = ctypes.CDLL(name)
        lib.lzo1x_1_15_compress.restype = ctypes.c_int
        return lib
    except (OSError, AttributeError):
        return None


def lz4_compress_default(data: bytes) -> bytes | None:
    """``LZ4_compress_default`` of the system liblz4, or None without it."""
    import ctypes

    lib = liblz4()
    if lib is None:
        return None
    bound = lib.LZ4_compressBound(len(data))
    out = ctypes.create_string_buffer(bound)
    n = lib.LZ4_compress_default(data, out, len(data), bound)
    return out.raw[:n] if n > 0 else None


def lz4_decompress_partial(data: bytes, n: int) -> bytes | None:
    """The first ``n`` bytes a raw LZ4 block decodes to (fewer if it is shorter), written into
    an ``n``-byte buffer by ``LZ4_decompress_safe_partial``; None without the library.
    Raises ValueError on a malformed block."""
    import ctypes

    lib = liblz4()
    if lib is None:
        return None
    out = ctypes.create_string_buffer(max(n, 1))
    got = lib.LZ4_decompress_safe_partial(data, out, len(data), n, n)
    if got < 0:
        raise ValueError("malformed lz4 block")
    return out.raw[:got]


def lzo1x_1_15_compress(data: bytes) -> bytes | None:
    """``lzo1x_1_15_compress`` of the system liblzo2, or None without it."""
    import ctypes

    lib = liblzo2()
    if lib is None:
        return None
    out = ctypes.create_string_buffer(len(data) + len(data) // 16 + 64 + 3)
    out_len = ctypes.c_size_t(len(out))
    work = ctypes.create_string_buffer(LZO1X_1_15_MEM_COMPRESS)
    if lib.lzo1x_1_15_compress(data, len(data), out, ctypes.byref(out_len), work) != 0:
        return None
    return out.raw[: out_len.value]
