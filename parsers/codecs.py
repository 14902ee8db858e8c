"""The codec registry: every compression algorithm declared once (FORMATS.md §2.1, §3, §7.2).

A :class:`Codec` says what the codec is called, which servers write it (``vendors``: ``mysql``,
``mariadb``, or ``what-if`` for zstd, which no server offers), its ids on disk, whether
MariaDB's full_crc32 image keeps a trailing length byte after its payload (§3.2), which
levels it takes and which the servers default to, whether its library is installed, and how
to compress, decompress and partially decompress with it (:mod:`ibdtool.parsers.codecimpl`). Every
list of codecs elsewhere — the id tables below, ``simulate``'s scenarios, the server flavours,
option help, the TUI legend — is derived from :data:`CODECS`.

Decompression is capped before it inflates: ``decompress(data, size)`` gives exactly ``size``
bytes or raises :class:`CodecError`, and no library is let to produce more than ``size + 1``
(a stream that goes on past the page is an error, as it is for the servers).
zlib/lzma/bzip2 tolerate trailing padding after end-of-stream, as the servers rely on (§3.2).
"""

# No ``from __future__ import annotations`` here: a NamedTuple's string annotations are each
# compiled by typing when the class is made, ~0.9 ms of every start over the records of
# inspect's path (issue 24, item 4; tests/test_startup.py checks them)

import zlib
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Final, NamedTuple

from ibdtool.parsers import codecimpl, syslibs
from ibdtool.parsers.codecimpl import CodecError
from ibdtool.parsers.constants import UNIV_PAGE_SIZE_MAX, Algorithm

__all__ = ["CODECS", "Codec", "CodecError", "codec", "codec_for", "compress", "decompress"]

WHAT_IF: Final = "what-if"  # the vendor of a codec no server offers (zstd)


class Codec(NamedTuple):
    """One compression algorithm, as the servers and ibdtool use it."""

    name: str
    vendors: tuple[str, ...]  # servers that write it as page compression
    impl: codecimpl.Impl
    algorithm: Algorithm | None = None  # its name in page headers; None: never on disk
    mysql_id: int | None = None  # Compression::Type in the FLUSH_LSN field (§2.1)
    mariadb_id: int | None = None  # innodb_compression_algorithm: page header, FSP flags (§3)
    length_byte: bool = False  # full_crc32 keeps the payload's low length byte before the CRC
    levels: tuple[int, int] | None = None  # accepted levels; None: the codec takes no level
    default_level: int | None = None  # innodb_compression_level / page_compression_level
    #: MariaDB builds it as a provider_<name> plugin (10.7+), reported as Innodb_have_<name>
    mariadb_provider: bool = False

    def available(self) -> bool:
        """Is the Python package it needs installed?"""
        return not self.impl.module or codecimpl.importable(self.impl.module)

    def exact(self, vendor: str) -> bool:
        """Does :meth:`compress` give byte for byte what ``vendor``'s server writes? (MariaDB's
        lz4 and lzo need the system liblz4/liblzo2; MySQL bundles its own zlib and lz4, which
        the Python packages only come close to.)"""
        return vendor == "mariadb" and self.impl.server_exact()

    def compress(self, data: bytes, level: int | None = None, vendor: str | None = None) -> bytes:
        """``data`` compressed as ``vendor``'s server does (MariaDB ``fil_page_compress``,
        MySQL ``os_file_compress_page``), or by the Python package when no vendor is given."""
        if vendor == "mariadb":
            out = self.impl.server_compress(data, level)
            if out is not None:
                return out
        return self.impl.compress(data, level)

    def sizer(
        self, level: int | None = None, vendor: str | None = None
    ) -> Callable[[bytes | memoryview], int]:
        """A function ``data -> len(self.compress(data, level, vendor))``, for a caller that
        compresses page after page and needs only the sizes (``simulate``'s workers): which
        build of the library (the server's or the package's) is resolved here, once, and the
        library's context and output buffer are made once and reused call after call (zstd's
        compressor, liblz4's output buffer); a memoryview of a page is read in place where
        the library takes buffers. The same numbers as :meth:`compress`. One per thread: a
        sizer keeps state and is not to be shared between threads."""
        return self.impl.sizer(level, vendor == "mariadb")

    def decompress(self, data: bytes | memoryview, size: int) -> bytes:
        """Exactly ``size`` bytes, or :class:`CodecError`; never inflates beyond ``size + 1``."""
        try:
            out = self.impl.decompress(self._payload(data), size)
        except CodecError:
            raise
        except Exception as exc:  # every codec library raises its own error type
            raise CodecError(f"{self.name}: {exc}") from None
        if len(out) > size:
            raise CodecError(f"{self.name} stream inflates to more than {size} bytes")
        if len(out) != size:
            raise CodecError(f"{self.name} gave {len(out)} bytes, expected {size}")
        return out

    def _payload(self, data: bytes | memoryview) -> bytes:
        """``data`` as the library takes it: a page's memoryview as is where it reads buffers."""
        return data if self.impl.takes_buffers else bytes(data)  # type: ignore[return-value]

    def partial_decompress(
        self, data: bytes | memoryview, n: int, limit: int = UNIV_PAGE_SIZE_MAX
    ) -> bytes:
        """The first ``n`` bytes ``data`` decompresses to, or :class:`CodecError` when it holds
        fewer. zlib, lzma, bzip2, zstd and lz4 (with the system liblz4) stop after ``n`` bytes;
        the others decompress at most ``limit`` bytes (the whole page) and cut."""
        try:
            out = self.impl.prefix(self._payload(data), n, max(n, limit))
        except CodecError:
            raise
        except Exception as exc:
            raise CodecError(f"{self.name}: {exc}") from None
        if len(out) < n:
            raise CodecError(f"{self.name} gave {len(out)} bytes, expected at least {n}")
        return out[:n]

    def prefix_reader(
        self, n: int, limit: int = UNIV_PAGE_SIZE_MAX
    ) -> Callable[[bytes | memoryview], bytes]:
        """``lambda data: self.partial_decompress(data, n, limit)``, as one call with the
        lookups done once: scans read the header of every page of a file through it. zlib's
        is a direct call of the library (no wrapper per page); the same bytes, the same
        errors."""
        direct = self.impl.prefix_reader(n, self.name)
        if direct is not None:
            return direct
        return partial(self.partial_decompress, n=n, limit=limit)

    def prefix_batch(
        self, n: int, limit: int = UNIV_PAGE_SIZE_MAX
    ) -> Callable[[Sequence[bytes | memoryview]], list[bytes]]:
        """:meth:`prefix_reader` of many payloads at once: ``[data, ...] -> [first n bytes,
        ...]``, the same bytes; :class:`CodecError` when any one fails (then ask
        :meth:`prefix_reader` page by page which, and why). zlib's makes no Python call per
        payload."""
        direct = self.impl.prefix_batch(n, self.name)
        if direct is not None:
            return direct
        one = self.prefix_reader(n, limit)

        def read_all(datas: Sequence[bytes | memoryview]) -> list[bytes]:
            return list(map(one, datas))

        return read_all


