"""What the window waits for and what the judge expects, from a recording alone
(testbed.measure.completeness.needed, docs/completeness.md), the page-complete check
that waits for it (hooks/complete.js, run in Node on a scripted page), and the
trial's verdict and columns."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from testbed.campaign.run.rows import completeness_columns
from testbed.formats.recording import Exchange, Origin, Recording
from testbed.host.paths import NODE
from testbed.measure import browsertime, completeness
from testbed.measure.metrics import Metrics
from testbed.measure.trial import Evidence, judge

PAGE = "https://www.site.test/"
TOP, FRAME = "https://www.site.test/en/", "https://www.site.test/widgets/w.html"
VIDEO = "https://www.video.test/embed/1"


def x(url: str, *, status: int = 200, dest: str = "image", referer: str | None = TOP,
      method: str = "GET", location: str | None = None, size: int = 1000,
      seen_in: int | None = None, cache: str = "max-age=3600") -> Exchange:
    scheme, rest = url.split("://", 1)
    host, _, path = rest.partition("/")
    request = [("sec-fetch-dest", dest)] + ([("referer", referer)] if referer else [])
    response = [("cache-control", cache)] + ([("location", location)] if location else [])
    return Exchange(scheme=scheme, host=host, port=443, ip="10.0.0.1", method=method,
                    target="/" + path, request_headers=tuple(request), status=status,
                    response_headers=tuple(response), body=None, body_size=size,
                    seen_in=seen_in)


def recording(exchanges: list[Exchange], loads: int = 1) -> Recording:
    hosts = sorted({e.host for e in exchanges})
    return Recording(path=Path("/nonexistent"), name="t", url=PAGE, recorded_at="2026-11-28",
                     loads=loads, origins=tuple(Origin("https", h, 443, "10.0.0.1")
                                                for h in hosts),
                     exchanges=tuple(exchanges))


SITE = [
    x(PAGE, status=301, dest="document", referer=None, location="/en/"),
    x(TOP, dest="document", referer=None, cache="no-store"),
    x("https://www.site.test/favicon.ico", referer=TOP),
    x("https://static.site.test/app.css", dest="style", size=5000),
    x("https://static.site.test/font.woff2", dest="font", referer="https://static.site.test/app.css"),
    x("https://fonts.css.test/f.css", dest="style"),
    x("https://fonts.files.test/a.woff2", dest="font", referer="https://fonts.css.test/"),
    x("https://www.site.test/local.css", dest="style"),
    x("https://www.site.test/bg.png", referer="https://www.site.test/local.css"),
    x("https://img.site.test/more/0.jpg", size=200_000),
    x("https://api.site.test/feed?ts=1700000000000", dest="empty", cache="no-store"),
    x("https://img.site.test/banner.jpg", status=404),
    x("https://t.site.test/collect", status=302, location="https://stats.test/c?x=1"),
    x("https://stats.test/c?x=1", referer="https://www.site.test/"),
    x("https://t.site.test/beacon", method="POST", dest="empty"),
    x(FRAME, dest="iframe"),
    x("https://www.site.test/widgets/w.js", dest="script", referer=FRAME),
    x(VIDEO, dest="iframe"),
    x("https://www.video.test/poster.jpg", referer="https://www.video.test/"),
]


def test_needed_is_the_top_documents_recorded_urls():
    n = completeness.needed(recording(SITE))
    assert n.known
    assert n.har == {"https://static.site.test/app.css", "https://static.site.test/font.woff2",
                     "https://fonts.css.test/f.css", "https://fonts.files.test/a.woff2",
                     "https://www.site.test/local.css", "https://www.site.test/bg.png",
                     "https://img.site.test/more/0.jpg",
                     "https://api.site.test/feed?ts=1700000000000",
                     "https://t.site.test/collect", "https://stats.test/c?x=1"}
    # no Resource Timing entry of its own: a redirect's target, and what a cross-origin
    # stylesheet fetched in no-cors mode asks for (its URL or, by the default referrer
    # policy, its origin as the referer); a same-origin stylesheet's image has one
    assert n.window == tuple(sorted(n.har - {"https://stats.test/c?x=1",
                                             "https://static.site.test/font.woff2",
                                             "https://fonts.files.test/a.woff2"}))
    assert n.bytes == 5000 + 1000 * 8 + 200_000
    assert "https://api.site.test/feed?ts=1700000000000" not in n.cacheable
    assert "https://img.site.test/more/0.jpg" in n.cacheable


def test_a_url_not_every_load_asked_for_is_not_needed():
    three = [*(e.__class__(**{**e.__dict__, "seen_in": 3}) for e in SITE),
             x("https://img.site.test/promo-3.jpg", seen_in=2),
             x("https://img.site.test/promo-4.jpg", seen_in=1)]
    n = completeness.needed(recording(three, loads=3))
    assert n.known and not any("promo" in u for u in n.har)
    assert "https://img.site.test/more/0.jpg" in n.har


def test_a_recording_of_several_loads_without_counts_is_not_judged():
    n = completeness.needed(recording(SITE, loads=3))
    assert not n.known and n.har == frozenset() and n.window == ()


def test_a_new_query_string_is_answered_by_the_recorded_one():
    answer = completeness.answered_by(recording(SITE))
    assert (answer("GET", "https://api.site.test/feed?ts=1800000000000")
            == "https://api.site.test/feed?ts=1700000000000")
    assert answer("GET", "https://nowhere.test/x") == "https://nowhere.test/x"


def test_the_limit_grows_with_the_bytes_and_the_rtt():
    # cars34 under LTE (docs/completeness.md): 4.2 MB of post-load content, 10.5 Mbit/s,
    # 80 ms: 2 x 3.2 s + 0.8 s
    assert completeness.window_limit_ms(4_200_000, 10.5, 80, 5000) == 7200
    assert completeness.window_limit_ms(100_000, 25, 24, 5000) == 5000  # the floor
    assert completeness.window_limit_ms(4_200_000, None, 80, 5000) == 5000  # a trace


def har(urls: list[str], onload: float = 2000.0) -> dict:
    entries = [{"request": {"method": "GET", "url": u},
                "startedDateTime": "2026-11-28T17:00:01.000Z", "time": 100,
                "response": {"status": 200}, "cache": {}} for u in urls]
    return {"log": {"pages": [{"startedDateTime": "2026-11-28T17:00:00.000+00:00",
                               "pageTimings": {"onLoad": onload}}], "entries": entries}}


def test_a_trial_missing_a_needed_url_fails_naming_it():
    rec = recording(SITE)
    n = completeness.needed(rec)
    answer = completeness.answered_by(rec)
    all_urls = [*sorted(n.har - {"https://api.site.test/feed?ts=1700000000000"}),
                "https://api.site.test/feed?ts=1800000000000"]
    whole = completeness.judge(n.expected(), har(all_urls), answer=answer)
    assert whole.complete and completeness_columns(whole)["missing_resources"] == 0
    short = completeness.judge(n.expected(), har(all_urls[1:]), answer=answer)
    reason = short.reason()
    assert reason is not None and reason.startswith("incomplete: 1 recorded resource(s) ")
    assert all_urls[0] in reason
    assert completeness_columns(short) == {"missing_resources": 1, "after_onload_resources": 0}
    assert completeness_columns(None) == {"missing_resources": None,
                                          "after_onload_resources": None}


def evidence(**kw) -> Evidence:
    m = Metrics(plt_ms=1000, ttfb_ms=100, fvc_ms=500, lvc_ms=900, vc85_ms=800, si_ms=700)
    return Evidence(**{"stack": "tcp", "measured": True, "metrics": m,
                       "protocols": {"h2": 10}, **kw})


def test_an_incomplete_load_fails_after_the_protocol_check_and_before_the_video():
    bad = "incomplete: 2 recorded resource(s) the page needs not obtained: a, b"
    assert judge(evidence()).ok
    assert judge(evidence(incomplete=bad)).reason == bad
    assert judge(evidence(incomplete=bad, protocols={"h3": 1})).reason.startswith(
        "wrong-protocol")
    assert judge(evidence(incomplete=bad, visual_error="x")).reason == bad


# --- the page-complete check, run in Node against a scripted page ----------------

HARNESS = """
const check = process.argv[1], page = JSON.parse(process.argv[2]);
const window = {performance: {
  timing: {navigationStart: 1000, loadEventEnd: page.load === null ? 0 : 1000 + page.load},
  now: () => page.now,
  setResourceTimingBufferSize: (n) => { window.buffer = n; },
  getEntriesByType: () => page.entries.map(([name, end]) => ({name, responseEnd: end,
                                                              startTime: end - 10}))}};
