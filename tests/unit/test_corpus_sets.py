"""The corpus's two named sets: the `paper` plan (Wolsing et al.'s selection), each
site's addressing as data, and how campaigns name the sets (`paper/*`, `today/*`,
the older `corpus/NAME`). Nothing here needs a built corpus."""

from __future__ import annotations

import statistics
from pathlib import Path

import numpy as np
import pytest
from support import corpus_fake

from corpus import addressing, npm, paper_shape, sets, shape
from testbed.campaign.plan import config
from testbed.formats import recording, recording_search
from testbed.record import listing

# -- the paper plan -------------------------------------------------------------


def test_paper_plan_is_38_pages_up_to_4_mb_with_two_single_origin():
    plans = sets.plan("paper")
    assert len(plans) == 38 and len({p.name for p in plans}) == 38
    assert max(p.kbytes for p in plans) * 1024 <= 3_800_000  # a few % of room below 4 MB
    singles = [p for p in plans if p.single_origin]
    assert [p.name for p in singles] == ["p01-gnu", "p02-wiki"]
    assert all(not p.third_party and p.layout == "one" for p in singles)
    for p in plans:
        assert p.js + p.image + p.css + p.font + p.html + p.other == p.requests


def test_paper_plan_follows_2019_weight_cut_at_4_mb():
    plans = sets.plan("paper")
    kb = np.percentile([p.kbytes for p in plans], [10, 50, 90])
    for got, (_, want) in zip(kb, [paper_shape.KBYTES[i] for i in (0, 2, 4)], strict=True):
        assert abs(got / want - 1) <= 0.1, (kb, want)
    # below the 2019 median (1,900 KB): the cut takes the heaviest fifth away
    assert 1200 <= statistics.median(p.kbytes for p in plans) < paper_shape.MEDIAN_KB
    req = np.percentile([p.requests for p in plans], [10, 50, 90])
    for got, (_, want) in zip(req, [paper_shape.REQUESTS[i] for i in (0, 2, 4)], strict=True):
        assert abs(got / want - 1) <= 0.25, (req, want)


def test_paper_plan_spreads_server_ips():
    """1 IP (single-origin), 1-4 (first parties only, by layout), more with third parties."""
    plans = sets.plan("paper")
    first_party_ips = {"one": 1, "cdn": 3, "split": 4}
    own = [1 if p.single_origin else first_party_ips[p.layout] for p in plans
           if not p.third_party]
    assert len(own) == paper_shape.SINGLE_ORIGIN + paper_shape.FIRST_PARTY_ONLY
    assert own.count(1) >= 2 and max(own) >= 3
    assert sum(p.third_party for p in plans) == 30
    assert {p.layout for p in plans if p.third_party} == set(addressing.LAYOUTS)


def test_plans_are_deterministic_and_the_sets_do_not_share_a_name():
    assert sets.plan("paper") == sets.plan("paper")
    assert sets.plan("paper", seed=1) != sets.plan("paper")
    assert not {p.name for p in sets.plan("paper")} & {p.name for p in sets.plan("today")}


def test_today_is_the_corpus_it_was_renamed_from():
    """Names, sizes and seeds as before the sets (the reference store names them)."""
    today = sets.plan("today")
    assert today[13].name == "garden14" and today[9].name == "hotel10"
    assert [p.kbytes for p in today] == [p.kbytes for p in shape.plan(38, 2024)]


# -- addressing -----------------------------------------------------------------


@pytest.mark.parametrize("name", sets.NAMES)
def test_layouts_follow_the_sets_shares(name):
    drawn = addressing.draw(name, 38, 7)
    assert drawn == addressing.draw(name, 38, 7) and len(drawn) == 38
    for layout, share in addressing.SHARES[name].items():
        assert abs(drawn.count(layout) - share * 38) < 1


def test_first_party_layouts():
    hosts = ("www.s.example", "static.s.example", "img.s.example", "api.s.example")
    groups = {k: addressing.groups(addressing.first_party(3, k, *hosts))
              for k in addressing.LAYOUTS}
    assert groups["one"] == [sorted(hosts)]
    assert ["img.s.example", "static.s.example"] in groups["cdn"] and len(groups["cdn"]) == 3
    assert len(groups["split"]) == 4
    assert addressing.first_party(3, "split", *["www.s.example"] * 4) == {
        "www.s.example": "10.80.4.1"}
    with pytest.raises(ValueError, match="layout"):
        addressing.first_party(3, "pooled", *hosts)


