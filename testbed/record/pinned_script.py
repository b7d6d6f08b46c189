"""The pinned script (pinned_script.js) and how it goes into an HTML response: the
page's own scripts then draw the same random numbers and read the same clock in every
load, and so request the same URLs (Web Page Replay's deterministic.js does the same).
The recorder's proxy puts it in the pages the browser records (testbed.record.addon), the
replay in the pages it serves (testbed.replay.deterministic), with the same pin: the
recording's time and a fixed seed. What the browser records is the response as the
origin sent it; the script is never stored.

    text = script(Pin(time_ms))
    headers, body = rewrite(headers, body, text)     # NotInjected: served as it came

A response is rewritten when its content-type is text/html and it has a body; its
content-encoding (gzip, deflate, br, zstd, a list of them) is undone, the script put in,
and the encoding done again; content-length follows the new size. Where the document's
policy (Content-Security-Policy or its -Report-Only twin) would refuse an inline script,
the script's SHA-256 is added to the directive that governs it (`allow_script`): the
page's own scripts are allowed exactly as before. Anything else (an unknown encoding,
UTF-16 text, a body too large to decode) raises NotInjected.

The script goes first in <head> (after <meta charset> when that tag would otherwise
leave the first 1024 bytes, where the browser looks for it), before any <meta> policy of
the page.
"""

from __future__ import annotations

import base64
import bisect
import datetime as dt
import gzip
import hashlib
import re
import zlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import brotli
import zstandard

from testbed.record import decoding

SCRIPT_FILE = Path(__file__).with_name("pinned_script.js")
SEED = 20190
"""The generator's seed: the same for every recording."""
CSP_HEADERS = ("content-security-policy", "content-security-policy-report-only")
CHARSET_PRESCAN = 1024
"""Bytes in which the browser looks for <meta charset> (HTML's encoding prescan)."""

Headers = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Pin:
    """What the script pins: the clock's start (ms since the epoch) and the seed."""

    time_ms: int
    seed: int = SEED

    def as_dict(self) -> dict[str, int]:
        return {"time_ms": self.time_ms, "seed": self.seed}


def pin_at(recorded_at: str) -> Pin:
    """The pin of a recording made at `recorded_at` (ISO 8601; UTC if it names no zone)."""
    when = dt.datetime.fromisoformat(recorded_at)
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return Pin(int(when.timestamp() * 1000))


@cache
def _template() -> str:
    lines = SCRIPT_FILE.read_text().splitlines()
    return "\n".join(ln for ln in lines if not ln.lstrip().startswith("//")) + "\n"


def script(pin: Pin) -> str:
    """The script's text with the pin filled in."""
    return (_template().replace("TIME_MS", str(int(pin.time_ms)))
            .replace("SEED", str(int(pin.seed))))


def script_hash(text: str) -> str:
    """The CSP hash source of an inline script whose text is `text`."""
    digest = hashlib.sha256(text.encode()).digest()
    return f"'sha256-{base64.b64encode(digest).decode()}'"


# --- the HTML ---------------------------------------------------------------------------
SEARCH_WINDOW = 1 << 20
"""<head>, <html> and the doctype are looked for in the first MiB (before <body>), in
one pass each: a hostile body costs linear time."""
_OPENERS = (b"<head", b"<html", b"<!doctype")
_NAME_ENDS = frozenset(b" \t\n\r\f>/")
_CHARSET = re.compile(rb"<meta(?=[\s/])[^>]*charset[^>]*>", re.IGNORECASE)
_META_CSP = re.compile(rb"<meta(?=[\s/])[^>]*content-security-policy", re.IGNORECASE)
_BODY = re.compile(rb"<body(?=[\s>/])", re.IGNORECASE)


class NotInjected(ValueError):
    """Why a response is served as recorded."""


def insertion_point(html: bytes) -> int:
    """Where the script goes: just after <head ...>; without one, after <html ...>, or
    after the doctype, or at the start (never inside a comment, such as an old page's
    `<!--[if IE]><html class="ie"><![endif]-->`). Moved past <meta charset> when the
    script would push that tag out of the first CHARSET_PRESCAN bytes (unless a <meta>
    policy comes before it, which the script must precede)."""
    body = _BODY.search(html, 0, SEARCH_WINDOW)
    limit = body.start() if body else min(len(html), SEARCH_WINDOW)
    starts, ends = _comments(html, limit)
    lowered = html[:limit].lower()
    pos = 0
    for opener in _OPENERS:
        end = _tag_end(lowered, opener, starts, ends)
        if end is not None:
            pos = end
            break
    charset = _CHARSET.search(html, pos, min(limit, CHARSET_PRESCAN))
    if charset and not _META_CSP.search(html, pos, charset.start()):
        pos = charset.end()
    return pos


