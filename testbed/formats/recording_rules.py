"""What a recording's manifest must hold beyond its schema (pure; no I/O).

A recording may come from someone else, and replay hands its host names to
Chromium's resolver rules and a certificate, its IPs to `ip addr`/`ip route`
in the replay namespaces and its headers to nginx and h3server. So, after
the schema (schemas/recording.schema.json):

- host names are DNS names: lower-case labels of letters, digits, `-` and
  `_` (no label starts or ends with `-`), at most 63 characters a label and
  253 in all; international names as A-labels (`xn--...`, which must decode);
  or an IPv4 literal;
- each origin (scheme, host, port) is listed once, and every exchange's
  scheme, host, port and IP are one of the origins;
- IPs are IPv4 unicast addresses outside the testbed's own ranges
  (testbed.host.topology.OWN_NETWORKS), loopback, link-local, multicast,
  "this network" (0/8) and the reserved 240/4;
- one scheme per IP:port, counting the listeners every replay opens (443
  with TLS and, for the TCP stack, 80 without on every recorded IP);
- header names are lower-case tokens (RFC 9110) and no header value holds
  CR, LF or NUL (the schema has these as patterns too, for h3server);
- responses as the recorder normalises them (testbed.record.normalise): no
  transfer-encoding, alt-svc or alternate-protocol, and content-length, if
  there, once and equal to the body's size (where HTTP gives a length);
- no response header a replay server takes as a directive (SERVER_DIRECTIVES):
  nginx acts on `x-accel-*` from its upstream (a rate, a redirect, buffering)
  and h3server passes them through, so one would steer the TCP stack alone;
- no body where HTTP has none: 1xx, 204, 304 and responses to HEAD;
- each request (scheme, host, port, method, target) once: a replay serves one
  response per request, so a second one (a copy, or another response) is
  refused rather than silently never served;
- `requests` and `bytes` are the exchanges' number and body sizes' sum.

`check(data)` raises RuleError(key, message) for the first violation; the
loader prefixes the manifest's path.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from testbed.host.topology import OWN_NETWORKS

_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_CONTROL = re.compile(r"[\r\n\x00]")
NOT_SERVABLE = (
    ipaddress.IPv4Network("0.0.0.0/8"),
    ipaddress.IPv4Network("127.0.0.0/8"),
    ipaddress.IPv4Network("169.254.0.0/16"),
    ipaddress.IPv4Network("224.0.0.0/4"),
    ipaddress.IPv4Network("240.0.0.0/4"),
)
BODILESS_STATUSES = "1xx, 204 and 304"
REMOVED_HEADERS = frozenset({"transfer-encoding", "alt-svc", "alternate-protocol"})
"""Response headers a recording never holds: the body is stored de-chunked, and a
replayed page must not be told to switch protocol."""
SERVER_DIRECTIVES = ("x-accel-",)
"""Prefixes of response headers nginx obeys from uWSGI (X-Accel-Redirect, -Expires,
-Limit-Rate, -Buffering, -Charset and any later one). The others uwsgi_ignore_headers
names (Expires, Cache-Control, Set-Cookie, Vary) steer only a cache, which the replay
has none of, so they are served as recorded; nginx.conf.j2 ignores X-Accel-* too."""
DEFAULT_LISTENERS = (("https", 443), ("http", 80))
"""Every replay listens on these ports of every recorded IP (testbed.replay.nginx)."""


class RuleError(ValueError):
    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"key {key}: {message}")
        self.key = key


def check(data: dict[str, Any]) -> None:
    """The rules above, on a manifest that passed the schema."""
    origins: dict[tuple[str, str, int], str] = {}
    for i, o in enumerate(data["origins"]):
        _check_host(f"origins/{i}/host", o["host"])
        _check_ip(f"origins/{i}/ip", o["ip"])
        key = (o["scheme"], o["host"], o["port"])
        if key in origins:
            raise RuleError(f"origins/{i}/host", f"{_origin(key)} is listed twice "
                                                 f"(IPs {origins[key]} and {o['ip']}); "
                                                 "expected each origin once, with one IP")
        origins[key] = o["ip"]
    _check_schemes(origins)
    requests: dict[tuple[Any, ...], int] = {}
    for i, x in enumerate(data["exchanges"]):
        key = (x["scheme"], x["host"], x["port"])
        if key not in origins:
            raise RuleError(f"exchanges/{i}/host", f"{_origin(key)} is not one of the origins")
        if x["ip"] != origins[key]:
            raise RuleError(f"exchanges/{i}/ip", f"expected {origins[key]}, the IP of origin "
                                                 f"{_origin(key)}, got {x['ip']!r}")
        _check_request(i, x)
        _check_once(i, x, requests, data["exchanges"])
        for part in ("request_headers", "response_headers"):
            _check_headers(f"exchanges/{i}/{part}", x[part])
        _check_response_headers(i, x)
        _check_body(i, x)
        if "seen_in" in x and x["seen_in"] > data.get("loads", 1):
            raise RuleError(f"exchanges/{i}/seen_in", f"expected at most loads "
                                                      f"({data['loads']}), got {x['seen_in']}")
    _check_totals(data)


def _origin(key: tuple[str, str, int]) -> str:
    return f"{key[0]}://{key[1]}:{key[2]}"


def _check_host(key: str, host: str) -> None:
    if _ipv4(host) is not None:
        _check_ip(key, host)
        return
    expected = "a DNS name (lower-case labels of a-z, 0-9, '-', '_'; IDN as A-labels) or an IPv4 address"
    labels = host.split(".")
    if len(host) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        raise RuleError(key, f"expected {expected}, got {short(host)}")
    if labels[-1].isdigit():
        raise RuleError(key, f"expected {expected} (a name's last label is not all digits), "
                             f"got {short(host)}")
    for label in labels:
        if label.startswith("xn--"):
            try:
                label.encode("ascii").decode("idna")
            except UnicodeError:
                raise RuleError(key, f"expected {expected}: {label!r} is not a valid A-label") \
                    from None


def _ipv4(text: str) -> ipaddress.IPv4Address | None:
    try:
        return ipaddress.IPv4Address(text)
    except ValueError:
        return None


def _check_ip(key: str, text: str) -> None:
    ip = _ipv4(text)
    if ip is None:
        raise RuleError(key, f"expected an IPv4 address, got {short(text)}")
    for net in (*OWN_NETWORKS, *NOT_SERVABLE):
        if ip in net:
            raise RuleError(key, f"expected a unicast address a replay can serve, got {text} "
                                 f"(in {net}, {_why(net)})")


def _why(net: ipaddress.IPv4Network) -> str:
    if net in OWN_NETWORKS:
        return "which the testbed uses itself"
    return {0: "this network", 127: "loopback", 169: "link-local", 224: "multicast",
            240: "reserved"}[int(net.network_address) >> 24]


def _check_schemes(origins: dict[tuple[str, str, int], str]) -> None:
    scheme_at: dict[tuple[str, int], str] = {}
    for ip in dict.fromkeys(origins.values()):
        for scheme, port in DEFAULT_LISTENERS:
            scheme_at[(ip, port)] = scheme
    for i, ((scheme, host, port), ip) in enumerate(origins.items()):
        other = scheme_at.get((ip, port))
        if other is not None and other != scheme:
            implied = f" (a replay serves {other} on port {port} of every IP)" \
                if (other, port) in DEFAULT_LISTENERS else ""
            raise RuleError(f"origins/{i}/scheme",
                            f"{ip}:{port} is recorded as {other} and as {scheme}; expected one "
                            f"scheme per IP:port{implied}")
        scheme_at[(ip, port)] = scheme


def _check_request(i: int, x: dict[str, Any]) -> None:
    # The schema has these as patterns, but a pattern's `$` lets a final newline through.
    if not _TOKEN.fullmatch(x["method"]):
        raise RuleError(f"exchanges/{i}/method", f"expected an HTTP method (a token), "
                                                 f"got {short(x['method'])}")
    if _CONTROL.search(x["target"]):
        raise RuleError(f"exchanges/{i}/target", f"expected no CR, LF or NUL in a request "
                                                 f"target, got {short(x['target'])}")


def _check_headers(key: str, headers: list[Any]) -> None:
    for j, (name, value) in enumerate(headers):
        if not _TOKEN.fullmatch(name) or name != name.lower():
            raise RuleError(f"{key}/{j}/0", f"expected a header name: a lower-case token "
                                            f"(RFC 9110), got {short(name)}")
        if _CONTROL.search(value):
            raise RuleError(f"{key}/{j}/1", f"expected a header value without CR, LF or NUL, "
                                            f"got {short(value)}")


def _check_once(i: int, x: dict[str, Any], seen: dict[tuple[Any, ...], int],
                exchanges: list[Any]) -> None:
    key = (x["scheme"], x["host"], x["port"], x["method"], x["target"])
    j = seen.setdefault(key, i)
    if j == i:
        return
    what = "a copy of" if exchanges[j] == x else "another response to the request of"
    raise RuleError(f"exchanges/{i}", f"{what} exchanges/{j} ({x['method']} "
                                      f"{_origin(key[:3])}{short(x['target'])[1:-1]}); "
                                      "expected each request once (a replay serves one "
                                      "response per request)")


def _check_response_headers(i: int, x: dict[str, Any]) -> None:
    key = f"exchanges/{i}/response_headers"
    sized = x["status"] >= 200 and x["status"] not in (204, 304) and x["method"] != "HEAD"
    length = str(x.get("body_size") or 0)
    seen_length = False
    for j, (name, value) in enumerate(x["response_headers"]):
        if name in REMOVED_HEADERS:
            raise RuleError(f"{key}/{j}/0", f"{name}: expected no "
                                            f"{', '.join(sorted(REMOVED_HEADERS))} (a "
                                            "recording stores responses without them)")
        if name.startswith(SERVER_DIRECTIVES):
            raise RuleError(f"{key}/{j}/0", f"{name}: expected no x-accel-* header (nginx "
                                            "would obey it on the TCP stack alone)")
        if name != "content-length":
            continue
        if seen_length:
            raise RuleError(f"{key}/{j}/0", "content-length a second time; expected it once")
        seen_length = True
        if sized and value != length:
            raise RuleError(f"{key}/{j}/1", f"content-length {short(value)}; expected "
                                            f"{length}, the body's size")


def _check_totals(data: dict[str, Any]) -> None:
    exchanges = data["exchanges"]
    if data["requests"] != len(exchanges):
        raise RuleError("requests", f"{data['requests']}; expected {len(exchanges)}, the "
                                    "number of exchanges")
    total = sum(x.get("body_size") or 0 for x in exchanges)
    if data["bytes"] != total:
        raise RuleError("bytes", f"{data['bytes']}; expected {total}, the sum of the "
                                 "exchanges' body_size")


def _check_body(i: int, x: dict[str, Any]) -> None:
    size = x.get("body_size")
    if x["body"] is None:
        if size:
            raise RuleError(f"exchanges/{i}/body_size", f"{size}, but the exchange has no body")
        return
    if not _SHA256.fullmatch(x["body"]):
        raise RuleError(f"exchanges/{i}/body", f"expected null or 64 lower-case hex digits "
                                               f"(a file in bodies/), got {short(x['body'])}")
    if size is None:
        raise RuleError(f"exchanges/{i}/body_size", "missing (required with a body)")
    status = x["status"]
    if status < 200 or status in (204, 304):
        raise RuleError(f"exchanges/{i}/body", f"a {status} response has no body in HTTP "
                                               f"({BODILESS_STATUSES} never do); expected null")
    if x["method"] == "HEAD":
        raise RuleError(f"exchanges/{i}/body", "a response to HEAD has no body; expected null")


def short(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")
