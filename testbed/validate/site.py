"""The synthetic file-download site the validations replay, and recordings made
from scratch (the tests make theirs with exchange and write too).

A site is one page origin and file origins, each on its own IP, serving random,
incompressible bytes with CORS and Resource Timing allowed and no caching. The
browser loads the page, then fetches files from it with FETCH_JS, which times
a download by Resource Timing (responseEnd - requestStart: the handshake is
not in it) and names the protocol that carried it.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from testbed.formats import recording as rec
from testbed.host.chromium import CDPError

PROTOCOL = {"tcp": "h2", "quic": "h3"}
"""The protocol Resource Timing names for a download over each stack."""
NETWORK_ERRORS = ("ERR_NETWORK_CHANGED", "Failed to fetch")
"""What Chromium reports while Mahimahi's interfaces settle: a download (or a page)
it aborted for that may be done again."""
SETTLE_S = 3.0
"""How long a new browser inside Mahimahi's shells is left before downloads count."""
SEED = 2019
"""Of the random file bodies: the same bytes in every run."""
NO_STORE = (("cache-control", "no-store"),)
FILE_HEADERS = (("access-control-allow-origin", "*"), ("timing-allow-origin", "*"), *NO_STORE)

FETCH_JS = """(async () => {
  const url = %s;
  const r = await fetch(url, {cache: "no-store"});
  const n = (await r.arrayBuffer()).byteLength;
  let e;
  for (let i = 0; i < 100 && !e; i++) {
    e = performance.getEntriesByName(url)[0];
    if (!e) await new Promise(ok => setTimeout(ok, 10));
  }
  return {status: r.status, bytes: n, protocol: e ? e.nextHopProtocol : null,
          ms: e ? e.responseEnd - e.requestStart : null};
})()"""


ALT_SVC_JS = """(async () => {
  const r = await fetch(location.href, {cache: "no-store"});
  await r.arrayBuffer();
  return {status: r.status, altSvc: r.headers.get("alt-svc")};
})()"""
"""The page's own origin fetched again from the page (same origin: every response
header is readable) and the alt-svc it answered with, as the browser received it."""


@dataclass(frozen=True)
class Fetched:
    """One download as the page saw it."""

    status: int | None
    bytes: int | None
    """Status and size as fetch() saw them; None if the page reported nothing."""
    protocol: str | None
    """Resource Timing's nextHopProtocol (h2, h3); None if it had no entry."""
    ms: float | None
    """responseEnd - requestStart; None if Resource Timing had no entry."""


def fetch(page, url: str, timeout: float) -> Fetched:
    """Download url from the page (a testbed.host.chromium.Page) and time it."""
    got: dict[str, Any] = page.evaluate(FETCH_JS % json.dumps(url), timeout=timeout) or {}
    return Fetched(status=got.get("status"), bytes=got.get("bytes"),
                   protocol=got.get("protocol"), ms=got.get("ms"))


def alt_svc(page, timeout: float) -> str | None:
    """The alt-svc header of the page origin's answer as the page received it (None:
    none); CDPError when the fetch fails."""
    got = page.evaluate(ALT_SVC_JS, timeout=timeout) or {}
    if got.get("status") != 200:
        raise CDPError(f"fetching the page again for its alt-svc: status {got.get('status')}")
    return got.get("altSvc")


def network_changed(e: CDPError) -> bool:
    """Whether Chromium gave up on a load or download because the network changed."""
    return any(x in str(e) for x in NETWORK_ERRORS)


@dataclass(frozen=True)
class File:
    """One file origin: https://host/path on its own IP."""

    host: str
    ip: str
    path: str
    body: bytes


def make(out_dir: Path, name: str, page_host: str, page_ip: str, files: Iterable[File]) -> Path:
    """A recording of the site: the page at https://page_host/ and every file."""
    page = (f'<!doctype html><title>{name}</title><link rel="icon" href="data:,">'
            f"<p>{name}").encode()
    exchanges = [exchange(f"https://{page_host}/", page_ip, page, headers=NO_STORE)]
    exchanges += [exchange(f"https://{f.host}{f.path}", f.ip, f.body, "application/octet-stream",
                           headers=FILE_HEADERS) for f in files]
    return write(out_dir, name, f"https://{page_host}/", exchanges)


def exchange(url: str, ip: str, body: bytes, content_type: str = "text/html", *,
             status: int = 200, method: str = "GET",
             headers: tuple[tuple[str, str], ...] = ()) -> tuple[dict, bytes]:
    """One (exchange dict, body) pair for testbed.formats.recording.write."""
    u = urlsplit(url)
    target = (u.path or "/") + (f"?{u.query}" if u.query else "")
    port = u.port or (443 if u.scheme == "https" else 80)
    return ({
        "scheme": u.scheme, "host": u.hostname, "port": port, "ip": ip, "method": method,
        "target": target,
        "request_headers": [["user-agent", "testbed-synthetic"]],
        "status": status,
        "response_headers": [["content-type", content_type],
                             ["content-length", str(len(body))],
                             *[[k, v] for k, v in headers]],
    }, body)


def write(out_dir: Path, name: str, url: str, exchanges: list[tuple[dict, bytes]]) -> Path:
    meta = {"name": name, "url": url, "loads": 1,
            "recorded_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
    return rec.write(Path(out_dir), meta, exchanges)
