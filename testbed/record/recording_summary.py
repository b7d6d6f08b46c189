"""What `testbed recording show` prints: a recording's origins, IPs and mix (pure)."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from testbed.formats.recording import Exchange, Recording

TYPES = (
    ("html", ("text/html", "application/xhtml")),
    ("css", ("text/css",)),
    ("script", ("javascript", "ecmascript")),
    ("json", ("json",)),
    ("image", ("image/",)),
    ("font", ("font/", "application/font", "application/x-font", "woff")),
    ("media", ("video/", "audio/")),
)


def resource_type(x: Exchange) -> str:
    """A coarse type from the response's content-type (redirects are their own type)."""
    if 300 <= x.status < 400:
        return "redirect"
    ctype = next((v for k, v in x.response_headers if k == "content-type"), "").lower()
    for name, needles in TYPES:
        if any(n in ctype for n in needles):
            return name
    return "other"


@dataclass(frozen=True)
class OriginRow:
    scheme: str
    host: str
    port: int
    ip: str
    requests: int
    bytes: int


@dataclass(frozen=True)
class Summary:
    origins: tuple[OriginRow, ...]
    types: tuple[tuple[str, int, int], ...]
    """(type, requests, bytes), most requests first."""
    ips: tuple[str, ...]
    requests: int
    bytes: int
    statuses: tuple[tuple[int, int], ...]
    """(status, count), by status."""


def summarise(rec: Recording) -> Summary:
    per_origin: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    per_type: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for x in rec.exchanges:
        o = per_origin[(x.scheme, x.host, x.port, x.ip)]
        o[0] += 1
        o[1] += x.body_size
        t = per_type[resource_type(x)]
        t[0] += 1
        t[1] += x.body_size
    origins = tuple(
        OriginRow(o.scheme, o.host, o.port, o.ip, *per_origin[(o.scheme, o.host, o.port, o.ip)])
        for o in rec.origins
    )
    types = tuple(sorted(((k, v[0], v[1]) for k, v in per_type.items()),
                         key=lambda r: (-r[1], r[0])))
    statuses = tuple(sorted(Counter(x.status for x in rec.exchanges).items()))
    return Summary(origins=origins, types=types, ips=tuple(rec.ips),
                   requests=len(rec.exchanges), bytes=rec.total_bytes, statuses=statuses)

