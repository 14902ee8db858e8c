"""The header inflate of a full_crc32 zlib image (``Codec.prefix_reader`` / ``prefix_batch``,
which first hand zlib only the payload's first ``ZLIB_PREFIX_INPUT`` bytes) against zlib given
the whole payload, as the decoder's ``partial_decompress`` gives it: the same bytes, the same
error and the same words, on every zlib payload of the samples and the corpus, on thousands of
damaged copies of them (a byte flipped before, at and after the cut, payloads cut short) and
on streams made so that the cut decides: empty blocks before the data, stored blocks, an
invalid block right after the header's bytes, a stream that ends there.
"""

from __future__ import annotations

import random
import zlib
from pathlib import Path

import pytest

from ibdtool.parsers.codecimpl import ZLIB_PREFIX_INPUT
from ibdtool.parsers.codecs import CodecError, codec_for
from ibdtool.parsers.constants import Algorithm
from ibdtool.parsers.envelope import MARIADB_FCRC32_PAYLOAD, fcrc32_stored_size
from ibdtool.parsers.page import HEADER_PREFIX
from tests.test_header_scan import FILES, open_tablespaces

N = HEADER_PREFIX
CUT = ZLIB_PREFIX_INPUT


def _whole(data: bytes) -> tuple[str, bytes | str]:
    """The reference: zlib handed the whole payload, worded as ``partial_decompress`` words
    it (ibdtool.parsers.codecs)."""
    try:
        out = zlib.decompressobj().decompress(data, N)
    except zlib.error as exc:
        return "error", f"zlib: {exc}"
    if len(out) < N:
        return "error", f"zlib gave {len(out)} bytes, expected at least {N}"
    return "ok", out


def _ours(read: object, data: bytes) -> tuple[str, bytes | str]:
    try:
        return "ok", read(memoryview(data))  # type: ignore[operator]
    except CodecError as exc:
        return "error", str(exc)


def _zlib_payloads() -> list[bytes]:
    """Every full_crc32 zlib payload of the samples and the corpus (to the image's end)."""
    out = []
    for ts in open_tablespaces():
        if not ts.format.full_crc32 or ts.format.fcrc32_algorithm is not Algorithm.ZLIB:
            continue
        psize = ts.physical_size
        for n in range(ts.n_pages):
            page = ts.stored_page(n)
            ptype = int.from_bytes(page[24:26], "big")
            size = fcrc32_stored_size(ptype, psize) if ptype & 0x8000 else None
            if size is not None and not any(page[0:4]):
                out.append(bytes(page[MARIADB_FCRC32_PAYLOAD:size]))
    return out


@pytest.fixture(scope="module")
def payloads() -> list[bytes]:
    found = _zlib_payloads()
    assert len(found) > 50
    return found


@pytest.fixture(scope="module")
def readers() -> list[object]:
    zlib_codec = codec_for(Algorithm.ZLIB)
    one = zlib_codec.prefix_reader(N, 16384)
    batch = zlib_codec.prefix_batch(N, 16384)
    return [one, lambda data: batch([data])[0]]


def test_real_payloads(payloads: list[bytes], readers: list[object]) -> None:
    for read in readers:
        for data in payloads:
            assert _ours(read, data) == _whole(data)
    # the cut is what the pages take: they do come out of it (else the test proves nothing)
    cut_ok = sum(
        len(d.decompress(p[:CUT], N)) == N and bool(d.unconsumed_tail)
        for p in payloads
        for d in [zlib.decompressobj()]
    )
    assert cut_ok > len(payloads) * 0.9


def test_damaged_payloads(payloads: list[bytes], readers: list[object]) -> None:
    """A byte flipped anywhere in the first 2 KiB, or the payload cut short: whatever zlib
    makes of the whole, the reader makes of it too."""
    rng = random.Random(24)
    outcomes = set()
    for i in range(4000):
        data = bytearray(rng.choice(payloads))
        if i % 5 == 4:
            data = data[: rng.randrange(0, 2 * CUT)]
        else:
            at = rng.randrange(0, min(len(data), 4 * CUT))
            data[at] ^= 1 << rng.randrange(8)
        want = _whole(bytes(data))
        outcomes.add(want[0] if want[0] == "ok" else str(want[1])[:20])
        for read in readers:
            assert _ours(read, bytes(data)) == want, i
    assert len(outcomes) >= 3  # headers out, zlib errors and short streams among them


