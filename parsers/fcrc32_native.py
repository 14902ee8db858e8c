"""The compiled chunk loop for MariaDB full_crc32 page_compressed zlib images, through ctypes.

A scan of such a file (``inspect``, ``pages --json``, the TUI) spends, per page, ~1.7 µs of
Python objects around the work itself (a memoryview per image, a decompressor object, the
header's bytes, the column ints: bench/RESULTS.md, issue 24 item 4). ``native/fcrc32_chunk.c``
does a whole chunk in one call instead: for every page, the full_crc32 image's CRC-32C (the
SSE4.2 instruction where the CPU has it, a table otherwise), one zlib inflate of the first bytes
of the page inside (the output bounded to them; one ``z_stream`` a call, reset page after page)
and those bytes unpacked into columns (``array`` objects the caller owns). It answers exactly
what :func:`ibdtool.tablespace.inspect_tally.compressed_headers` answers, which stays the
reference: the tests compare both, column by column, on real files, fragmented ones and mutated
pages, and every ``inspect``/``pages``/``checksum`` document with the library on and off. A
page it does not call ok is the decoder's, as on the Python path.

``scripts/setup.sh`` builds the library (``cc -O2 -shared -fPIC … -lz``) into
``parsers/_native/`` (git ignores it). Without it — not built, built for another
:data:`ABI`, or ``IBDTOOL_NATIVE=0`` in the environment — :func:`library` is None and every
scan takes the Python path, unchanged. :func:`describe` says which path runs.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ibdtool.parsers.pagecolumns import prefix_layout

if TYPE_CHECKING:
    import ctypes

#: where scripts/setup.sh builds the library, beside this module
LIBRARY = Path(__file__).resolve().parent / "_native" / "libfcrc32_chunk.so"
#: the C source it is built from, in a checkout
SOURCE = Path(__file__).resolve().parent.parent / "native" / "fcrc32_chunk.c"
#: the interface version this module speaks (``FCRC32_ABI`` in the C source)
ABI = 1
#: ``IBDTOOL_NATIVE=0``: the Python path alone, library or not
SWITCH = "IBDTOOL_NATIVE"
#: the longest header prefix the C loop inflates (``MAX_PREFIX``)
MAX_PREFIX = 256


def enabled() -> bool:
    """Does the environment allow the compiled loop (``IBDTOOL_NATIVE`` not ``0``)?"""
    return os.environ.get(SWITCH, "1") != "0"


@cache
def _load() -> tuple[ctypes.CDLL | None, str]:
    """The library with its prototypes set, or None, and why (loaded, it may still be unused:
    :func:`library`)."""
    import ctypes

    if not LIBRARY.is_file():
        return None, f"not built ({LIBRARY.name} absent: scripts/setup.sh builds it)"
    try:
        lib = ctypes.CDLL(str(LIBRARY))
        abi = int(lib.fcrc32_abi())
    except (OSError, AttributeError) as exc:
        return None, f"not loadable ({exc})"
    if abi != ABI:
        return None, f"built for interface {abi}, not {ABI}: run scripts/setup.sh again"
    p, u32, u64 = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint64
    lib.fcrc32_chunk.restype = ctypes.c_long
    lib.fcrc32_chunk.argtypes = [p, ctypes.c_size_t, u32, u64, u32, u32, u32, *([p] * 8)]
    lib.fcrc32_crc32c.restype = u32
    lib.fcrc32_crc32c.argtypes = [p, ctypes.c_size_t, ctypes.c_int, p]
    lib.fcrc32_uses_sse42.restype = ctypes.c_int
    return lib, "SSE4.2 CRC-32C" if lib.fcrc32_uses_sse42() else NO_SSE42


#: a CPU without the CRC-32C instruction: the C loop's table is 10× slower than the
#: instruction, and slower than the crc32c package (which has other CPUs' instructions)
NO_SSE42 = "no SSE4.2 here: its table CRC-32C would be slower than the crc32c package's"


def library() -> ctypes.CDLL | None:
    """The compiled loop's library, or None: not built, another interface, switched off, or
    a CPU without the SSE4.2 CRC-32C instruction."""
    if not enabled():
        return None
    lib, why = _load()
    return lib if why != NO_SSE42 else None


def describe() -> str:
    """Which path full_crc32 scans take, in words (``docs/install.md``)."""
    if not enabled():
        return f"Python path ({SWITCH}=0)"
    lib, why = _load()
    if lib is not None and why != NO_SSE42:
        return f"compiled chunk loop ({why})"
    return f"Python path: library {why}" if lib is None else f"Python path: {why}"


class NativeChunk(NamedTuple):
    """One call's answer for a chunk of ``count`` pages (see ``fcrc32_chunk`` in the C source)."""

    #: per page: a full_crc32 image whose CRC-32C verifies and whose header inflated
    ok: list[bool]
    #: the pages whose stored type has the page_compressed marker
    marked: int
    #: the stored page types (FIL_PAGE_TYPE)
    stored: array[int]
    #: the requested fields of the page inside, one column each (0 where not ``ok``)
    heads: dict[str, array[int]]
    #: the image's stored size (0 where not ``ok``)
    sizes: array[int]
    #: its payload's length, as the decoder's ``compressed_size`` (0 where not ``ok``)
    payload: array[int]