@pytest.fixture(scope="module")
def packages():
    return {n: npm.Package(locked, data) for n, (locked, data) in corpus_fake.tarballs().items()}


def test_a_built_site_carries_its_layout_in_its_ips(packages):
    from corpus import site

    for layout, shared in (("cdn", 1), ("split", 0), ("one", 1)):
        p = next(p for p in sets.plan("paper") if p.third_party and p.layout == layout)
        s = site.build(p, packages)
        first = {h: ip for h, ip in s.ips.items() if h.endswith(f".{p.name}.example")}
        assert sum(len(g) > 1 for g in addressing.groups(first)) == shared, (layout, first)
        third = {h: ip for h, ip in s.ips.items() if h not in first}
        assert len(set(third.values())) == len(third)  # each third party on its own


# -- naming the sets ------------------------------------------------------------


def _rec(folder: Path, name: str) -> Path:
    row = {"scheme": "https", "host": "www.a.test", "port": 443, "ip": "10.0.0.1",
           "method": "GET", "target": "/", "request_headers": [["user-agent", "x"]],
           "status": 200, "response_headers": [["content-type", "text/html"]]}
    return recording.write(folder, {"name": name, "url": "https://www.a.test/",
                                    "recorded_at": "2026-01-01T00:00:00Z", "loads": 1},
                           [(row, b"<html>")])


@pytest.fixture
def recs(tmp_path, monkeypatch):
    """A search path whose corpus has both sets and one site an older build left."""
    root = tmp_path / "recs"
    for folder, name in (("corpus/paper", "p01-gnu"), ("corpus/paper", "p02-wiki"),
                         ("corpus/today", "garden14"), ("corpus/today", "hotel10"),
                         ("corpus", "news01")):
        _rec(root / folder, name)
    monkeypatch.setattr(recording_search, "RECORDINGS_DIR", root)
    monkeypatch.setattr(recording_search, "_given", [])
    monkeypatch.delenv(recording_search.ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    return root


def test_sets_resolve_by_their_names(recs):
    names = lambda pattern: [p.name for p in recording_search.glob(pattern)]
    assert names("paper/*") == ["p01-gnu", "p02-wiki"]
    assert names("today/*") == ["garden14", "hotel10", "news01"]  # news01: an older build's
    assert names("corpus/*") == ["garden14", "hotel10", "news01"]  # the older name of today
    assert recording.resolve("paper/p01-gnu") == recs / "corpus/paper/p01-gnu"
    assert recording.resolve("today/garden14") == recs / "corpus/today/garden14"
    assert recording.resolve("corpus/garden14") == recs / "corpus/today/garden14"
    assert recording.resolve("corpus/news01") == recs / "corpus/news01"
    assert recording.resolve("corpus/paper/p02-wiki") == recs / "corpus/paper/p02-wiki"


def test_a_campaign_names_a_set_and_the_reference_still_resolves(recs, tmp_path):
    camp = tmp_path / "c.toml"
    camp.write_text('networks = ["none"]\nprotocols = ["tcp"]\nruns = 1\n'
                    'sites = ["paper/*", "today/*"]\n')
    found = [path.name for _, _, path in config.sites_of(config.load(camp))]
    assert found == ["p01-gnu", "p02-wiki", "garden14", "hotel10", "news01"]
    reference = config.load("reference")  # sites = ["corpus/*"]: the today set's
    assert [path.name for _, _, path in config.sites_of(reference)] == [
        "garden14", "hotel10", "news01"]


def test_recording_list_figures_per_set(recs):
    rows = listing.found([recs])
    assert [listing.set_of(r.name) for r in rows] == ["corpus", "paper", "paper", "today",
                                                      "today"]
    per = listing.by_set(rows)
    assert list(per) == ["corpus", "paper", "today"]
    assert per["paper"].recordings == 2 and per["paper"].ips == (1.0, 1.0, 1.0)
    pairs = dict(listing.summary_pairs(per["today"]))
    assert pairs["server IPs p10/p50/p90"] == "1/1/1" and pairs["largest bytes"] == "6"
