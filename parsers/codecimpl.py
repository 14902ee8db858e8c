"""How each compression library is called, with every decompression capped before it inflates.

One small class per codec, all with the same four calls; :mod:`ibdtool.parsers.codecs` declares
which codec is which. ``decompress(data, size)`` never lets a library produce more than ``size + 1``
bytes: zlib, lzma and bzip2 through the ``max_length`` of their streaming decompressors (the
one byte more tells a stream that goes on past the page), lz4 and lzo into a ``size``-byte
buffer (where overrunning it is an error), snappy and zstd after checking the length their
header declares and then into a bounded buffer. A payload that would inflate further is cut
off there and fails the caller's size check, as the servers' own decompression fails when the
page buffer is full; a page that claims to hold a gigabyte costs no more than a page.
``prefix(data, n, limit)`` gives the first ``n`` bytes alone where the library can stop early,
and otherwise decompresses at most ``limit`` bytes and cuts.

Library modules are imported on first use, so a missing optional one costs only its codec and
the CLI starts without loading any.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
import zlib
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from ibdtool.parsers import syslibs
from ibdtool.parsers.errors import ParseError

#: liblzma's dictionary budget: preset 9 (MariaDB's highest level) needs a 64 MiB dictionary,
#: a crafted header may ask for 1.5 GiB
LZMA_MEMLIMIT = 128 << 20


class CodecError(ParseError):
    """A payload did not decompress to the expected size."""


@cache
def _module(name: str) -> Any:
    return importlib.import_module(name)


@cache
def importable(name: str) -> bool:
    """Is the Python module ``name`` installed?"""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _streamed(d: Any, data: bytes, n: int) -> bytes:
    """At most ``n`` bytes out of a zlib/lzma/bz2 streaming decompressor."""
    out: bytes = d.decompress(data, n)
    return out


#: what :meth:`Impl.sizer` compresses once to see whether a server build is there
_PROBE = bytes(64)


class Impl:
    """The calls of one codec; subclasses override what their library does differently."""

    module = ""  # the Python package the codec needs ("" for the standard library)
    #: its calls read any buffer (a memoryview of the page), so the payload is not copied
    takes_buffers = False

    def compress(self, data: bytes, level: int | None) -> bytes:
        raise NotImplementedError

    def server_compress(self, data: bytes, level: int | None) -> bytes | None:
        """MariaDB's own build of the codec where it differs from the Python package; None
        when there is nothing different (or the system library is missing)."""
        return None

    def server_exact(self) -> bool:
        """Is :meth:`server_compress` (or :meth:`compress`) byte-exact with MariaDB's?"""
        return True

    def decompress(self, data: bytes, size: int) -> bytes:
        """At most ``size + 1`` bytes (so the caller sees a stream that goes on past ``size``);
        fewer when the payload holds fewer."""
        raise NotImplementedError

    def prefix(self, data: bytes, n: int, limit: int) -> bytes:
        """The first ``n`` bytes; libraries that cannot stop early decompress ``limit`` at most."""
        return self.decompress(data, limit)[:n]

    def sizer(self, level: int | None, server: bool) -> Callable[[Any], int]:
        """``data -> len(compressed data)``, as :meth:`ibdtool.parsers.codecs.Codec.sizer`
        describes: MariaDB's build (``server``) where :meth:`server_compress` has one, else the
        package's. Codecs whose library keeps a context or writes into a buffer override it."""
        compress, server_compress = self.compress, self.server_compress
        server = server and server_compress(_PROBE, level) is not None

        def size(data: Any) -> int:
            raw = bytes(data)
            out = server_compress(raw, level) if server else None
            return len(compress(raw, level) if out is None else out)

        return size

    def prefix_reader(self, n: int, name: str) -> Callable[[Any], bytes] | None:
        """A direct ``data -> first n bytes`` for the codec ``name`` (its errors worded as
        :meth:`ibdtool.parsers.codecs.Codec.partial_decompress` words them), or None to go through
        that method."""
        return None

    def prefix_batch(self, n: int, name: str) -> Callable[[Sequence[Any]], list[bytes]] | None:
        """A direct ``[data, ...] -> [first n bytes, ...]`` for the codec ``name`` that raises
        :class:`CodecError` when any one of them does not give ``n`` bytes (the caller then
        asks :meth:`prefix_reader` page by page which), or None when there is none."""
        return None