const location = {protocol: 'https:', href: 'https://www.site.test/en/'};
const performance = window.performance;
const f = new Function('window', 'location', 'performance', check);
console.log(JSON.stringify({done: f(window, location, performance), buffer: window.buffer,
                            why: window.__testbedWindow || null}));
"""


def run_check(needed: list[str], load: float | None, now: float, entries: list,
              limit: int = 5000) -> dict:
    if not NODE.exists():
        pytest.fail(f"Node missing ({NODE}): run `make setup`")
    opts = browsertime.BrowsertimeOptions(iterations=1, needed=tuple(needed), limit_ms=limit,
                                          settle_max_ms=1000, complete_in_page=False)
    page = {"load": load, "now": now, "entries": entries}
    cp = subprocess.run([str(NODE), "-e", HARNESS, browsertime.complete_check(opts),
                         json.dumps(page)], capture_output=True, text=True, timeout=60,
                        check=True)
    return json.loads(cp.stdout)


A, B = "https://img.site.test/a.jpg", "https://api.site.test/feed?ts=1700000000000"


def test_the_check_waits_for_every_needed_url_then_the_quiet():
    assert run_check([A], load=None, now=500, entries=[])["done"] is False
    # loaded, quiet for long, but A has not ended: still loading
    assert run_check([A], load=1000, now=4000, entries=[["https://x.test/b", 900]])[
        "done"] is False
    # A ended 100 ms ago: not quiet yet (300 ms)
    assert run_check([A], load=1000, now=3100, entries=[[A, 3000]])["done"] is False
    got = run_check([A], load=1000, now=3400, entries=[[A + "#top", 3000]])
    assert got["done"] is True and got["buffer"] >= 1000
    assert got["why"] == {"end": "quiet", "at": 3400, "pending": [], "pendingCount": 0}


def test_the_check_takes_a_new_query_string_for_the_recorded_one():
    assert run_check([B], load=1000, now=3400, entries=[[
        "https://api.site.test/feed?ts=1800000000000", 3000]])["done"] is True


def test_the_check_ends_at_the_limit_with_urls_missing():
    assert run_check([A], load=1000, now=1000 + 7000, entries=[], limit=7200)["done"] is False
    got = run_check([A], load=1000, now=1000 + 7300, entries=[], limit=7200)
    assert got["done"] is True
    assert got["why"] == {"end": "limit", "at": 8300, "pending": [A], "pendingCount": 1}


def test_a_hostile_recorded_url_stays_a_string():
    evil = 'https://x.test/"]);process.exit(3);//\u2028SETTLE_MS'
    got = run_check([evil], load=1000, now=3400, entries=[[evil, 3000]])
    assert got["done"] is True
    text = browsertime.complete_check(browsertime.BrowsertimeOptions(
        iterations=1, needed=(evil,)))
    assert json.dumps([evil]) in text and "SETTLE_MS" not in text.split("(function")[0][-50:]


def test_what_the_page_says_of_its_window_is_kept_only_in_its_own_shape():
    from testbed.measure.browser_process import window_end
    good = {"end": "limit", "at": 8300, "pendingCount": 1, "pending": [A]}
    assert window_end(good) == good
    assert window_end({**good, "extra": "x" * 10**6}) == good  # other keys dropped
    many = window_end({**good, "pending": ["u" * 10**5] * 10**4, "pendingCount": 10**4})
    assert many is not None and len(many["pending"]) == 20
    assert all(len(u) == 2000 for u in many["pending"])
    for bad in (None, [], "quiet", {"end": "forever"}, {**good, "at": "soon"},
                {**good, "pending": "all"}):
        assert window_end(bad) is None
