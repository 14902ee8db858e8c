"""The logical page inside a page-compressed image, from its
:class:`~ibdtool.parsers.envelope.Envelope`.

MySQL type 14 (§2.1) compresses the body after the 38-byte header: the page is the header with
its original type put back, then the inflated body. MariaDB (§3.1, §3.2) compresses the whole
page. zlib streams report the bytes they really consumed, the payload length InnoDB would give;
a zlib payload that inflates cleanly to its page goes through libdeflate (MariaDB's and MySQL's
alike: :func:`ibdtool.parsers.syslibs.deflate_zlib_page`), any other through zlib.
Every payload is inflated through the codec registry (:mod:`ibdtool.parsers.codecs`), whose calls
are capped at the page: a stream that would inflate past it is an error, never a bigger buffer.
Encrypted images must be decrypted first (:mod:`ibdtool.parsers.crypt`, with the key); without it
they raise, and the decrypted image, a stored page again, is read through its own envelope.
"""

from __future__ import annotations

from ibdtool.parsers.codecs import CodecError, decompress, zlib_page_inflate
from ibdtool.parsers.constants import FIL_PAGE_DATA, Algorithm
from ibdtool.parsers.envelope import Envelope, Kind
from ibdtool.parsers.syslibs import deflate_zlib_page


def inflate(page: bytes | memoryview, env: Envelope, logical_size: int) -> tuple[bytes, int]:
    """The ``logical_size``-byte page inside the compressed image ``page`` and the payload
    bytes the decompressor consumed. Raises :class:`CodecError` when that is not possible."""
    if env.problem is not None:
        raise CodecError(env.problem)
    if env.encrypted:
        raise CodecError("the image is encrypted: decrypt it with its key first (--keyring)")
    start, end = env.payload_offset, env.payload_end
    if not env.compressed or start is None or end is None:
        raise CodecError(f"{env.kind.value} page has no compressed payload")
    mv = memoryview(page)
    payload = mv[start:end]
    if env.kind is Kind.MYSQL_COMPRESSED:
        size = logical_size - FIL_PAGE_DATA
        fast = deflate_zlib_page(payload, size) if env.algorithm is Algorithm.ZLIB else None
        # libdeflate takes the bodies that inflate cleanly to the page; the codec every other,
        # for the verdict in its words
        body = fast[0] if fast is not None else decompress(env.algorithm, payload, size)
        head = bytearray(mv[:FIL_PAGE_DATA])
        head[24:26] = (env.original_type or 0).to_bytes(2, "big")
        return bytes(head) + body, len(payload)
    if env.algorithm is Algorithm.ZLIB:
        return zlib_page_inflate(payload, logical_size)
    return decompress(env.algorithm, payload, logical_size), len(payload)
