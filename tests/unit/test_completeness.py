"""The judge of completeness (testbed.measure.completeness, docs/completeness.md): a
trial is kept only if it obtained every resource the recording's page needs."""

from __future__ import annotations

from testbed.measure import completeness

PAGE = "https://www.site.test/"
T0 = "2026-11-28T17:00:00.000+00:00"


def entry(url: str, start_ms: int, time_ms: float = 100.0, **extra) -> dict:
    """One Chromium HAR entry (chrome-har's shape, trimmed) started start_ms after T0."""
    response = {"status": 200, "httpVersion": "h2", "headersSize": -1, "bodySize": 1000,
                **extra.pop("response", {})}
    return {"request": {"method": "GET", "url": url, **extra.pop("request", {})},
            "startedDateTime": f"2026-11-28T17:00:{start_ms // 1000:02d}.{start_ms % 1000:03d}Z",
            "time": time_ms, "response": response, "cache": extra.pop("cache", {}), **extra}


def har(entries: list[dict], onload: float = 2000.0) -> dict:
    return {"log": {"pages": [{"id": "page_1", "title": f"{PAGE} run 1", "startedDateTime": T0,
                               "pageTimings": {"onContentLoad": 1500.0, "onLoad": onload}}],
                    "entries": entries}}


HTML, CSS, FEED = PAGE + "en/", "https://static.site.test/a.css", "https://api.site.test/feed"
SLIDE, MORE = "https://img.site.test/slides/0.jpg", "https://img.site.test/more/0.jpg"
MISSING_404 = "https://static.site.test/polyfill-4.js"
CACHE_OK = (("cache-control", "public, max-age=31536000"),)
NO_STORE = (("cache-control", "no-store"),)
RECORDED = [(PAGE, 301, NO_STORE), (HTML, 200, NO_STORE), (CSS, 200, CACHE_OK),
            (FEED, 200, NO_STORE), (SLIDE, 200, CACHE_OK), (MORE, 200, CACHE_OK),
            (MISSING_404, 404, NO_STORE)]
EXPECTED = completeness.expected_from_recording(RECORDED, [PAGE, HTML, CSS, FEED, SLIDE])
COMPLETE = [entry(PAGE, 0, 50), entry(HTML, 50, 200), entry(CSS, 300), entry(FEED, 900),
            entry(SLIDE, 1100, 800), entry(MORE, 2010, 500)]


def test_the_recording_gives_two_sets_without_its_error_responses():
    assert EXPECTED.before_onload == {PAGE, HTML, CSS, FEED, SLIDE}
    assert EXPECTED.after_onload == {MORE}
    assert MISSING_404 not in EXPECTED.before_onload | EXPECTED.after_onload
    assert EXPECTED.cacheable == {CSS, SLIDE, MORE}


def test_a_complete_load_passes_and_says_how_and_when_each_url_came():
    verdict = completeness.judge(EXPECTED, har(COMPLETE))
    assert verdict.complete and verdict.reason() is None
    assert {o.how for o in verdict.obtained.values()} == {completeness.NETWORK}
    assert verdict.obtained[MORE].start_ms == 2010 and verdict.obtained[MORE].end_ms == 2510
    assert verdict.after_onload == (MORE,)


def test_a_load_the_window_ended_early_fails_naming_what_is_missing():
    # the games17 case: the feed answered after the load event, the slides and the
    # post-load images were still in flight when the window ended (no HAR entry)
    early = [entry(PAGE, 0, 50), entry(HTML, 50, 200), entry(CSS, 300),
             entry(FEED, 2100, 300)]
    verdict = completeness.judge(EXPECTED, har(early, onload=2050.0))
    assert not verdict.complete
    assert verdict.missing_before_onload == (SLIDE,)
    assert verdict.missing_after_onload == (MORE,)
    reason = verdict.reason()
    assert reason is not None and SLIDE in reason and MORE in reason
    assert reason.startswith("incomplete: 1 recorded resource")


def test_work_the_load_event_did_not_wait_for_is_reported_not_failed():
    # the feed answered after the load event: the slide it adds was asked for later,
    # and obtained (a window that waited for the page's own work)
    late = [*COMPLETE[:3], entry(FEED, 2100, 300), entry(SLIDE, 2450, 600), entry(MORE, 2460)]
    verdict = completeness.judge(EXPECTED, har(late, onload=2050.0))
    assert verdict.complete
    assert verdict.moved_after_onload == (FEED, SLIDE)
    assert set(verdict.after_onload) == {FEED, SLIDE, MORE}


