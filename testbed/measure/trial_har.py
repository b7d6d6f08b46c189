"""What a trial's HAR proves: the protocol of every request, per iteration.

Browsertime writes one HAR for all iterations of a block: one page per
iteration (titled "<url> run <N>") and entries pointing to their page. Chromium
reports each response's protocol (`h2`, `h3`, `http/1.1`; older builds
`http/2+quic/43`), which the HAR keeps as `response.httpVersion`.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from urllib.parse import urlsplit

_RUN = re.compile(r" run (\d+)$")


def normalise(version: str) -> str:
    """One name per protocol: h3, h2, http/1.1, http/1.0, or the value lower-cased."""
    v = (version or "").strip().lower()
    if v in ("h3", "http/3", "http/3.0") or v.startswith(("h3-", "http/2+quic")) or "quic" in v:
        return "h3"
    if v in ("h2", "http/2", "http/2.0"):
        return "h2"
    return v or "unknown"


def expected_protocol(stack: str) -> str:
    """The protocol every request of a trial over `stack` must use."""
    return {"quic": "h3", "tcp": "h2"}[stack]


def page_ids(har: dict) -> dict[int, str]:
    """Iteration number -> HAR page id (from the page titles Browsertime writes for
    Chromium). Firefox's HAR (WebDriver BiDi) titles its pages with their URL: there
    the pages are taken in their order for iterations 1, 2, 3... (an iteration that
    left no page would shift the later ones: its trial has failed anyway)."""
    out: dict[int, str] = {}
    pages = har.get("log", {}).get("pages", [])
    for page in pages:
        m = _RUN.search(page.get("title", ""))
        if m:
            out[int(m.group(1))] = page["id"]
    if not out:
        for i, page in enumerate(pages):
            if "id" in page:
                out[i + 1] = page["id"]
    return out


def iteration(har: dict, index: int) -> dict | None:
    """The HAR of one iteration (its page and entries), or None if it has no page."""
    page_id = page_ids(har).get(index)
    if page_id is None:
        return None
    log = har.get("log", {})
    return {"log": {
        **{k: v for k, v in log.items() if k not in ("pages", "entries")},
        "pages": [p for p in log.get("pages", []) if p.get("id") == page_id],
        "entries": [e for e in log.get("entries", []) if e.get("pageref") == page_id],
    }}


def from_browser_cache(entry: dict) -> bool:
    """The browser answered the entry from its own cache: nothing went on the wire.

    Chromium's HAR (chrome-har) leaves such entries out, or marks them `_fromCache`.
    Firefox's (WebDriver BiDi, ff-test-bidi-har-export) keeps them unmarked, as
    BiDi reports them (Mozilla bug 1806802): e.g. an image its in-memory image cache
    served a second time, with response.httpVersion "http/1.1", only a Content-Length
    header, no header or body byte received and every timing 0. A response that
    came over the network received its headers (headersSize > 0; Chromium's -1 over
    HTTP/2 and HTTP/3), so `headersSize == 0 and bodySize == 0 and time == 0` is
    the cache's."""
    if entry.get("_fromCache"):
        return True
    response = entry.get("response", {})
    return (response.get("headersSize") == 0 and response.get("bodySize") == 0
            and entry.get("time") == 0)


def protocols(har: dict) -> dict[str, int]:
    """Protocol -> number of requests, over the HAR's entries (data: and blob: URLs and
    what the browser answered from its own cache excluded)."""
    counts: Counter[str] = Counter()
    for entry in har.get("log", {}).get("entries", []):
        url = entry.get("request", {}).get("url", "")
        if url.startswith(("data:", "blob:")) or from_browser_cache(entry):
            continue
        counts[normalise(entry.get("response", {}).get("httpVersion", ""))] += 1
    return dict(sorted(counts.items()))


def requests(har: dict) -> int:
    return sum(protocols(har).values())


def _ms(entry: dict, key: str) -> float:
    """A HAR timing in ms; -1 (not applicable), missing or non-numbers count as 0."""
    v = entry.get("timings", {}).get(key)
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and v > 0 else 0.0


def in_flight(entry: dict) -> tuple[float, float] | None:
    """When the request was on the wire: (sent, done) in ms since the epoch, from the
    start of sending (after any queueing, DNS, connect and TLS) to the last byte of
    the response; None when the entry has no usable start or total time."""
    try:
        started = dt.datetime.fromisoformat(entry["startedDateTime"])
        total = float(entry["time"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    if started.tzinfo is None or not total >= 0:
        return None
    t0 = started.timestamp() * 1000.0
    # ssl is part of connect (HAR 1.2), so it is not added again
    sent = t0 + _ms(entry, "blocked") + _ms(entry, "dns") + _ms(entry, "connect")
    done = max(sent, t0 + total)
    return sent, done


def max_in_flight(har: dict) -> dict[str, int]:
    """Host -> the most requests to it on the wire at the same time (see in_flight;
    a request ending when another is sent does not overlap it). data: and blob: URLs
    and entries without timings are left out."""
    events: dict[str, list[tuple[float, int]]] = {}
    for entry in har.get("log", {}).get("entries", []):
        url = entry.get("request", {}).get("url", "")
        if not isinstance(url, str) or url.startswith(("data:", "blob:")):
            continue
        try:
            host = (urlsplit(url).hostname or "").lower()
        except ValueError:
            continue
        span = in_flight(entry)
        if not host or span is None:
            continue
        # ends sort before starts at the same instant: -1 < +1
        events.setdefault(host, []).extend([(span[0], 1), (span[1], -1)])
    peaks: dict[str, int] = {}
    for host, evs in events.items():
        now = peak = 0
        for _, step in sorted(evs):
            now += step
            peak = max(peak, now)
        peaks[host] = peak
    return dict(sorted(peaks.items()))