_ZERO_B, _ZERO_H = array("B", [0]), array("H", [0])
_ZERO_I, _ZERO_Q = array("I", [0]), array("Q", [0])


def chunk_reader(
    fields: tuple[str, ...], prefix_len: int
) -> Callable[[memoryview, int, int], NativeChunk | None] | None:
    """``(chunk, physical page size, first page number) -> NativeChunk`` for full_crc32 zlib
    images, ``fields`` read from the first ``prefix_len`` bytes of each page inside; with
    ``prefix_len`` 0 (and no fields), the CRC-32C verdicts of images of any algorithm alone,
    nothing inflated. None without the library. The call gives None when the library refuses
    its arguments (a page size it does not take): the caller's Python path then."""
    lib = library()
    if lib is None or not 0 <= prefix_len <= MAX_PREFIX or (fields and not prefix_len):
        return None
    if (_ZERO_B.itemsize, _ZERO_H.itemsize, _ZERO_I.itemsize, _ZERO_Q.itemsize) != (1, 2, 4, 8):
        return None  # the C loop's uint8/16/32/64 columns (every platform Python runs on here)
    import ctypes

    layout = [f for f in prefix_layout(fields) if f[1] + f[2] <= prefix_len]
    if len(layout) != len(fields):
        return None
    names = tuple(name for name, _, _ in layout)
    nfields = len(names)
    offsets = (ctypes.c_uint16 * nfields)(*(at for _, at, _ in layout))
    widths = (ctypes.c_uint8 * nfields)(*(w for _, _, w in layout))
    call = lib.fcrc32_chunk
    at = ctypes.c_char.from_buffer

    def read(mv: memoryview, psize: int, first_page: int) -> NativeChunk | None:
        count = len(mv) // psize
        if not count:
            return None
        # the chunk's address: a writable view's own (a scan's reused buffer), a read-only
        # one's copied once (ctypes hands a bytes object's buffer over as it is)
        keep: Any = bytes(mv) if mv.readonly else at(mv)
        status = _ZERO_B * (2 * count)  # status, then marked
        stored = _ZERO_H * count
        sizes = _ZERO_I * (2 * count)  # sizes, then payload
        cols = _ZERO_Q * max(1, nfields * count)
        got = call(
            keep if mv.readonly else ctypes.addressof(keep),
            count * psize,
            psize,
            first_page,
            count,
            prefix_len,
            nfields,
            offsets,
            widths,
            status.buffer_info()[0],
            status.buffer_info()[0] + count,
            stored.buffer_info()[0],
            sizes.buffer_info()[0],
            sizes.buffer_info()[0] + 4 * count,
            cols.buffer_info()[0],
        )
        del keep
        if got < 0:
            return None
        ok = list(map(bool, status[:count]))
        heads = {name: cols[f * count : (f + 1) * count] for f, name in enumerate(names)}
        return NativeChunk(ok, status[count:].count(1), stored, heads, sizes[:count], sizes[count:])

    return read


def built_from() -> str | None:
    """The SHA-256 of the C source the library was built from (``scripts/build_native.sh``
    records it), or None without the library."""
    import ctypes

    lib = _load()[0]
    if lib is None:
        return None
    fn = lib.fcrc32_source
    fn.restype = ctypes.c_char_p
    return bytes(fn()).decode("ascii", "replace")


def crc32c(data: bytes | bytearray, mode: int = 0) -> int | None:
    """The C loop's CRC-32C of ``data`` (``mode`` 0: the path it takes; 1: the table; 2: the
    SSE4.2 instruction, None where the CPU lacks it), for the tests; None without the library."""
    import ctypes

    lib = _load()[0]
    if lib is None:
        return None
    flag = ctypes.c_int()
    value = int(lib.fcrc32_crc32c(bytes(data), len(data), mode, ctypes.byref(flag)))
    return None if flag.value else value
