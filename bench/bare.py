"""Bare codec loops split over every core: the anchors of the rows whose floor is a codec.

    python bench/bare.py inflate-classic FILE      every classic page_compressed zlib payload
                                                   of FILE inflated (``checksum``'s floor there)
    python bench/bare.py compress ALGO LEVEL FILE  every written 16K page of FILE compressed
                                                   with zlib, lz4 or zstd (``simulate --full``)

Only the codec library and the standard library: the file is read in 4 MiB chunks, chunk k to
worker k mod cores (``os.fork``), each page handed to the library, nothing else — no checksum,
no bookkeeping, one compressor context per worker.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

PSIZE = 16384
CHUNK = 256 * PSIZE


def _inflate_classic() -> Callable[[bytes], object]:
    import zlib

    def one(page: bytes) -> object:
        if page[24:26] == b"\x86\x32":  # MariaDB classic PAGE_COMPRESSED (34354)
            n = int.from_bytes(page[38:40], "big")
            return zlib.decompress(page[40 : 40 + n])
        return None

    return one


def _compressor(algo: str, level: int) -> Callable[[bytes], object]:
    if algo == "zlib":
        import zlib

        return lambda page: zlib.compress(page, level)
    if algo == "lz4":
        import lz4.block

        return lambda page: lz4.block.compress(page, store_size=False)
    if algo == "zstd":
        import zstandard

        return zstandard.ZstdCompressor(level=level).compress
    raise SystemExit(f"bare.py: no codec {algo}")


def split(path: str, one: Callable[[bytes], object], skip_zero: bool) -> None:
    """``one(page)`` for every page of ``path``, the chunks dealt over every core."""
    cores = os.cpu_count() or 1
    size = os.path.getsize(path)
    chunks = range(0, size, CHUNK)
    pids = []
    for k in range(cores):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                fd = os.open(path, os.O_RDONLY)
                for off in chunks[k::cores]:
                    data = os.pread(fd, CHUNK, off)
                    for p in range(0, len(data), PSIZE):
                        page = data[p : p + PSIZE]
                        if skip_zero and not any(page[:64]):
                            continue
                        one(page)
            except BaseException:
                code = 1
            os._exit(code)
        pids.append(pid)
    failed = [pid for pid in pids if os.waitpid(pid, 0)[1] != 0]
    if failed:
        raise SystemExit(f"bare.py: {len(failed)} workers failed")


def main(argv: list[str]) -> None:
    if argv[:1] == ["inflate-classic"] and len(argv) == 2:
        split(argv[1], _inflate_classic(), skip_zero=False)
    elif argv[:1] == ["compress"] and len(argv) == 4:
        split(argv[3], _compressor(argv[1], int(argv[2])), skip_zero=True)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
