"""Undo a body's content-encoding, never past a size cap.

    decode(body, "gzip")            # bytes, at most MAX_DECODED of them
    decode(body, "br", limit=1000)  # DecodedTooLarge past 1000 bytes

A few hundred compressed bytes can expand to gigabytes, so every decoder
here stops once it has produced `limit` bytes: zlib and zstandard are asked
for at most that much; Brotli (whose library takes no output limit) is fed
16 bytes at a time, which it expands to at most one 16 MiB meta-block.
Encodings: gzip (x-gzip), deflate (zlib or raw), br, zstd, identity; a
list ("gzip, br") is undone from the last. An unknown encoding or a body
that does not decode is a `ValueError`.
"""

from __future__ import annotations

import zlib

import brotli
import zstandard

MAX_DECODED = 64 * 1024 * 1024
"""Largest decoded body (bytes): HAR export and analyses stop here."""
_BROTLI_STEP = 16
_CHUNK = 1 << 20


class DecodedTooLarge(ValueError):
    def __init__(self, encoding: str, limit: int):
        super().__init__(f"decodes ({encoding}) to more than {limit} bytes")
        self.limit = limit


def decode(body: bytes, encoding: str | None, limit: int = MAX_DECODED) -> bytes:
    codings = [c.strip().lower() for c in (encoding or "").split(",") if c.strip()]
    for coding in reversed(codings):
        body = _decode_one(body, coding, limit)
    return body


def _decode_one(body: bytes, coding: str, limit: int) -> bytes:
    if coding == "identity":
        out = body
    elif coding in ("gzip", "x-gzip"):
        out = _zlib(body, 16 + zlib.MAX_WBITS, limit, coding)
    elif coding == "deflate":
        try:
            out = _zlib(body, zlib.MAX_WBITS, limit, coding)
        except DecodedTooLarge:
            raise
        except ValueError:  # raw deflate, as some servers send
            out = _zlib(body, -zlib.MAX_WBITS, limit, coding)
    elif coding == "br":
        out = _brotli(body, limit)
    elif coding == "zstd":
        out = _zstd(body, limit)
    else:
        raise ValueError(f"unknown content-encoding {coding!r}")
    if len(out) > limit:
        raise DecodedTooLarge(coding, limit)
    return out


def _zlib(body: bytes, wbits: int, limit: int, coding: str) -> bytes:
    """zlib/gzip, gzip members one after the other as gzip.decompress does."""
    out = bytearray()
    data = body
    try:
        while data:
            d = zlib.decompressobj(wbits)
            while data:
                out += d.decompress(data, limit + 1 - len(out))
                if len(out) > limit:
                    raise DecodedTooLarge(coding, limit)
                data = d.unconsumed_tail
            if not d.eof:
                raise ValueError(f"truncated {coding} stream")
            data = d.unused_data
            if not wbits & 16:
                break
    except zlib.error as e:
        raise ValueError(f"not {coding}: {e}") from None
    return bytes(out)


def _brotli(body: bytes, limit: int) -> bytes:
    d = brotli.Decompressor()
    out = bytearray()
    try:
        for i in range(0, len(body), _BROTLI_STEP):
            out += d.process(body[i:i + _BROTLI_STEP])
            if len(out) > limit:
                raise DecodedTooLarge("br", limit)
    except brotli.error as e:
        raise ValueError(f"not brotli: {e}") from None
    if not d.is_finished():
        raise ValueError("truncated brotli stream")
    return bytes(out)


def _zstd(body: bytes, limit: int) -> bytes:
    out = bytearray()
    try:
        with zstandard.ZstdDecompressor().stream_reader(body, read_across_frames=True) as r:
            while chunk := r.read(min(_CHUNK, limit + 1 - len(out))):
                out += chunk
                if len(out) > limit:
                    raise DecodedTooLarge("zstd", limit)
    except zstandard.ZstdError as e:
        raise ValueError(f"not zstd: {e}") from None
    return bytes(out)
