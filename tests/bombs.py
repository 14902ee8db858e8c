"""Decompression bombs for the tests: streams of zeros far larger than any page, built cheaply."""

from __future__ import annotations

import bz2
import lzma
import zlib

MIB = 1 << 20


def zlib_zeros(n_mib: int) -> bytes:
    """A zlib stream of ``n_mib`` MiB of zeros, from one compressed MiB repeated: after a full
    flush deflate starts afresh, so every further MiB compresses to the same bytes."""
    c = zlib.compressobj(9)
    chunk = bytes(MIB)
    first = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    again = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    end = c.flush()[:-4]  # the final empty block; the Adler-32 below is for all n MiB
    adler = ((n_mib * MIB) % 65521) << 16 | 1  # Adler-32 of zeros: a stays 1, b counts bytes
    return first + again * (n_mib - 1) + end + adler.to_bytes(4, "big")


def bzip2_zeros(blocks: int) -> bytes:
    """A bzip2 stream of ``blocks`` identical blocks of 40 MiB of zeros (one 900k block after the
    initial run-length step). Blocks are bit strings, so the one block bzip2 makes is cut out
    between its magic and the end-of-stream magic, repeated, and the stream CRC recombined."""
    one = bz2.compress(bytes(40 * MIB), 9)
    bits = int.from_bytes(one[4:], "big")
    nbits = 8 * (len(one) - 4)
    eos = 0x177245385090
    # the end-of-stream magic is followed by the 32-bit stream CRC and at most 7 padding bits
    for pad in range(8):
        if (bits >> (32 + pad)) & ((1 << 48) - 1) == eos:
            break
    else:
        raise AssertionError("no bzip2 end-of-stream marker")
    block_bits = nbits - 48 - 32 - pad
    block = bits >> (nbits - block_bits)
    block_crc = (block >> (block_bits - 48 - 32)) & 0xFFFFFFFF
    crc = 0
    out = 0
    for _ in range(blocks):
        out = (out << block_bits) | block
        crc = ((crc << 1) | (crc >> 31)) & 0xFFFFFFFF ^ block_crc
    out = (((out << 48) | eos) << 32) | crc
    total = blocks * block_bits + 80
    out <<= -total % 8
    return one[:4] + out.to_bytes((total + 7) // 8, "big")


def xz_zeros(n_mib: int) -> bytes:
    """An xz stream (MariaDB's lzma format) of ``n_mib`` MiB of zeros, preset 0."""
    c = lzma.LZMACompressor(format=lzma.FORMAT_XZ, check=lzma.CHECK_NONE, preset=0)
    chunk = bytes(MIB)
    return b"".join(c.compress(chunk) for _ in range(n_mib)) + c.flush()