def _comments(html: bytes, limit: int) -> tuple[list[int], list[int]]:
    """The starts and ends of the comments before `limit`, in order (one pass)."""
    starts: list[int] = []
    ends: list[int] = []
    i = html.find(b"<!--", 0, limit)
    while i >= 0:
        j = html.find(b"-->", i + 4, limit)
        end = limit if j < 0 else j + 3
        starts.append(i)
        ends.append(end)
        i = html.find(b"<!--", end, limit)
    return starts, ends


def _tag_end(lowered: bytes, opener: bytes, starts: list[int], ends: list[int]) -> int | None:
    """Just past the first tag `opener` opens outside a comment (its name ended by a
    blank, `>` or `/`; the doctype by anything), or None."""
    i = lowered.find(opener)
    while i >= 0:
        after = i + len(opener)
        named = opener == b"<!doctype" or (after < len(lowered)
                                            and lowered[after] in _NAME_ENDS)
        if named and not _inside(i, starts, ends):
            j = lowered.find(b">", after)
            return None if j < 0 else j + 1
        i = lowered.find(opener, i + 1)
    return None


def _inside(at: int, starts: list[int], ends: list[int]) -> bool:
    i = bisect.bisect_right(starts, at) - 1
    return i >= 0 and at < ends[i]


def inject_html(html: bytes, text: str) -> bytes:
    """`html` with <script>text</script> at its insertion point."""
    if html.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise NotInjected("UTF-16 text")
    pos = insertion_point(html)
    return html[:pos] + b"<script>" + text.encode() + b"</script>" + html[pos:]


# --- the policy -------------------------------------------------------------------------
_GOVERNING = ("script-src-elem", "script-src", "default-src")


def allow_script(value: str, source: str) -> str:
    """A CSP header value (one or more policies, comma-separated) that also allows the
    inline script whose hash source is `source`. A policy is changed only where it would
    refuse the script: its governing directive (script-src-elem, else script-src, else
    default-src) gets `source` ('none' dropped; default-src is copied into a new
    script-src rather than changed, so styles and the rest keep their sources). A
    directive that allows inline scripts ('unsafe-inline' without a nonce, hash or
    'strict-dynamic', which would disable it) is left alone, since a hash would
    disable its 'unsafe-inline' for the page's own inline scripts."""
    return ",".join(_allow_one(policy, source) for policy in value.split(","))


def _allow_one(policy: str, source: str) -> str:
    parts = [p.strip() for p in policy.split(";")]
    directives = [p.split() for p in parts if p]
    names = [d[0].lower() for d in directives]
    governing = next((n for n in _GOVERNING if n in names), None)
    if governing is None:
        return policy
    i = names.index(governing)
    sources = directives[i][1:]
    lowered = [s.lower() for s in sources]
    overrides = any(s.startswith(("'nonce-", "'sha256-", "'sha384-", "'sha512-"))
                    or s == "'strict-dynamic'" for s in lowered)
    if "'unsafe-inline'" in lowered and not overrides:
        return policy
    kept = [s for s in sources if s.lower() != "'none'"]
    if governing == "default-src":
        directives.append(["script-src", *kept, source])
    else:
        directives[i] = [directives[i][0], *kept, source]
    lead = policy[:len(policy) - len(policy.lstrip())]
    return lead + "; ".join(" ".join(d) for d in directives)


# --- one response -----------------------------------------------------------------------
def _header(headers: Headers, name: str) -> str | None:
    return next((v for k, v in headers if k.lower() == name), None)


def is_html(headers: Headers) -> bool:
    ctype = (_header(headers, "content-type") or "").split(";")[0].strip().lower()
    return ctype == "text/html"


def encode(body: bytes, encoding: str | None) -> bytes:
    """`body` encoded with `encoding` (applied left to right), reproducibly (gzip with
    no time stamp); NotInjected for an encoding it does not make."""
    for coding in [c.strip().lower() for c in (encoding or "").split(",") if c.strip()]:
        if coding == "identity":
            continue
        if coding in ("gzip", "x-gzip"):
            body = gzip.compress(body, compresslevel=6, mtime=0)
        elif coding == "deflate":
            body = zlib.compress(body, 6)
        elif coding == "br":
            body = brotli.compress(body, quality=5)
        elif coding == "zstd":
            body = zstandard.ZstdCompressor(level=3).compress(body)
        else:
            raise NotInjected(f"content-encoding {coding!r}")
    return body


def rewrite(headers: Headers, body: bytes, text: str) -> tuple[Headers, bytes]:
    """The response with the script in: body decoded, injected, encoded again; the CSP
    headers allowing it; content-length the new size. NotInjected if it cannot be."""
    encoding = _header(headers, "content-encoding")
    try:
        html = decoding.decode(body, encoding)
    except ValueError as e:
        raise NotInjected(f"body does not decode: {e}") from None
    out = encode(inject_html(html, text), encoding)
    source = script_hash(text)
    new: list[tuple[str, str]] = []
    for k, v in headers:
        if k.lower() in CSP_HEADERS:
            v = allow_script(v, source)
        elif k.lower() == "content-length":
            v = str(len(out))
        new.append((k, v))
    return tuple(new), out
