"""Whether a trial obtained what the recording's page needs (docs/completeness.md).

A replayed page asks for the same URLs whatever the setting, so a trial whose HAR
lacks some of them describes less of the page than one that has them all: its
request count, bytes and visual metrics are not comparable. The judge compares a
trial's HAR entries with the recording's URLs, split in two:

- before the load event: what the page asks for while loading (its load event
  waits for them); one missing means the load itself was broken;
- after the load event: what the page's script asks for once loaded (the corpus's
  `more()`); one missing means the measurement window ended before the page's own
  work did (docs/completeness.md: Chromium's HAR leaves out every request still in
  flight when the window ends).

Pure: data in, data out. `expected_from_recording` builds the two sets from the
recording's (url, status) pairs and the URLs a complete load asked for before its
load event (`requested_before_onload` reads them from that load's HAR); `judge`
gives the verdict on one trial's HAR (one iteration, see
testbed.measure.trial_har.iteration).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from testbed.measure import trial_har
from testbed.replay.matching import Matcher, Request

if TYPE_CHECKING:
    from testbed.formats.recording import Recording

Headers = Sequence[tuple[str, str]]

NETWORK = "network"
"""How a URL was obtained: over the network (the default)."""
HOWS = (NETWORK, "memory cache", "disk cache", "cache", "pushed", "early hints",
        "prefetch cache", "service worker")
"""Every value of Obtained.how; the others are the browser answering without the
network (a cache hit the recording allows counts as obtained)."""


@dataclass(frozen=True)
class Expected:
    """The recording's URLs, by when the page asks for them."""

    before_onload: frozenset[str]
    after_onload: frozenset[str]
    cacheable: frozenset[str] = frozenset()
    """Those a browser may keep in its cache (the recorded response lets it): on a
    repeat visit the page may obtain them without a HAR entry (Chromium's HAR leaves
    cache hits out)."""


@dataclass(frozen=True)
class Obtained:
    """How and when a trial obtained one URL (its first HAR entry)."""

    how: str
    """One of HOWS."""
    entries: int
    """HAR entries for this URL: more than 1 is a duplicate request, counted once."""
    start_ms: float | None
    """When it was asked for, ms after the page's start (None: unknown)."""
    end_ms: float | None
    """When its response ended, ms after the page's start (None: unknown)."""
    preload: bool = False
    """Asked for by a <link rel=preload>."""


@dataclass(frozen=True)
class Verdict:
    missing_before_onload: tuple[str, ...]
    """Recorded URLs the page asks for before its load event, not in the trial."""
    missing_after_onload: tuple[str, ...]
    """Recorded URLs the page asks for after its load event, not in the trial."""
    obtained: Mapping[str, Obtained]
    """Every URL the trial holds (recorded or not) and how it was obtained."""
    onload_ms: float | None = None
    """The trial's load event, ms after the page's start (None: unknown)."""
    split: bool = True
    """The expected URLs were split by the load event (a complete load's HAR said which
    come before it); False: every needed URL is in `missing_after_onload`, unsplit."""
    moved_after_onload: tuple[str, ...] = ()
    """Obtained, but asked for after this trial's load event though a complete load
    asks for them before its own: the page's work its load event did not wait for
    (the corpus's slides when the feed API answers after the load event)."""

    @property
    def complete(self) -> bool:
        """Every recorded URL was obtained: the trial may be kept (the rule)."""
        return not self.missing_before_onload and not self.missing_after_onload

    @property
    def after_onload(self) -> tuple[str, ...]:
        """The URLs this trial asked for after its own load event, by start time."""
        if self.onload_ms is None:
            return ()
        late = [(o.start_ms, u) for u, o in self.obtained.items()
                if o.start_ms is not None and o.start_ms > self.onload_ms]
        return tuple(u for _, u in sorted(late))

    def reason(self, show: int = 3) -> str | None:
        """Why the trial fails (None: it is complete), naming up to `show` URLs of each kind."""
        parts = []
        for what, urls in (("before the load event", self.missing_before_onload),
                           ("after the load event" if self.split else "",
                            self.missing_after_onload)):
            if urls:
                named = ", ".join(urls[:show]) + (f" and {len(urls) - show} more"
                                                  if len(urls) > show else "")
                asks = f"the page asks for {what} " if what else "the page needs "
                parts.append(f"{len(urls)} recorded resource(s) {asks}not obtained: {named}")
        if not parts:
            return None
        if not self.missing_before_onload and self.split:
            parts.append("the measurement window ended before the page's own work did")
        return "incomplete: " + "; ".join(parts)


