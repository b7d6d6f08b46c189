"""The recording rules beyond the schema (testbed.formats.recording_rules.check), on manifests made
by hand: one request once, totals that add up, responses as the recorder normalises them."""

from __future__ import annotations

import copy

import pytest

from testbed.formats.recording_rules import REMOVED_HEADERS, RuleError, check

X = {"scheme": "https", "host": "www.a.test", "port": 443, "ip": "203.0.113.5",
     "method": "GET", "target": "/", "request_headers": [["user-agent", "x"]], "status": 200,
     "response_headers": [["content-type", "text/html"], ["content-length", "5"]],
     "body": "a" * 64, "body_size": 5}
GOOD = {"origins": [{"scheme": "https", "host": "www.a.test", "port": 443,
                     "ip": "203.0.113.5"}],
        "exchanges": [X, {**X, "target": "/b", "body": None, "body_size": 0,
                          "response_headers": [["content-length", "0"]]}],
        "requests": 2, "bytes": 5}


def manifest(change=None) -> dict:
    data = copy.deepcopy(GOOD)
    if change:
        change(data)
    return data


def refused(data) -> str:
    with pytest.raises(RuleError) as e:
        check(data)
    return str(e.value)


def test_a_consistent_manifest_passes():
    check(manifest())


def test_an_exchange_twice_is_refused():
    def twice(d):
        d["exchanges"].append(copy.deepcopy(d["exchanges"][0]))
        d["requests"], d["bytes"] = 3, 10
    assert refused(manifest(twice)).startswith("key exchanges/2: a copy of exchanges/0 "
                                               "(GET https://www.a.test:443/)")


def test_two_responses_to_one_request_are_refused():
    def other(d):
        d["exchanges"][1]["target"] = "/"
    message = refused(manifest(other))
    assert message.startswith("key exchanges/1: another response to the request of "
                              "exchanges/0")


def test_the_same_path_with_another_query_or_method_is_another_request():
    def more(d):
        d["exchanges"] += [{**d["exchanges"][1], "target": "/b?x=1"},
                           {**d["exchanges"][1], "method": "POST"}]
        d["requests"] = 4
    check(manifest(more))


@pytest.mark.parametrize("key, value, expected", [
    ("requests", 3, "key requests: 3; expected 2, the number of exchanges"),
    ("bytes", 4, "key bytes: 4; expected 5, the sum of the exchanges' body_size"),
])
def test_totals_must_match_the_exchanges(key, value, expected):
    assert refused(manifest(lambda d: d.update({key: value}))) == expected


@pytest.mark.parametrize("name", sorted(REMOVED_HEADERS))
def test_headers_the_recorder_removes_are_refused(name):
    def add(d):
        d["exchanges"][0]["response_headers"].append([name, "x"])
    assert refused(manifest(add)).startswith(f"key exchanges/0/response_headers/2/0: {name}: "
                                             "expected no")


def test_content_length_must_be_the_body_size_and_given_once():
    def wrong(d):
        d["exchanges"][0]["response_headers"][1][1] = "500"
    assert refused(manifest(wrong)) == ("key exchanges/0/response_headers/1/1: content-length "
                                        "'500'; expected 5, the body's size")

    def twice(d):
        d["exchanges"][0]["response_headers"].append(["content-length", "5"])
    assert "content-length a second time" in refused(manifest(twice))


def test_content_length_of_a_response_without_a_length_is_as_sent():
    def head(d):  # HEAD and 304 keep the server's header (testbed.record.normalise)
        d["exchanges"][1].update(method="HEAD", response_headers=[["content-length", "1234"]])
    check(manifest(head))


def test_a_missing_content_length_is_left_to_the_replay_servers():
    check(manifest(lambda d: d["exchanges"][0]["response_headers"].pop()))


def test_an_exchange_seen_in_more_loads_than_recorded_is_refused():
    def three(d):
        d["loads"] = 2
        d["exchanges"][1]["seen_in"] = 3
    assert refused(manifest(three)) == "key exchanges/1/seen_in: expected at most loads (2), got 3"
    check(manifest(lambda d: d["exchanges"][1].update(seen_in=1)))