CODECS: tuple[Codec, ...] = (
    Codec(
        "zlib",
        ("mysql", "mariadb"),
        codecimpl.Zlib(),
        Algorithm.ZLIB,
        mysql_id=1,
        mariadb_id=1,
        levels=(1, 9),
        default_level=6,
    ),
    Codec(
        "lz4",
        ("mysql", "mariadb"),
        codecimpl.Lz4(),
        Algorithm.LZ4,
        mysql_id=2,
        mariadb_id=2,
        length_byte=True,
        mariadb_provider=True,
    ),
    Codec(
        "lzo",
        ("mariadb",),
        codecimpl.Lzo(),
        Algorithm.LZO,
        mariadb_id=3,
        length_byte=True,
        mariadb_provider=True,
    ),
    Codec(
        "lzma",
        ("mariadb",),
        codecimpl.Lzma(),
        Algorithm.LZMA,
        mariadb_id=4,
        levels=(1, 9),
        default_level=6,
        mariadb_provider=True,
    ),
    Codec(
        "bzip2",
        ("mariadb",),
        codecimpl.Bzip2(),
        Algorithm.BZIP2,
        mariadb_id=5,
        mariadb_provider=True,
    ),
    Codec(
        "snappy",
        ("mariadb",),
        codecimpl.Snappy(),
        Algorithm.SNAPPY,
        mariadb_id=6,
        length_byte=True,
        mariadb_provider=True,
    ),
    Codec("zstd", (WHAT_IF,), codecimpl.Zstd(), levels=(1, 22), default_level=3),
)

_BY_NAME = {c.name: c for c in CODECS}
_BY_ALGORITHM = {c.algorithm: c for c in CODECS if c.algorithm is not None}

#: MariaDB algorithm ids, identical in the classic and full_crc32 layouts (§3).
MARIADB_ALGORITHMS: dict[int, Algorithm] = {
    0: Algorithm.NONE,
    **{c.mariadb_id: c.algorithm for c in CODECS if c.mariadb_id and c.algorithm},
}
#: MySQL ``Compression::Type`` (§2.1).
MYSQL_ALGORITHMS: dict[int, Algorithm] = {
    0: Algorithm.NONE,
    **{c.mysql_id: c.algorithm for c in CODECS if c.mysql_id and c.algorithm},
}
#: Algorithms whose full_crc32 image keeps a length byte before the CRC (§3.2).
FCRC32_LENGTH_BYTE = frozenset(c.algorithm for c in CODECS if c.length_byte and c.algorithm)


def codec(name: str) -> Codec:
    """The codec called ``name`` (``zlib``, …, ``zstd``); KeyError when there is none."""
    return _BY_NAME[name]