def _stored(data: bytes, final: bool) -> bytes:
    """A stored deflate block of ``data`` from a byte boundary (RFC 1951 §3.2.4)."""
    n = len(data)
    return bytes([int(final)]) + n.to_bytes(2, "little") + (n ^ 0xFFFF).to_bytes(2, "little") + data


def _made_streams() -> dict[str, bytes]:
    page = bytes(range(256)) * 64
    raw = zlib.compressobj(6, zlib.DEFLATED, -15)
    deflated = raw.compress(page) + raw.flush()
    head = b"\x78\x9c"
    empty = _stored(b"", False)
    return {
        # the data starts past the cut: the cut input gives nothing
        "empty blocks first": head + empty * (CUT // len(empty) + 20) + deflated,
        # the data straddles the cut
        "empty blocks to the cut": head + empty * (CUT // len(empty) - 2) + deflated,
        "stored": head + _stored(page[:4000], True),
        "stored across the cut": head + empty * 98 + _stored(page[:4000], True),
        # the header's bytes exactly, then a block of the reserved type 3: zlib reads on
        # after the header's last byte and fails, with the whole payload as with the cut one
        "invalid block after the header": head + _stored(page[:N], False) + b"\x07" + page,
        "invalid block after the cut": head
        + empty * (CUT // len(empty) - 25)
        + _stored(page[:N], False)
        + b"\x07"
        + page,
        # the cut input used up by the header's last byte, a block of type 3 after it: the
        # cut one gives the header, the whole one an error (empty blocks to 6 bytes short of
        # it, then a fixed-Huffman empty block and a stored block header in those 6 bytes)
        "header ends at the cut, invalid block after": head
        + empty * ((CUT - 2 - 6 - N) // len(empty))
        + b"\x02\x00"
        + N.to_bytes(2, "little")
        + (N ^ 0xFFFF).to_bytes(2, "little")
        + page[:N]
        + b"\x07"
        + page,
        # the stream ends right at the header's last byte (input left after it)
        "ends with the header": head + _stored(page[:N], True) + zlib.compress(page)[:4],
        "ends before the header": head + _stored(page[: N - 1], True) + page,
        "level 1": zlib.compress(page, 1),
        "level 9": zlib.compress(bytes(random.Random(1).randbytes(16384)), 9),
    }


@pytest.mark.parametrize("name", list(_made_streams()))
def test_made_streams(name: str, readers: list[object]) -> None:
    data = _made_streams()[name]
    want = _whole(data)
    for read in readers:
        assert _ours(read, data) == want
    # and with every byte after the header's inflate made wrong: still zlib's verdict
    for read in readers:
        for at in range(0, min(len(data), 3 * CUT), 7):
            bad = bytearray(data)
            bad[at] ^= 0xFF
            assert _ours(read, bytes(bad)) == _whole(bytes(bad)), (name, at)


def test_header_ending_at_the_cut_is_the_whole_payloads() -> None:
    """The made stream above is what it says: zlib gives the header from the cut bytes,
    leaving none over, and fails on the whole payload."""
    data = _made_streams()["header ends at the cut, invalid block after"]
    d = zlib.decompressobj()
    assert len(d.decompress(data[:CUT], N)) == N and not d.unconsumed_tail
    assert _whole(data)[0] == "error"


def test_cut_is_not_a_limit_for_large_headers(readers: list[object]) -> None:
    """A page whose first bytes need more than the cut (many empty blocks) still gives its
    header: the whole payload is asked when the cut one is used up."""
    data = _made_streams()["empty blocks first"]
    assert len(zlib.decompressobj().decompress(data[:CUT], N)) == 0
    for read in readers:
        assert _ours(read, data) == ("ok", bytes(range(N)))


def test_the_samples_exist() -> None:
    assert any(Path(p).name == "p16k-pc_zlib.ibd" for p in FILES)
