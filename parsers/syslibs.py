"""The system liblz4, liblzo2 and libdeflate, called through ctypes, for what the Python
packages lack.

MariaDB's lz4 and lzo providers link the system libraries (``LZ4_compress_default``,
``lzo1x_1_15_compress``). python-lz4 bundles its own lz4 build, whose output differs by a few
hundred bytes a page, and python-lzo only offers ``lzo1x_1``; byte-exact predictions need the
libraries themselves. python-lz4 also has no ``LZ4_decompress_safe_partial``, which stops after
the first bytes of a block. Each function returns None when its library is not installed
(Debian: liblz4-1, liblzo2-2), and the caller falls back to the Python package.

Their output and work buffers are made once per thread and reused call after call (neither
library needs them zeroed): a fresh 1 MiB lzo work area a page cost more than compressing it.

libdeflate inflates a whole 16K zlib page in a third of zlib's time (16 µs against 55 µs
here): :func:`deflate_zlib_page` takes every page that inflates cleanly to its size, and hands
anything else back for zlib to judge and word (MariaDB classic page_compressed pages, whose
checksum lies inside the compressed page, are inflated whole by every scan);
:func:`deflate_zlib_stream` does the same for streams of unknown length (zip pages, SDI).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import ctypes

LZO1X_1_15_MEM_COMPRESS = 1 << 20  # generous: the real need is 32768 dictionary entries

_local = threading.local()


def _buffer(name: str, size: int) -> ctypes.Array[ctypes.c_char]:
    """This thread's buffer ``name`` of at least ``size`` bytes, made once and reused."""
    import ctypes

    buffers: dict[str, ctypes.Array[ctypes.c_char]] = _local.__dict__.setdefault("buffers", {})
    buf = buffers.get(name)
    if buf is None or len(buf) < size:
        buf = buffers[name] = ctypes.create_string_buffer(size)
    return buf


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
    out = _buffer("lz4", bound)
    n = lib.LZ4_compress_default(data, out, len(data), bound)
    return ctypes.string_at(out, n) if n > 0 else None


def lz4_sizer(fallback: Callable[[bytes], int]) -> Callable[[bytes | memoryview], int] | None:
    """A function giving ``len(lz4_compress_default(data))`` without building the output
    (``fallback(data)`` where that returns None): one output buffer made here for the caller
    (a scan's worker, page after page; not to be shared between threads), and a writable
    memoryview (a slice of a reused read buffer) handed to liblz4 in place, not copied. None
    without the library."""
    import ctypes

    lib = liblz4()
    if lib is None:
        return None
    c_int, c_void_p = ctypes.c_int, ctypes.c_void_p
    # a prototype of its own: argtypes set on the shared CDLL function would change how
    # lz4_compress_default passes its arguments
    compress = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p, c_int, c_int)(
        ("LZ4_compress_default", lib)
    )
    bound_of = lib.LZ4_compressBound
    out = ctypes.create_string_buffer(bound_of(LZ4_SIZER_MAX_INPUT))
    room = len(out)
    byref, at = ctypes.byref, ctypes.c_char.from_buffer

    def size(data: bytes | memoryview) -> int:
        n = len(data)
        if n > LZ4_SIZER_MAX_INPUT:  # bigger than any page: the buffered call
            whole = lz4_compress_default(bytes(data))
            return fallback(bytes(data)) if whole is None else len(whole)
        if isinstance(data, bytes):
            src: object = data  # ctypes passes a bytes object's own buffer
        elif not data.readonly and n:
            src = byref(at(data))
        else:
            src = bytes(data)
        got: int = compress(src, out, n, room)
        return got if got > 0 else fallback(bytes(data))

    return size


#: the largest input :func:`lz4_sizer` compresses through its own buffer: a 64K page
LZ4_SIZER_MAX_INPUT = 1 << 16


def lz4_decompress_partial(data: bytes, n: int) -> bytes | None:
    """The first ``n`` bytes a raw LZ4 block decodes to (fewer if it is shorter), written into
    an ``n``-byte buffer by ``LZ4_decompress_safe_partial``; None without the library.
    Raises ValueError on a malformed block."""
    import ctypes

    lib = liblz4()
    if lib is None:
        return None
    out = _buffer("lz4_partial", max(n, 1))
    got = lib.LZ4_decompress_safe_partial(data, out, len(data), n, n)
    if got < 0:
        raise ValueError("malformed lz4 block")
    return ctypes.string_at(out, got)


def lzo1x_1_15_compress(data: bytes) -> bytes | None:
    """``lzo1x_1_15_compress`` of the system liblzo2, or None without it."""
    import ctypes

    lib = liblzo2()
    if lib is None:
        return None
    bound = len(data) + len(data) // 16 + 64 + 3
    out = _buffer("lzo", bound)
    out_len = ctypes.c_size_t(bound)
    work = _buffer("lzo_work", LZO1X_1_15_MEM_COMPRESS)
    if lib.lzo1x_1_15_compress(data, len(data), out, ctypes.byref(out_len), work) != 0:
        return None
    return ctypes.string_at(out, out_len.value)


