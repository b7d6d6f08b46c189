"""analysis.statistics.site_regression on synthetic data with a known truth: an effect
that grows with page bytes is found, no dependence is not, the pages like the paper's
are chosen by the store's page bytes, and a store without the machine's load says so."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis import synthetic
from analysis.statistics import site_regression as sr

SITES = 30


def store(slope: float, seed: int = 3) -> tuple[pd.DataFrame, pd.DataFrame]:
    """DSL, SITES sites of 0.5 to 8 MB; QUIC is TCP+ with fresh noise (5 % a trial),
    slowed by (MB / 2) ** slope: a per-site log ratio of slope x log(MB) + const."""
    t = synthetic.campaign(sites=SITES, networks=["dsl"], runs=8, seed=seed,
                           failure_rate=0.0)
    t = t[t["setting"] != "quic"]
    names = sorted(t["site"].unique())
    mb = dict(zip(names, 0.5 * 16 ** (np.arange(len(names)) / (len(names) - 1))))
    t = t.assign(bytes=t["site"].map(lambda s: int(mb[s] * 1e6)))
    rng = np.random.default_rng(seed)
    t = t.assign(cpu_busy=rng.uniform(0.3, 0.6, len(t)))
    quic = t[t["setting"] == "tcp-plus"].assign(setting="quic")
    factor = rng.lognormal(0, 0.05, len(quic)) * (quic["bytes"] / 2e6) ** slope
    quic = quic.assign(plt_ms=quic["plt_ms"] * factor,
                       cpu_busy=rng.uniform(0.3, 0.6, len(quic)),
                       trial_id=quic["trial_id"].astype(str) + "-q")
    t = pd.concat([t, quic], ignore_index=True)
    return t, synthetic.connections(t, seed=seed)


def coef(table: pd.DataFrame, term: str) -> pd.Series:
    return table.set_index("term").loc[term]


def test_an_effect_that_grows_with_bytes_gives_a_positive_bytes_coefficient():
    t, c = store(slope=0.15)
    table, _ = sr.fit(sr.site_frame(t, c, "quic", "tcp-plus", "dsl"))
    b = coef(table, "log_mb")
    assert b["low"] > 0 and b["low"] <= 0.15 <= b["high"]
    assert b["p"] < 0.01 and int(table["sites"].iloc[0]) == SITES


def test_no_dependence_gives_an_interval_containing_zero():
    t, c = store(slope=0.0)
    table, _ = sr.fit(sr.site_frame(t, c, "quic", "tcp-plus", "dsl"))
    b = coef(table, "log_mb")
    assert b["low"] < 0 < b["high"]


def test_a_frame_built_directly_recovers_its_slopes():
    rng = np.random.default_rng(0)
    n = 40
    frame = pd.DataFrame({"site": [f"s{i}" for i in range(n)],
                          "log_mb": rng.uniform(-1, 2.5, n),
                          "origins": rng.integers(1, 16, n).astype(float),
                          "share_gap": rng.uniform(0, 0.4, n)})
    frame["effect"] = 0.08 * frame["log_mb"] + rng.normal(0, 0.03, n)
    table, notes = sr.fit(frame)
    assert coef(table, "log_mb")["low"] > 0
    for term in ("origins", "share_gap"):
        assert coef(table, term)["low"] < 0 < coef(table, term)["high"]
    assert notes == [sr.MISSING_LOAD]


def test_the_pages_like_the_papers_are_chosen_by_the_stores_page_bytes():
    rows = [{"site": "small", "bytes": 1_000_000}, {"site": "small", "bytes": 1_200_000},
            {"site": "edge", "bytes": 4_000_000}, {"site": "edge", "bytes": 4_000_000},
            {"site": "large", "bytes": 3_900_000}, {"site": "large", "bytes": 4_500_000},
            {"site": "large", "bytes": 5_000_000},
            {"site": "failed", "bytes": 100, "status": "failed", "reason": "timeout"}]
    t = synthetic.trials([{**r, "run": i} for i, r in enumerate(rows)], network="dsl",
                         setting="quic")
    assert sr.PAPER_LARGEST_MB == 4.0
    assert sr.in_range(t, "dsl") == ["edge", "small"]  # medians 1.1, 4.0, 4.5 MB
    assert sr.in_range(t, "lte") == []


def test_a_store_without_the_machines_load_says_so_and_one_with_it_uses_it():
    t, c = store(slope=0.1)
    with_load, _ = sr.fit(sr.site_frame(t, c, "quic", "tcp-plus", "dsl"))
    assert "load_gap" in set(with_load["term"])
    table, notes = sr.fit(sr.site_frame(t.drop(columns=["cpu_busy"]), c, "quic",
                                        "tcp-plus", "dsl"))
    assert "load_gap" not in set(table["term"]) and sr.MISSING_LOAD in notes
    assert "machine load: not recorded in this store" in sr.summary(table, notes)


@pytest.mark.parametrize("sites", [3])
def test_too_few_sites_give_no_regression_but_a_reason(sites):
    frame = pd.DataFrame({"site": list("abc"), "effect": [0.1, 0.2, 0.3],
                          "log_mb": [0.0, 1.0, 2.0], "origins": [1.0, 2.0, 3.0],
                          "share_gap": [0.1, 0.2, 0.1]})
    table, notes = sr.fit(frame)
    assert table.empty and any("too few" in n for n in notes)
