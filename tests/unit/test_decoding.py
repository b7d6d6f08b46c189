"""Undoing content-encodings with a cap: what HAR export relies on."""

from __future__ import annotations

import gzip
import zlib

import brotli
import pytest
import zstandard

from testbed.record.decoding import MAX_DECODED, DecodedTooLarge, decode

DATA = b"hello, world " * 1000


def raw_deflate(data: bytes) -> bytes:
    c = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return c.compress(data) + c.flush()


ENCODERS = {
    "gzip": gzip.compress, "x-gzip": gzip.compress, "deflate": zlib.compress,
    "br": brotli.compress, "zstd": zstandard.ZstdCompressor().compress,
}


@pytest.mark.parametrize("coding", sorted(ENCODERS))
def test_round_trip(coding):
    assert decode(ENCODERS[coding](DATA), coding) == DATA
    assert decode(ENCODERS[coding](DATA), f" {coding.upper()} ") == DATA


def test_identity_lists_raw_deflate_and_gzip_members():
    assert decode(DATA, None) == decode(DATA, "identity") == decode(DATA, "") == DATA
    assert decode(gzip.compress(brotli.compress(DATA)), "br, gzip") == DATA
    assert decode(raw_deflate(DATA), "deflate") == DATA
    assert decode(gzip.compress(b"a") + gzip.compress(b"b"), "gzip") == b"ab"


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", "zstd"])
def test_a_bomb_stops_at_the_cap(coding):
    bomb = ENCODERS[coding](bytes(8 * 1024 * 1024))
    assert len(bomb) < 64 * 1024
    with pytest.raises(DecodedTooLarge, match=rf"decodes \({coding}\) to more than 1048576 bytes"):
        decode(bomb, coding, limit=1024 * 1024)
    assert len(decode(bomb, coding, limit=8 * 1024 * 1024)) == 8 * 1024 * 1024


def test_default_cap_is_64_mib():
    assert MAX_DECODED == 64 * 1024 * 1024
    with pytest.raises(DecodedTooLarge):
        decode(brotli.compress(bytes(MAX_DECODED + 1)), "br")


@pytest.mark.parametrize("body,coding", [
    (b"not compressed", "gzip"), (b"not compressed", "deflate"), (b"not compressed", "br"),
    (b"not compressed", "zstd"), (gzip.compress(DATA, mtime=0)[:-12], "gzip"), (DATA, "compress"),
])
def test_what_does_not_decode_is_a_value_error(body, coding):
    with pytest.raises(ValueError) as e:
        decode(body, coding)
    assert not isinstance(e.value, DecodedTooLarge)