@cache
def libdeflate() -> ctypes.CDLL | None:
    """The system libdeflate (Debian: libdeflate0), or None."""
    import ctypes

    try:
        lib = ctypes.CDLL("libdeflate.so.0")
        lib.libdeflate_alloc_decompressor.restype = ctypes.c_void_p
        lib.libdeflate_alloc_decompressor.argtypes = []
        lib.libdeflate_zlib_decompress_ex.restype = ctypes.c_int
        lib.libdeflate_zlib_decompress_ex.argtypes = [
            ctypes.c_void_p,  # decompressor
            ctypes.c_void_p,  # in
            ctypes.c_size_t,  # in_nbytes
            ctypes.c_void_p,  # out
            ctypes.c_size_t,  # out_nbytes_avail
            ctypes.c_void_p,  # actual_in_nbytes_ret
            ctypes.c_void_p,  # actual_out_nbytes_ret
        ]
        return lib
    except (OSError, AttributeError):
        return None


#: zlib's CMF byte with a 32 KiB window (CINFO 7) and deflate (CM 8), the one every server
#: writes: the only header :func:`deflate_zlib_page` takes (zlib says what any other is)
_CMF_32K = 0x78


def _decompressor(lib: Any, key: str, size: int) -> tuple[Any, Any, Any, int, int] | None:
    """This thread's libdeflate decompressor kept under ``key``, with an output buffer of at
    least ``size`` bytes and the two ``size_t`` counts ``libdeflate_zlib_decompress_ex`` fills
    (their addresses beside): made once, the buffer grown when asked for more. None when
    libdeflate cannot allocate one."""
    import ctypes

    made = _local.__dict__.get(key)
    if made is None or len(made[1]) < size:
        dec = made[0] if made is not None else lib.libdeflate_alloc_decompressor()
        if not dec:
            return None
        counts = (ctypes.c_size_t * 2)()
        at = ctypes.addressof(counts)
        made = _local.__dict__[key] = (
            dec,
            ctypes.create_string_buffer(size),
            counts,
            at,
            at + ctypes.sizeof(ctypes.c_size_t),
        )
    return made


def deflate_zlib_page(data: bytes | memoryview, size: int) -> tuple[bytes, int] | None:
    """A zlib stream that inflates to exactly ``size`` bytes, through libdeflate (3× faster
    than zlib on a 16K page): its output and the input bytes it took (header and Adler-32
    included, as zlib counts them). None for anything else — no library, another window size,
    a stream that is broken, shorter, longer or does not end — for the caller to ask zlib,
    which gives the verdict and the words. Output is capped at ``size`` bytes."""
    got = _deflate_zlib_page(data, size)
    if got is None:
        return None
    import ctypes

    return ctypes.string_at(got[0], size), got[1]


def deflate_zlib_page_view(data: bytes | memoryview, size: int) -> tuple[memoryview, int] | None:
    """:func:`deflate_zlib_page` without the copy of its output: a read-only view of this
    thread's buffer, good until the thread's next call (a scan that checks each page inside
    and keeps its first bytes: 1 µs and a 16 KiB copy less a page)."""
    got = _deflate_zlib_page(data, size)
    if got is None:
        return None
    return memoryview(got[0]).cast("B")[:size].toreadonly(), got[1]


def _deflate_zlib_page(data: bytes | memoryview, size: int) -> tuple[Any, int] | None:
    """:func:`deflate_zlib_page`'s work: this thread's output buffer holding the page, and the
    input bytes taken."""
    lib = libdeflate()
    if lib is None or not data or data[0] != _CMF_32K or size <= 0:
        return None
    made = _decompressor(lib, "libdeflate", size)
    if made is None:
        return None
    dec, out, counts, in_at, out_at = made
    src = data if isinstance(data, bytes) else bytes(data)
    rc = lib.libdeflate_zlib_decompress_ex(dec, src, len(src), out, size, in_at, out_at)
    if rc != 0 or counts[1] != size:  # LIBDEFLATE_SUCCESS, every byte of the page
        return None
    return out, counts[0]


#: the largest output :func:`deflate_zlib_stream` takes a buffer for (kept per thread): a zip
#: page's stream is at most two pages, an SDI record tens of KiB; a record that says it is
#: larger (a hostile length included) is zlib's, which allocates only what it inflates
STREAM_LIMIT_MAX = 1 << 20


def deflate_zlib_stream(data: bytes | memoryview, limit: int) -> tuple[bytes, int] | None:
    """A zlib stream at the start of ``data`` that ends within it and inflates to at most
    ``limit`` bytes, through libdeflate: its output and the input bytes it took (as zlib counts
    them). For the streams of ROW_FORMAT=COMPRESSED pages (a 16 KiB window, CMF 0x68) and SDI
    records, whose length is not known before. None for anything else — no library, a preset
    dictionary, a stream that is broken, longer than ``limit`` or does not end, or whose output
    is longer than its own window (zlib, inflating with a window of the header's size, could
    refuse a distance libdeflate takes), a limit above :data:`STREAM_LIMIT_MAX` — for zlib to
    judge and word."""
    import ctypes

    lib = libdeflate()
    if lib is None or len(data) < 2 or not 0 < limit <= STREAM_LIMIT_MAX:
        return None
    if data[0] & 0x0F != 8 or data[1] & 0x20:  # not deflate, or a preset dictionary
        return None
    window = 1 << ((data[0] >> 4) + 8)
    made = _decompressor(lib, "libdeflate_stream", limit)
    if made is None:
        return None
    dec, out, counts, in_at, out_at = made
    src = data if isinstance(data, bytes) else bytes(data)
    rc = lib.libdeflate_zlib_decompress_ex(dec, src, len(src), out, limit, in_at, out_at)
    if rc != 0 or counts[1] > min(limit, window):  # LIBDEFLATE_SUCCESS: a whole stream
        return None
    return ctypes.string_at(out, counts[1]), counts[0]