def test_only_post_load_content_missing_blames_the_window():
    verdict = completeness.judge(EXPECTED, har(COMPLETE[:-1]))
    assert verdict.missing_before_onload == () and verdict.missing_after_onload == (MORE,)
    assert not verdict.complete
    reason = verdict.reason()
    assert reason is not None and "measurement window ended before the page's own work" in reason


def test_an_entry_without_a_response_was_not_obtained():
    in_flight = {**entry(MORE, 2010), "response": {}}
    verdict = completeness.judge(EXPECTED, har([*COMPLETE[:-1], in_flight]))
    assert verdict.missing_after_onload == (MORE,)


def test_a_cache_hit_the_recording_allows_passes():
    from_memory = entry(CSS, 300, 0, _fromCache="memory")
    from_disk = entry(SLIDE, 1100, 2, response={"fromDiskCache": True})
    hits = [*COMPLETE[:2], from_memory, COMPLETE[3], from_disk, COMPLETE[5]]
    verdict = completeness.judge(EXPECTED, har(hits))
    assert verdict.complete
    assert verdict.obtained[CSS].how == "memory cache"
    assert verdict.obtained[SLIDE].how == "disk cache"


def test_a_cache_hit_chromium_left_out_of_the_har_passes_on_a_repeat_visit_only():
    # chrome-har leaves disk-cache hits out of the HAR: on a repeat visit a cacheable
    # recorded URL without an entry was obtained from the cache; not a no-store one
    without = [e for e in COMPLETE if e["request"]["url"] not in (CSS, FEED)]
    first = completeness.judge(EXPECTED, har(without))
    assert first.missing_before_onload == (FEED, CSS)  # sorted
    repeat = completeness.judge(EXPECTED, har(without), repeat_visit=True)
    assert repeat.missing_before_onload == (FEED,)
    assert repeat.obtained[CSS].how == "cache" and repeat.obtained[CSS].entries == 0


def test_a_firefox_cache_entry_is_a_cache_hit():
    firefox = entry(SLIDE, 1400, 0, response={"headersSize": 0, "bodySize": 0,
                                              "httpVersion": "http/1.1"})
    verdict = completeness.judge(EXPECTED, har([*COMPLETE, firefox]))
    assert verdict.obtained[SLIDE].how == completeness.NETWORK  # the first entry's way
    assert verdict.obtained[SLIDE].entries == 2
    assert completeness.how(firefox) == "cache"


def test_a_duplicate_request_counts_once():
    twice = [*COMPLETE, entry(CSS, 2600, 90)]
    verdict = completeness.judge(EXPECTED, har(twice))
    assert verdict.complete
    assert verdict.obtained[CSS].entries == 2
    assert verdict.obtained[CSS].start_ms == 300  # the first of the two
    assert len(verdict.obtained) == len(COMPLETE)


def test_a_preload_and_a_fragment_are_the_same_url():
    preloaded = entry(CSS + "#x", 300, request={"_isLinkPreload": True})
    verdict = completeness.judge(EXPECTED, har([*COMPLETE[:2], preloaded, *COMPLETE[3:]]))
    assert verdict.complete and verdict.obtained[CSS].preload


def test_the_before_set_comes_from_a_complete_loads_har():
    assert completeness.requested_before_onload(har(COMPLETE)) == {PAGE, HTML, CSS, FEED, SLIDE}
    assert completeness.requested_before_onload({"log": {}}) == frozenset()


def test_a_recordings_exchanges_become_urls():
    from pathlib import Path

    from testbed.formats.recording import Exchange, Recording

    def x(host: str, port: int, target: str, status: int) -> Exchange:
        return Exchange(scheme="https", host=host, port=port, ip="10.0.0.1", method="GET",
                        target=target, request_headers=(), status=status,
                        response_headers=CACHE_OK, body=None)

    rec = Recording(path=Path("."), name="site", url=PAGE, recorded_at=T0, loads=1, origins=(),
                    exchanges=(x("www.site.test", 443, "/en/", 200),
                               x("api.site.test", 8443, "/feed?a=1", 404)))
    assert completeness.recorded_exchanges(rec) == [
        ("https://www.site.test/en/", 200, CACHE_OK),
        ("https://api.site.test:8443/feed?a=1", 404, CACHE_OK)]
