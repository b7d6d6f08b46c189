"""The matching rule against the shared vectors (h3server runs the same file)."""

from __future__ import annotations

import json

import pytest
from support.paths import TESTS

from testbed.replay.matching import Matcher, Request, match, normalise_host, score

VECTORS = json.loads((TESTS / "vectors" / "matching.json").read_text())
MATCHER = Matcher(VECTORS["exchanges"])


def test_vectors_cover_the_issue_minimum():
    names = " ".join(c["name"] for c in VECTORS["cases"]).lower()
    assert len(VECTORS["cases"]) >= 20
    for topic in ("query", "repeated", "unknown host", "method mismatch"):
        assert topic in names


@pytest.mark.parametrize("case", VECTORS["cases"], ids=[c["name"] for c in VECTORS["cases"]])
def test_vector(case):
    assert MATCHER.match(Request(**case["request"])) == case["expect"]


@pytest.mark.parametrize("case", VECTORS["cases"][:5], ids=lambda c: c["name"])
def test_one_off_match_agrees_with_the_index(case):
    assert match(VECTORS["exchanges"], Request(**case["request"])) == case["expect"]


@pytest.mark.parametrize("raw, host", [
    ("Example.COM", "example.com"), ("example.com:8443", "example.com"),
    ("[::1]:443", "[::1]"), ("[2001:DB8::1]", "[2001:db8::1]"), ("192.0.2.1:80", "192.0.2.1"),
])
def test_host_normalisation(raw, host):
    assert normalise_host(raw) == host


def test_identical_target_outranks_an_extension():
    assert score("/a", "/a") == 3
    assert score("/ab", "/a") == 2


def test_prefix_counts_utf8_bytes():
    # 'é' and 'è' share their first UTF-8 byte: the byte rule prefers that candidate
    exchanges = [{"scheme": "https", "host": "h", "method": "GET", "target": t}
                 for t in ("/x?a", "/x?è")]
    assert match(exchanges, Request("https", "h", "GET", "/x?é")) == 1


def test_empty_recording_matches_nothing():
    assert Matcher([]).match(Request("https", "a.test", "GET", "/")) is None
