"""The most requests in flight per host, from a HAR's timings."""

from __future__ import annotations

import datetime as dt

from testbed.measure import trial_har

T0 = dt.datetime(2026, 5, 1, 8, 0, 0, tzinfo=dt.UTC)


def entry(url: str, start_ms: float, total_ms: float, **timings) -> dict:
    started = (T0 + dt.timedelta(milliseconds=start_ms)).isoformat().replace("+00:00", "Z")
    return {"startedDateTime": started, "time": total_ms, "request": {"url": url},
            "timings": {"blocked": -1, "dns": -1, "connect": -1, "ssl": -1, "send": 0,
                        "wait": total_ms, "receive": 0, **timings}}


def log(*entries) -> dict:
    return {"log": {"entries": list(entries)}}


def test_overlapping_requests_count_per_host():
    h = log(entry("https://a.test/1", 0, 100), entry("https://a.test/2", 10, 100),
            entry("https://a.test/3", 20, 100), entry("https://B.test/x", 0, 500),
            entry("https://a.test/4", 150, 10))
    assert trial_har.max_in_flight(h) == {"a.test": 3, "b.test": 1}


def test_a_request_ending_as_another_is_sent_does_not_overlap_it():
    h = log(*(entry(f"https://a.test/{i}", 50 * i, 50) for i in range(10)))
    assert trial_har.max_in_flight(h) == {"a.test": 1}


def test_queueing_and_connection_setup_are_not_in_flight():
    # Six on the wire from 0; six more queued by the browser ("blocked") until 90,
    # when the first six are done: never more than six at once.
    first = [entry(f"https://a.test/{i}", 0, 90) for i in range(6)]
    held = [entry(f"https://a.test/q{i}", 5, 185, blocked=85) for i in range(6)]
    assert trial_har.max_in_flight(log(*first, *held)) == {"a.test": 6}
    # The same twelve all sent at once after a connection set-up (ssl is part of connect).
    setup = [entry(f"https://a.test/{i}", 0, 150, dns=5, connect=40, ssl=30) for i in range(12)]
    assert trial_har.max_in_flight(log(*setup)) == {"a.test": 12}
    # If the held ones were sent at once instead, all twelve overlap.
    eager = [entry(f"https://a.test/q{i}", 5, 100) for i in range(6)]
    assert trial_har.max_in_flight(log(*first, *eager)) == {"a.test": 12}


def test_unusable_entries_are_left_out():
    h = log(entry("data:image/png;base64,AAAA", 0, 10), entry("blob:https://a.test/x", 0, 10),
            {"request": {"url": "https://a.test/no-times"}},
            {**entry("https://a.test/bad", 0, 10), "startedDateTime": "yesterday"},
            {**entry("https://a.test/naive", 0, 10), "startedDateTime": "2026-05-01T08:00:00"},
            {**entry("https://a.test/neg", 0, 10), "time": -5},
            {**entry("https://a.test/str", 0, 10), "time": "lots"},
            entry("https://[bad/", 0, 10),
            entry("https://c.test/ok", 0, 10, blocked="x", dns=True))
    assert trial_har.max_in_flight(h) == {"c.test": 1}
    assert trial_har.max_in_flight({}) == {}


def test_per_iteration_from_a_block_har():
    page = {"log": {"pages": [{"id": "p1", "title": "https://a.test/ run 1"},
                              {"id": "p2", "title": "https://a.test/ run 2"}],
                    "entries": [{**entry("https://a.test/1", 0, 100), "pageref": "p1"},
                                {**entry("https://a.test/2", 0, 100), "pageref": "p1"},
                                {**entry("https://a.test/1", 0, 100), "pageref": "p2"}]}}
    assert trial_har.max_in_flight(trial_har.iteration(page, 1)) == {"a.test": 2}
    assert trial_har.max_in_flight(trial_har.iteration(page, 2)) == {"a.test": 1}
