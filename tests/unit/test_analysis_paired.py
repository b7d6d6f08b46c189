"""Tests that use the design (analysis.statistics.paired): runs paired as blocks, Welch beside the
paper's ANOVA, each test's direction from its own estimate."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis import synthetic
from analysis.statistics import inference
from analysis.statistics.paired import paired_counts, paired_tests, walsh_median
from analysis.statistics.stats import compare

ALPHA = 0.01


def campaign(effect: float, sites: int = 38, runs: int = 31, seed: int = 0) -> pd.DataFrame:
    """QUIC vs TCP+ with a 3 % shock shared by the settings of each run block."""
    v = synthetic.blocked(1, sites=sites, runs=runs, effects=(0.0, effect), site_sd=0.0,
                          block_sd=0.03, noise_sd=0.01, seed=seed)[0]
    return synthetic.blocked_measurements(v, ("tcp-plus", "quic"))


def test_pairing_the_runs_finds_more_sites_than_the_unpaired_tests():
    t = paired_tests(campaign(-0.01), [("quic", "tcp-plus")], ALPHA)
    wins = {k: int((t[f"outcome_{k}"] == "win").sum()) for k in ("anova", "welch", "paired_t",
                                                                   "wilcoxon")}
    assert wins["paired_t"] >= 30 and wins["wilcoxon"] >= 25, wins
    assert wins["anova"] < 15 and wins["welch"] < 15, wins
    assert (t["pairs"] == 31).all()
    assert not (t[[c for c in t.columns if c.startswith("outcome_")]] == "loss").any().any()


def test_without_an_effect_each_test_errs_at_about_alpha():
    t = paired_tests(campaign(0.0, sites=400, runs=10, seed=1), [("quic", "tcp-plus")], 0.05)
    for k in ("anova", "welch", "paired_t", "wilcoxon"):
        assert (t[f"outcome_{k}"] != "tie").mean() <= 0.05 + 0.025, k


def test_runs_missing_on_one_side_are_not_paired():
    m = campaign(-0.05, sites=2, runs=6)
    m = m[~((m["setting"] == "quic") & (m["run"] == 0))]
    t = paired_tests(m, [("quic", "tcp-plus")], ALPHA)
    assert (t["pairs"] == 5).all()


def test_directions_come_from_the_estimate_each_test_is_about():
    d = np.array([[-1.0, -1.0, -1.0, -1.0, 30.0]])
    assert walsh_median(d)[0] == pytest.approx(-1.0)  # the mean is +5.2
    xa = np.array([[1.0, 2.0, 3.0, 4.0, 100.0]])
    xb = np.array([[0.0, 1.0, 2.0, 3.0, 4.0]])
    assert inference.hodges_lehmann(xa, xb)[0] == pytest.approx(np.median(
        (xa[0][:, None] - xb[0][None, :]).ravel()))


def test_welch_is_a_per_site_test_and_rank_tests_use_the_hodges_lehmann_shift():
    m = campaign(-0.10, sites=5, runs=10)
    for test in ("welch", "mannwhitney"):
        out = compare(m, [("quic", "tcp-plus")], ALPHA, test)
        assert (out["outcome"] == "win").all(), test


def test_counts_per_test():
    t = paired_tests(campaign(-0.01, sites=6), [("quic", "tcp-plus")], ALPHA)
    c = paired_counts(t).iloc[0]
    assert c["sites"] == 6 and c["paired_t"].count("/") == 2
    assert int(c["paired_t"].split("/")[0]) == int((t["outcome_paired_t"] == "win").sum())


def test_rank_tests_count_a_timeout_as_the_worst_value_instead_of_dropping_it():
    from analysis.statistics.stats import measurements, rank_input, timeouts

    rows = []
    for run in range(12):
        # quic's finished loads are faster, but 5 of its 12 loads time out
        out = run < 5
        rows += [{"site": "s", "network": "dsl", "setting": "quic", "run": run,
                  "plt_ms": None if out else 900.0 + run, "status": "failed" if out else "ok",
                  "reason": "timeout: page load" if out else None},
                 {"site": "s", "network": "dsl", "setting": "tcp", "run": run,
                  "plt_ms": 1000.0 + run}]
    trials = synthetic.trials(rows)
    meas = measurements(trials, ["plt"])
    dropped = compare(meas, [("quic", "tcp")], 0.05, "mannwhitney")
    assert dropped["outcome"].iloc[0] == "win"  # the slowest loads are gone
    timed_out = timeouts(trials, ["plt"])
    assert len(timed_out) == 5 and np.isinf(timed_out["value"]).all()
    counted = compare(rank_input(meas, timed_out, "mannwhitney"), [("quic", "tcp")], 0.05,
                      "mannwhitney").iloc[0]
    assert counted["outcome"] == "tie" and counted["n_a"] == 12
    assert np.isfinite(counted["mean_a"]) and counted["mean_a"] < 1000
    assert rank_input(meas, timed_out, "anova") is meas  # means cannot take them
