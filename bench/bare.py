"""Bare codec loops split over every core: the anchors of the rows whose floor is a codec.

    python bench/bare.py inflate-classic FILE      every classic page_compressed zlib payload
                                                   of FILE inflated (``checksum``'s floor there)
    python bench/bare.py inflate-fcrc32 FILE       the first 94 bytes (the page and index
                                                   headers) of every full_crc32 compressed
                                                   page of FILE inflated (``inspect``'s floor)
    python bench/bare.py compress [VENDOR:]ALGO LEVEL FILE
                                 every written 16K page of FILE compressed with zlib, lz4 or
                                 zstd as ``simulate --full -a VENDOR:ALGO`` compresses it

Only the codec library and the standard library: the file is read in 4 MiB chunks, chunk k to
worker k mod cores (``os.fork``), each page handed to the library, nothing else — no checksum,
no bookkeeping, one compressor context per worker.

``compress`` uses the library ``simulate`` uses for that vendor, at the same level, on the
same bytes: MariaDB's lz4 is the system liblz4's ``LZ4_compress_default`` (through ctypes, as
``parsers/syslibs.py`` calls it; python-lz4 bundles another build), MySQL's pages are
compressed after their 38-byte header; and, as ``simulate`` does, the chunk is read into one
reused buffer and each page handed over as a view of it (no copy of the page: zlib, zstd and
python-lz4 read a memoryview, liblz4 gets its address), so the anchor is the loop at its
leanest.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

PSIZE = 16384
CHUNK = 256 * PSIZE


def _inflate_classic() -> Callable[[memoryview], object]:
    import zlib

    def one(page: memoryview) -> object:
        if page[24:26] == b"\x86\x32":  # MariaDB classic PAGE_COMPRESSED (34354)
            n = int.from_bytes(page[38:40], "big")
            return zlib.decompress(page[40 : 40 + n])
        return None

    return one


def _inflate_fcrc32_headers() -> Callable[[memoryview], object]:
    """What ``inspect`` inflates of a MariaDB full_crc32 PAGE_COMPRESSED page: its first
    ``PAGE_DATA`` (94) bytes, from the payload after the 26-byte header (FORMATS.md §3.2)."""
    import zlib

    new = zlib.decompressobj

    def one(page: memoryview) -> object:
        if page[24] & 0x80:  # the compressed flag of FIL_PAGE_TYPE (full_crc32)
            return new().decompress(page[26:], 94)
        return None

    return one


def _compressor(spec: str, level: int) -> tuple[Callable[[memoryview], object], int]:
    """(one page view -> compressed, bytes of each page left out) for ``[vendor:]algo``."""
    vendor, _, algo = spec.rpartition(":")
    skip = 38 if vendor == "mysql" else 0
    if algo == "zlib":
        import zlib

        return (lambda page: zlib.compress(page, level)), skip
    if algo == "lz4" and vendor == "mariadb":
        import ctypes
        import ctypes.util

        lib = ctypes.CDLL(ctypes.util.find_library("lz4") or "liblz4.so.1")
        fn = ctypes.CFUNCTYPE(
            ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int
        )(("LZ4_compress_default", lib))
        room = lib.LZ4_compressBound(PSIZE)
        out = ctypes.create_string_buffer(room)
        at, byref = ctypes.c_char.from_buffer, ctypes.byref
        return (lambda page: fn(byref(at(page)), out, len(page), room)), skip
    if algo == "lz4":
        import lz4.block

        return (lambda page: lz4.block.compress(page, store_size=False)), skip
    if algo == "zstd":
        import zstandard

        return zstandard.ZstdCompressor(level=level).compress, skip
    raise SystemExit(f"bare.py: no codec {spec}")


def split_views(path: str, one: Callable[[memoryview], object], skip: int) -> None:
    """``one(view of page[skip:])`` for every written page of ``path`` (all-zero pages are
    not handed over), the chunks dealt over every core, each read into one buffer reused chunk
    after chunk."""
    cores = os.cpu_count() or 1
    size = os.path.getsize(path)
    chunks = range(0, size, CHUNK)
    pids = []
    for k in range(cores):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                # glibc serves blocks over 128 KiB (zlib's deflate state) by mmap until a
                # freed big block raises that threshold: without this, each zlib.compress
                # cost ~23 page faults (+20% CPU), which ibdtool's processes, having freed
                # big blocks long before, do not pay
                del_me = bytearray(2 * CHUNK)
                del del_me
                fd = os.open(path, os.O_RDONLY)
                whole = memoryview(bytearray(CHUNK))
                for off in chunks[k::cores]:
                    got = os.preadv(fd, [whole], off)
                    for p in range(0, got - PSIZE + 1, PSIZE):
                        if any(whole[p : p + 64]):
                            one(whole[p + skip : p + PSIZE])
            except BaseException:
                code = 1
            os._exit(code)
        pids.append(pid)
    failed = [pid for pid in pids if os.waitpid(pid, 0)[1] != 0]
    if failed:
        raise SystemExit(f"bare.py: {len(failed)} workers failed")


def main(argv: list[str]) -> None:
    if argv[:1] == ["inflate-classic"] and len(argv) == 2:
        split_views(argv[1], _inflate_classic(), 0)
    elif argv[:1] == ["inflate-fcrc32"] and len(argv) == 2:
        split_views(argv[1], _inflate_fcrc32_headers(), 0)
    elif argv[:1] == ["compress"] and len(argv) == 4:
        split_views(argv[3], *_compressor(argv[1], int(argv[2])))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