class Zlib(Impl):
    takes_buffers = True

    def compress(self, data: bytes, level: int | None) -> bytes:
        return zlib.compress(data, 6 if level is None else level)

    def sizer(self, level: int | None, server: bool) -> Callable[[Any], int]:
        compress, lv = zlib.compress, 6 if level is None else level

        def size(data: Any) -> int:
            return len(compress(data, lv))  # reads a memoryview in place

        return size

    def decompress(self, data: bytes, size: int) -> bytes:
        d = zlib.decompressobj()
        out = _streamed(d, data, size + 1)
        if not d.eof and len(out) < size:
            raise CodecError("zlib stream ended early")
        return out

    def prefix(self, data: bytes, n: int, limit: int) -> bytes:
        return _streamed(zlib.decompressobj(), data, n)

    def prefix_reader(self, n: int, name: str) -> Callable[[Any], bytes] | None:
        return _zlib_prefix(n, name)

    def prefix_batch(self, n: int, name: str) -> Callable[[Sequence[Any]], list[bytes]] | None:
        one = _zlib_prefix(n, name)

        def read_all(datas: Sequence[Any]) -> list[bytes]:
            # one Python call a payload: it costs less than the copy of the payload's unread
            # rest (``unconsumed_tail``) that handing zlib the whole payload made
            return list(map(one, datas))

        return read_all


#: the bytes of a payload a header inflate is first handed: a dynamic block's code tables
#: take at most ~290 of them and the first 94 bytes of a page at most ~180 more; given the
#: whole payload (a page's), zlib copies its unread rest out (``unconsumed_tail``), a third of
#: the inflate's cost
ZLIB_PREFIX_INPUT = 512


def _zlib_prefix(n: int, name: str) -> Callable[[Any], bytes]:
    """``data -> the first n bytes of the zlib stream data``, from the first
    :data:`ZLIB_PREFIX_INPUT` bytes of ``data`` where that is sure to give what the whole does,
    from all of it otherwise (errors worded as ``Codec.partial_decompress`` words them).

    Sure means: ``n`` bytes came out and input was left over (``unconsumed_tail``). zlib then
    stopped for want of room to write, not for want of input, after the very steps (each bit
    read as the whole payload gives it) that the whole payload takes, so it stops at the same
    point with the same output. Anything else (fewer bytes, the cut input used up, an error,
    the stream's end) is decided by the whole payload."""
    new, error, cut = zlib.decompressobj, zlib.error, ZLIB_PREFIX_INPUT

    def read(data: Any) -> bytes:
        d = new()
        try:
            out: bytes = d.decompress(data[:cut], n)
            if d.unconsumed_tail and len(out) == n:
                return out
        except (error, ValueError, TypeError):
            pass  # the whole payload words the error
        try:
            out = new().decompress(data, n)
        except (error, ValueError, TypeError) as exc:  # what partial_decompress catches
            raise CodecError(f"{name}: {exc}") from None
        if len(out) < n:
            raise CodecError(f"{name} gave {len(out)} bytes, expected at least {n}")
        return out

    return read


class Lz4(Impl):
    module = "lz4"

    def compress(self, data: bytes, level: int | None) -> bytes:
        out: bytes = _module("lz4.block").compress(data, store_size=False)
        return out

    def server_compress(self, data: bytes, level: int | None) -> bytes | None:
        return syslibs.lz4_compress_default(data)

    def server_exact(self) -> bool:
        return syslibs.liblz4() is not None

    def sizer(self, level: int | None, server: bool) -> Callable[[Any], int]:
        block = _module("lz4.block")

        def package(data: Any) -> int:
            return len(block.compress(data, store_size=False))  # reads a memoryview in place

        fast = syslibs.lz4_sizer(package) if server else None
        return package if fast is None else fast

    def decompress(self, data: bytes, size: int) -> bytes:
        # python-lz4 decodes into a size-byte buffer (LZ4_decompress_safe): it cannot overrun
        out: bytes = _module("lz4.block").decompress(data, uncompressed_size=size)
        return out

    def prefix(self, data: bytes, n: int, limit: int) -> bytes:
        out = syslibs.lz4_decompress_partial(data, n)
        return self.decompress(data, limit)[:n] if out is None else out