def url_key(url: str) -> str:
    """The URL as the judge compares it: without a fragment (never sent)."""
    return url.split("#", 1)[0]


def expected_from_recording(exchanges: Iterable[tuple[str, int, Headers]],
                            before_onload: Iterable[str]) -> Expected:
    """The two sets from the recording's (url, status, response headers): an error response
    (status >= 400: the corpus's 404 banner and polyfills) is not something the page
    needs, and Chromium's HAR leaves out a script or image whose load failed. A
    recorded URL is "before" if it is in `before_onload` (the URLs a complete load
    asked for before its load event), "after" otherwise."""
    needed: set[str] = set()
    keep: set[str] = set()
    for url, status, headers in exchanges:
        if status < 400:
            needed.add(url_key(url))
            if status == 200 and cacheable(headers):
                keep.add(url_key(url))
    before = needed & {url_key(u) for u in before_onload}
    return Expected(before_onload=frozenset(before), after_onload=frozenset(needed - before),
                    cacheable=frozenset(keep))


def cacheable(headers: Headers) -> bool:
    """A browser may reuse this response later: no `no-store` or `no-cache`, and a
    freshness lifetime (max-age > 0, Expires) or a validator (Last-Modified, ETag)."""
    fields = {name.lower(): value for name, value in headers}
    control = {d.strip().lower() for d in fields.get("cache-control", "").split(",")}
    if {"no-store", "no-cache"} & control or "max-age=0" in control:
        return False
    return any(d.startswith("max-age=") for d in control) or any(
        k in fields for k in ("expires", "last-modified", "etag"))


@dataclass(frozen=True)
class Needed:
    """What a replayed page needs, from its recording alone (no trial): the URLs the
    judge expects in a trial's HAR and those the measurement window waits for."""

    har: frozenset[str]
    """Recorded URLs with a status below 400 the top document asks for (its frames'
    resources left out: chrome-har has no entry for a cross-origin frame's loads) and
    not the page itself."""
    window: tuple[str, ...]
    """Of those, the ones with an entry of their own in the top document's Resource
    Timing, sorted: hooks/complete.js waits for each of them. Left out: a redirect's
    target (reported under the URL that redirected) and what a cross-origin stylesheet
    fetched in no-cors mode asks for (not reported at all)."""
    cacheable: frozenset[str]
    bytes: int
    """Recorded body bytes of `har`: what the window's limit is computed from."""
    known: bool = True
    """False for a recording of several loads that does not say which load asked for
    what (made before the recorder counted `seen_in`): a URL one load asked for may be
    one the site picks at random, so nothing is expected and the window waits for
    nothing (the quiet and the limit only)."""

    def expected(self) -> Expected:
        """The judge's sets: with no split by load event known, every needed URL is
        counted "after" (a missing one means the window ended early, or the load broke)."""
        return Expected(before_onload=frozenset(), after_onload=self.har,
                        cacheable=self.cacheable)


FRAME_DESTS = ("iframe", "frame", "embed", "object")