def codec_for(algorithm: Algorithm) -> Codec:
    """The codec of an on-disk algorithm; KeyError for :attr:`Algorithm.NONE`."""
    return _BY_ALGORITHM[algorithm]


def vendor_codecs(vendor: str) -> tuple[Codec, ...]:
    """Codecs ``vendor`` (``mysql``, ``mariadb``, ``what-if``) offers, in registry order."""
    return tuple(c for c in CODECS if vendor in c.vendors)


def names(vendor: str) -> tuple[str, ...]:
    """Names of :func:`vendor_codecs`: ``("zlib", "lz4")`` for MySQL."""
    return tuple(c.name for c in vendor_codecs(vendor))


def spellings() -> str:
    """How options name (vendor, codec, level): ``mysql:zlib[:L], mysql:lz4,
    mariadb:{zlib,…}[:L], zstd[:L]``."""
    mysql = [f"mysql:{c.name}{'[:L]' if c.levels else ''}" for c in vendor_codecs("mysql")]
    mariadb = f"mariadb:{{{','.join(names('mariadb'))}}}[:L]"
    return ", ".join([*mysql, mariadb, *(f"{c.name}[:L]" for c in vendor_codecs(WHAT_IF))])


def on_disk() -> Iterator[Algorithm]:
    """Every algorithm a page header can name, :attr:`Algorithm.NONE` first."""
    yield Algorithm.NONE
    yield from _BY_ALGORITHM


def decompress(algorithm: Algorithm, data: bytes | memoryview, size: int) -> bytes:
    """Decompress ``data`` to exactly ``size`` bytes, or raise :class:`CodecError`."""
    found = _BY_ALGORITHM.get(algorithm)
    if found is None:
        raise CodecError(f"no decompressor for {algorithm.value}")
    return found.decompress(data, size)


def partial_decompress(
    algorithm: Algorithm, data: bytes | memoryview, n: int, limit: int = UNIV_PAGE_SIZE_MAX
) -> bytes:
    """The first ``n`` bytes of ``data`` decompressed (see :meth:`Codec.partial_decompress`)."""
    found = _BY_ALGORITHM.get(algorithm)
    if found is None:
        raise CodecError(f"no decompressor for {algorithm.value}")
    return found.partial_decompress(data, n, limit)


def compress(algorithm: Algorithm, data: bytes, level: int | None = None) -> bytes:
    """Compress with the Python package (see :meth:`Codec.compress` for a server's own build)."""
    found = _BY_ALGORITHM.get(algorithm)
    if found is None:
        raise CodecError(f"no compressor for {algorithm.value}")
    return found.compress(data, level)


# --- zlib streams inside pages: zip pages (§7.2), SDI records (§8) ------------------------------


def zlib_inflate(data: bytes | memoryview, limit: int) -> tuple[bytes, int | None]:
    """Inflate the zlib stream at the start of ``data``, letting at most ``limit`` bytes out:
    its output and the input bytes it took, None when it does not end within ``data``.
    CodecError when it is broken or would inflate to more than ``limit``. libdeflate takes
    the streams that inflate cleanly (:func:`ibdtool.parsers.syslibs.deflate_zlib_stream`);
    zlib every other, for the verdict and its words."""
    fast = syslibs.deflate_zlib_stream(data, limit)
    if fast is not None:
        return fast
    d = zlib.decompressobj()
    body = bytes(data)
    try:
        out = d.decompress(body, limit + 1)
    except zlib.error as exc:
        raise CodecError(f"zlib: {exc}") from None
    if len(out) > limit:
        raise CodecError(f"zlib stream inflates to more than {limit} bytes")
    return out, len(body) - len(d.unused_data) if d.eof else None


def zlib_stream(data: bytes | memoryview, limit: int) -> tuple[bytes, int]:
    """:func:`zlib_inflate` of a stream that must end within ``data``."""
    out, used = zlib_inflate(data, limit)
    if used is None:
        raise CodecError("zlib stream ended early")
    return out, used


def zlib_page_inflate(data: bytes | memoryview, size: int) -> tuple[bytes, int]:
    """A page payload inflated to exactly ``size`` bytes, and the input bytes the stream took
    (all of ``data`` when the stream does not end within ``size`` bytes of output).
    libdeflate takes the pages that inflate cleanly
    (:func:`ibdtool.parsers.syslibs.deflate_zlib_page`, the same bytes at a third of the cost); zlib
    every other, for the verdict and its words."""
    fast = syslibs.deflate_zlib_page(data, size)
    if fast is not None:
        return fast
    d = zlib.decompressobj()
    body = data  # zlib reads the buffer in place: no copy of the payload
    try:
        out = d.decompress(body, size + 1)
    except zlib.error as exc:
        raise CodecError(f"zlib: {exc}") from None
    if len(out) > size:
        raise CodecError(f"zlib stream inflates to more than {size} bytes")
    if len(out) != size:
        raise CodecError(f"zlib gave {len(out)} bytes, expected {size}")
    return out, len(body) - len(d.unused_data) if d.eof else len(body)
