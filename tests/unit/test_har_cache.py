"""What the browser answered from its own cache is not a request on the wire: it has
no protocol and is not counted (testbed.measure.trial_har.from_browser_cache)."""

from __future__ import annotations

from testbed.measure import trial_har
from testbed.validate import firefox as validate_firefox

ZERO = {"blocked": 0, "dns": 0, "connect": 0, "ssl": 0, "send": 0, "wait": 0, "receive": 0}

# Both entries of one image in a warm Firefox trial (local-news, tcp-plus-0rtt, Firefox
# 153.7.0esr, 2026-11-27), trimmed: the request over HTTP/2 in TLS early data, then the
# same image again from Firefox's in-memory image cache 342 ms later, as WebDriver BiDi
# reports it (http/1.1, a lone Content-Length, nothing received). The servers counted
# 29 requests; the HAR held 30, and the trial failed as wrong-protocol {"h2": 29,
# "http/1.1": 1}.
ON_THE_WIRE = {
    "request": {"method": "GET", "url": "https://img.newscdn.test/img/article-2.jpg",
                "httpVersion": "h2", "headersSize": 486},
    "startedDateTime": "2026-11-27T11:11:31.231Z",
    "response": {"status": 200, "statusText": "?", "httpVersion": "h2",
                 "headers": [{"name": "X-Firefox-Early-Data", "value": "accepted"}],
                 "headersSize": 224, "bodySize": 55989},
    "cache": {}, "time": 179.527099609375,
    "timings": {**ZERO, "blocked": 54.7, "dns": 2.2, "connect": 31.7, "wait": 62.9,
                "receive": 28.0},
}
FROM_FIREFOX_CACHE = {
    "request": {"method": "GET", "url": "https://img.newscdn.test/img/article-2.jpg",
                "httpVersion": "http/1.1", "headersSize": 0},
    "startedDateTime": "2026-11-27T11:11:31.573Z",
    "response": {"status": 200, "statusText": "OK", "httpVersion": "http/1.1",
                 "headers": [{"name": "Content-Length", "value": "55766"}],
                 "headersSize": 0, "bodySize": 0},
    "cache": {}, "time": 0, "timings": dict(ZERO),
}
# Chromium's HAR (chrome-har) over HTTP/2 and HTTP/3: header size unknown (-1), as are
# the body sizes of some responses; these are on the wire
CHROMIUM_H3 = {
    "request": {"method": "GET", "url": "https://a.test/x.js", "httpVersion": "h3"},
    "response": {"status": 200, "httpVersion": "h3", "headersSize": -1, "bodySize": -1},
    "time": 0, "timings": dict(ZERO),
}


def har(*entries):
    return {"log": {"pages": [{"id": "page_1"}],
                    "entries": [{**e, "pageref": "page_1"} for e in entries]}}


def test_an_entry_firefox_served_from_its_cache_is_not_a_request():
    assert trial_har.from_browser_cache(FROM_FIREFOX_CACHE)
    assert not trial_har.from_browser_cache(ON_THE_WIRE)
    h = har(ON_THE_WIRE, FROM_FIREFOX_CACHE)
    assert trial_har.protocols(h) == {"h2": 1}
    assert trial_har.requests(h) == 1
    assert dict(validate_firefox.har_origins(h)) == {"img.newscdn.test:443": {"h2": 1}}


def test_chromium_entries_count_and_its_marked_cache_hits_do_not():
    assert not trial_har.from_browser_cache(CHROMIUM_H3)
    assert trial_har.protocols(har(CHROMIUM_H3)) == {"h3": 1}
    cached = {**CHROMIUM_H3, "_fromCache": "memory"}
    assert trial_har.protocols(har(CHROMIUM_H3, cached)) == {"h3": 1}