def needed(recording: Recording) -> Needed:
    """The URLs the top document of `recording` needs. A frame's document (its request's
    `sec-fetch-dest`) and everything whose referer is a frame or a frame's resource (or,
    for a cross-origin frame whose referer policy sends only the origin, that origin)
    belong to the frame; a recorded redirect's target is obtained under the redirect's
    own URL in Resource Timing; `/favicon.ico` is the browser's own request (no page
    asks for it, and neither Resource Timing nor chrome-har reports it)."""
    if recording.loads > 1 and any(x.seen_in is None for x in recording.exchanges):
        return Needed(har=frozenset(), window=(), cacheable=frozenset(), bytes=0, known=False)
    rows = []
    for x, (url, status, headers) in zip(recording.exchanges, recorded_exchanges(recording),
                                         strict=True):
        if x.seen_in is not None and x.seen_in < recording.loads:
            continue  # a resource the site picks at random: not every load asks for it
        fields = {k.lower(): v for k, v in x.request_headers}
        rows.append((url_key(url), status, headers, x, fields))
    page = url_key(recording.url)
    page_origin = _origin(page)
    frame = {u for u, _, _, _, f in rows if f.get("sec-fetch-dest", "") in FRAME_DESTS}
    frame_origins = {_origin(u) for u in frame} - {page_origin}
    grew = True
    while grew:
        grew = False
        for u, _, _, _, f in rows:
            ref = url_key(f.get("referer", ""))
            if u not in frame and ref and (ref in frame or ref.rstrip("/") in frame_origins):
                frame.add(u)
                grew = True
    # Resource Timing leaves out what a cross-origin stylesheet fetched in no-cors mode
    # asks for (its fonts, its images): the window cannot wait for those (the judge
    # still expects them in the HAR). Their referer is the stylesheet's URL or, under
    # the default referrer policy, its origin.
    documents = {_origin(u) for u, status, _, _, f in rows
                 if f.get("sec-fetch-dest") == "document" and status < 300} or {page_origin}
    sheets = {u for u, _, _, _, f in rows if f.get("sec-fetch-dest") == "style"
              and f.get("sec-fetch-mode", "no-cors") == "no-cors" and _origin(u) not in documents}
    sheet_origins = {_origin(u) for u in sheets}
    hidden: set[str] = set()
    grew = True
    while grew:
        grew = False
        for u, _, _, _, f in rows:
            ref = url_key(f.get("referer", ""))
            if u not in hidden and ref and (ref in sheets or ref in hidden
                                            or ref.rstrip("/") in sheet_origins):
                hidden.add(u)
                grew = True
    targets = set()
    for u, status, headers, _, _ in rows:
        if 300 <= status < 400:
            location = next((v for k, v in headers if k.lower() == "location"), None)
            if location:
                targets.add(url_key(urljoin(u, location)))
    har, keep, size = set(), set(), 0
    for u, status, headers, x, f in rows:
        if (status >= 400 or u in frame or u == page or f.get("sec-fetch-dest") == "document"
                or urlsplit(u).path == "/favicon.ico"):
            continue
        if x.method.upper() != "GET":
            continue
        har.add(u)
        size += x.body_size
        if status == 200 and cacheable(headers):
            keep.add(u)
    return Needed(har=frozenset(har), window=tuple(sorted(har - targets - hidden)),
                  cacheable=frozenset(keep), bytes=size)