class Lzo(Impl):
    module = "lzo"

    def compress(self, data: bytes, level: int | None) -> bytes:
        out: bytes = _module("lzo").compress(data, 1, False)
        return out

    def server_compress(self, data: bytes, level: int | None) -> bytes | None:
        return syslibs.lzo1x_1_15_compress(data)

    def server_exact(self) -> bool:
        return syslibs.liblzo2() is not None

    def decompress(self, data: bytes, size: int) -> bytes:
        # lzo1x_decompress_safe into a size-byte buffer: an overrun is an error, not a realloc
        out: bytes = _module("lzo").decompress(data, False, size)
        return out


class Lzma(Impl):
    takes_buffers = True

    def compress(self, data: bytes, level: int | None) -> bytes:
        lzma = _module("lzma")
        out: bytes = lzma.compress(
            data, format=lzma.FORMAT_XZ, check=lzma.CHECK_NONE, preset=6 if level is None else level
        )
        return out

    def decompress(self, data: bytes, size: int) -> bytes:
        return self.prefix(data, size + 1, size + 1)

    def prefix(self, data: bytes, n: int, limit: int) -> bytes:
        lzma = _module("lzma")
        d = lzma.LZMADecompressor(format=lzma.FORMAT_XZ, memlimit=LZMA_MEMLIMIT)
        return _streamed(d, data, n)


class Bzip2(Impl):
    takes_buffers = True

    def compress(self, data: bytes, level: int | None) -> bytes:
        out: bytes = _module("bz2").compress(data, 9 if level is None else level)
        return out

    def server_compress(self, data: bytes, level: int | None) -> bytes | None:
        # BZ2_bzBuffToBuffCompress(..., blockSize100k=1, ...) in fil_page_compress
        out: bytes = _module("bz2").compress(data, 1 if level is None else level)
        return out

    def decompress(self, data: bytes, size: int) -> bytes:
        return self.prefix(data, size + 1, size + 1)

    def prefix(self, data: bytes, n: int, limit: int) -> bytes:
        return _streamed(_module("bz2").BZ2Decompressor(), data, n)


class Snappy(Impl):
    module = "cramjam"

    def compress(self, data: bytes, level: int | None) -> bytes:
        return bytes(_module("cramjam").snappy.compress_raw(data))

    def decompress(self, data: bytes, size: int) -> bytes:
        snappy = _module("cramjam").snappy
        declared = snappy.decompress_raw_len(data)  # the varint the block starts with
        if declared > size:
            raise CodecError(f"snappy block declares {declared} bytes, more than {size}")
        buf = bytearray(declared)
        got = snappy.decompress_raw_into(data, buf)
        return bytes(buf[:got])


_local = threading.local()


def _zstd_compressor(level: int) -> Any:
    """This thread's ZstdCompressor for ``level``: one context reused page after page (a
    compressor is not safe to share between threads)."""
    compressors: dict[int, Any] = _local.__dict__.setdefault("zstd", {})
    found = compressors.get(level)
    if found is None:
        found = compressors[level] = _module("zstandard").ZstdCompressor(level=level)
    return found


class Zstd(Impl):
    module = "zstandard"

    def compress(self, data: bytes, level: int | None) -> bytes:
        out: bytes = _zstd_compressor(level or 3).compress(data)
        return out

    def sizer(self, level: int | None, server: bool) -> Callable[[Any], int]:
        compress = _module("zstandard").ZstdCompressor(level=level or 3).compress  # its own

        def size(data: Any) -> int:
            return len(compress(data))  # reads a memoryview in place

        return size

    def decompress(self, data: bytes, size: int) -> bytes:
        zstd = _module("zstandard")
        declared = zstd.frame_content_size(data)  # -1: the frame does not say
        if declared > size:
            raise CodecError(f"zstd frame declares {declared} bytes, more than {size}")
        if declared < 0:
            return self.prefix(data, size, size)
        # with a content size in the frame, zstandard sizes its buffer by it (checked above)
        out: bytes = zstd.ZstdDecompressor().decompress(data, max_output_size=size)
        return out

    def prefix(self, data: bytes, n: int, limit: int) -> bytes:
        reader = _module("zstandard").ZstdDecompressor().stream_reader(data)
        out = b""
        while len(out) < n:
            piece = reader.read(n - len(out))
            if not piece:
                break
            out += piece
        return out
