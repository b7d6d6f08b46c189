"""Which recorded exchange answers a request: Mahimahi's rule, pure.

A request matches the recorded exchanges with the same scheme, the same host
(case-insensitive, any port stripped), the same method (case-sensitive) and
the same path (the request target up to '?', compared as-is). Among those
candidates the one whose full target shares the longest common prefix (in
UTF-8 bytes) with the request's target wins, an identical target scoring one
more (Mahimahi compares whole request lines, "GET /a HTTP/1.1", so an
identical target outranks one that merely extends it); ties go to the
earliest in recording order. No candidate: None (the server answers 404 and
counts a miss).

h3server implements the same rule in Rust; tests/vectors/matching.json holds
the cases both must pass.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Request:
    """What the matching looks at in a request."""

    scheme: str
    """"http" or "https"."""
    host: str
    """Host as sent (Host header or :authority), possibly with a port."""
    method: str
    target: str
    """Path plus query string, as sent."""


def normalise_host(host: str) -> str:
    """Lower-case, without a port; IPv6 literals keep their brackets."""
    host = host.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        return host[: end + 1] if end != -1 else host
    if host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host


def path_of(target: str) -> str:
    return target.split("?", 1)[0]


def _key(scheme: str, host: str, method: str, target: str) -> tuple[str, str, str, str]:
    return (scheme.lower(), normalise_host(host), method, path_of(target))


class Matcher:
    """An index over recorded exchanges (anything with scheme, host, method, target).

    `Matcher(exchanges).match(request)` returns the index of the winning
    exchange in the given order, or None.
    """

    def __init__(self, exchanges: Iterable):
        self._index: dict[tuple[str, str, str, str], list[tuple[int, str]]] = {}
        for i, x in enumerate(exchanges):
            key = _key(_field(x, "scheme"), _field(x, "host"), _field(x, "method"),
                       _field(x, "target"))
            self._index.setdefault(key, []).append((i, _field(x, "target")))

    def match(self, request: Request) -> int | None:
        candidates = self._index.get(
            _key(request.scheme, request.host, request.method, request.target))
        if not candidates:
            return None
        return best(candidates, request.target)


def score(recorded: str, target: str) -> int:
    """Common-prefix length in UTF-8 bytes, plus one for an identical target."""
    a, b = _bytes(recorded), _bytes(target)
    return len(os.path.commonprefix([a, b])) + (a == b)


def best(candidates: Sequence[tuple[int, str]], target: str) -> int:
    """The index of the best-scoring (index, target) candidate; the earliest on ties."""
    winner, top = candidates[0][0], -1
    for i, recorded in sorted(candidates):
        n = score(recorded, target)
        if n > top:
            winner, top = i, n
    return winner


def _bytes(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


def match(exchanges: Iterable, request: Request) -> int | None:
    """One-off matching (builds the index each call; servers keep a Matcher)."""
    return Matcher(exchanges).match(request)


def _field(x, name: str):
    return x[name] if isinstance(x, dict) else getattr(x, name)