def answered_by(recording: Recording) -> Callable[[str, str], str]:
    """(method, requested URL) -> the URL of the recorded exchange the replay answers it
    with (testbed.replay.matching, the servers' own rule: a query string the page
    makes anew each visit is answered by the closest recorded one), or the URL itself
    when nothing answers it (a replay miss)."""
    urls = [u for u, _, _ in recorded_exchanges(recording)]
    matcher = Matcher(recording.exchanges)

    def answer(method: str, url: str) -> str:
        parts = urlsplit(url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        i = matcher.match(Request(parts.scheme, parts.netloc, method, target))
        return url_key(urls[i]) if i is not None else url
    return answer


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def window_limit_ms(needed_bytes: int, downlink_mbit: float | None, rtt_ms: float,
                    floor_ms: int) -> int:
    """L: how long after the load event the window waits at most for the needed URLs:
    max(floor, 2 x bytes / downlink + 10 x RTT) (docs/completeness.md: after the load
    event TCP received the post-load images at about half the link's rate). Without a
    fixed downlink (a trace, or none) only the floor and the RTTs count."""
    transfer = (2 * needed_bytes * 8 / (downlink_mbit * 1e6) * 1000
                if downlink_mbit else 0.0)
    return int(max(floor_ms, transfer + 10 * rtt_ms))


def recorded_exchanges(recording: Recording) -> list[tuple[str, int, Headers]]:
    """(url, status, response headers) of every exchange a recording holds."""
    out: list[tuple[str, int, Headers]] = []
    for x in recording.exchanges:
        default = {"https": 443, "http": 80}[x.scheme]
        port = "" if x.port == default else f":{x.port}"
        out.append((f"{x.scheme}://{x.host}{port}{x.target}", x.status, x.response_headers))
    return out


def _entries(har: Mapping[str, Any]) -> list[dict]:
    entries = har.get("log", {}).get("entries", [])
    return [e for e in entries if isinstance(e, dict)]


def _page_start_ms(har: Mapping[str, Any]) -> float | None:
    pages = har.get("log", {}).get("pages", [])
    return _epoch_ms(pages[0].get("startedDateTime")) if pages else None


def onload_ms(har: Mapping[str, Any]) -> float | None:
    """The load event of the HAR's (first) page, ms after its start; None if unknown."""
    pages = har.get("log", {}).get("pages", [])
    value = pages[0].get("pageTimings", {}).get("onLoad") if pages else None
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None


def _epoch_ms(text: Any) -> float | None:
    try:
        started = dt.datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None
    return started.timestamp() * 1000.0 if started.tzinfo is not None else None


def how(entry: dict) -> str:
    """How the browser obtained an entry's response (one of HOWS)."""
    response = entry.get("response", {})
    cached = entry.get("_fromCache")
    if cached in ("memory", "disk"):
        return f"{cached} cache"
    for key, name in (("fromServiceWorker", "service worker"), ("fromEarlyHints", "early hints"),
                      ("fromPrefetchCache", "prefetch cache"), ("fromDiskCache", "disk cache")):
        if response.get(key) is True:
            return name
    if entry.get("_was_pushed"):
        return "pushed"
    if entry.get("cache", {}).get("beforeRequest") is not None or trial_har.from_browser_cache(entry):
        return "cache"
    return NETWORK


def obtained(har: Mapping[str, Any],
             answer: Callable[[str, str], str] | None = None) -> dict[str, Obtained]:
    """URL -> how and when the HAR's entries obtained it (data: and blob: left out;
    an entry without a response is not obtained). With `answer` (answered_by), each
    URL is the recorded one that answered the request."""
    t0 = _page_start_ms(har)
    seen: dict[str, list[dict]] = {}
    for entry in _entries(har):
        url = entry.get("request", {}).get("url", "")
        if not isinstance(url, str) or not url or url.startswith(("data:", "blob:")):
            continue
        if not entry.get("response"):
            continue
        key = url_key(url)
        if answer is not None:
            method = entry.get("request", {}).get("method", "GET")
            key = answer(method if isinstance(method, str) else "GET", key)
        seen.setdefault(key, []).append(entry)
    out = {}
    for url, entries in seen.items():
        first = min(entries, key=lambda e: _epoch_ms(e.get("startedDateTime")) or 0.0)
        start = _epoch_ms(first.get("startedDateTime"))
        start_ms = start - t0 if start is not None and t0 is not None else None
        total = first.get("time")
        end_ms = (start_ms + float(total) if start_ms is not None
                  and isinstance(total, int | float) and total >= 0 else None)
        out[url] = Obtained(how=how(first), entries=len(entries), start_ms=start_ms,
                            end_ms=end_ms,
                            preload=bool(first.get("request", {}).get("_isLinkPreload")))
    return out


def requested_before_onload(har: Mapping[str, Any]) -> frozenset[str]:
    """The URLs a load asked for before its load event (a complete load's HAR: the
    "before" set of expected_from_recording)."""
    load = onload_ms(har)
    return frozenset(u for u, o in obtained(har).items()
                     if load is not None and o.start_ms is not None and o.start_ms <= load)


def judge(expected: Expected, har: Mapping[str, Any], repeat_visit: bool = False,
          answer: Callable[[str, str], str] | None = None,
          load_ms: float | None = None) -> Verdict:
    """The verdict on one trial's HAR (one iteration's page and entries). On a
    repeat visit a cacheable URL without an entry counts as obtained from the cache.
    answer: see obtained; load_ms: the load event when the HAR does not say (Firefox's
    HAR has no pageTimings.onLoad: the trial's PLT)."""
    got = obtained(har, answer)
    if repeat_visit:
        for url in (expected.before_onload | expected.after_onload) & expected.cacheable:
            got.setdefault(url, Obtained(how="cache", entries=0, start_ms=None, end_ms=None))
    load = onload_ms(har)
    if load is None:
        load = load_ms
    moved = sorted(u for u in expected.before_onload & got.keys()
                   if load is not None and (start := got[u].start_ms) is not None and start > load)
    return Verdict(missing_before_onload=tuple(sorted(expected.before_onload - got.keys())),
                   missing_after_onload=tuple(sorted(expected.after_onload - got.keys())),
                   obtained=got, onload_ms=load, moved_after_onload=tuple(moved),
                   split=bool(expected.before_onload))
