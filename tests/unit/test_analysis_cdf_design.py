"""CDF points and the 1-RTT table against hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from analysis import (
    design_impact,
    ecdf,
    measurements,
    relative_cdfs,
    relative_difference,
    single_origin_sites,
    summarize,
    synthetic,
)


def rows(site, network, protocol, metric_values, **extra):
    """One trial per value tuple; metric_values maps metric column -> list of values."""
    n = len(next(iter(metric_values.values())))
    return [{"site": site, "network": network, "setting": protocol, "run": i,
             **{k: v[i] for k, v in metric_values.items()}, **extra} for i in range(n)]


def test_ecdf_by_hand():
    points = ecdf([0.1, -0.2, 0.1, 0.3, np.nan])
    assert points["x"].tolist() == pytest.approx([-0.2, 0.1, 0.3])
    assert points["p"].tolist() == pytest.approx([0.25, 0.75, 1.0])
    assert ecdf([]).empty


def test_relative_cdfs_by_hand():
    # tcp means 100, 200, 400, 1000; quic 90, 200, 440, 950 -> -0.1, 0, +0.1, -0.05
    data = []
    for site, tcp, quic in (("a", 100, 90), ("b", 200, 200), ("c", 400, 440), ("d", 1000, 950)):
        data += rows(site, "dsl", "tcp", {"plt_ms": [tcp - 1, tcp + 1]})
        data += rows(site, "dsl", "quic", {"plt_ms": [quic, quic]})
    rel = relative_difference(summarize(measurements(synthetic.trials(data), ["plt"])))
    cdf = relative_cdfs(rel)
    assert set(cdf["setting"]) == {"quic"} and set(cdf["sites"]) == {4}
    assert cdf["x"].tolist() == pytest.approx([-0.1, -0.05, 0.0, 0.1])
    assert cdf["p"].tolist() == pytest.approx([0.25, 0.5, 0.75, 1.0])


def design_trials():
    """gnu.org in DSL (RTT 24 ms): TCP+ FVC mean 101, QUIC 76.5 -> (101 - 24) - 76.5 = 0.5 ms."""
    data = []
    data += rows("gnu.org", "dsl", "tcp-plus", {"fvc_ms": [100, 102], "plt_ms": [500, 520]},
                 rtt_ms=24.0, origins=1)
    data += rows("gnu.org", "dsl", "quic", {"fvc_ms": [76, 77], "plt_ms": [490, 500]},
                 rtt_ms=24.0, origins=1)
    # A failed QUIC trial that must not count, and a multi-origin site that must not appear.
    data.append({"site": "gnu.org", "network": "dsl", "setting": "quic", "run": 2,
                 "fvc_ms": 10_000.0, "plt_ms": 20_000.0, "status": "failed",
                 "reason": "timeout", "rtt_ms": 24.0, "origins": 1})
    data += rows("news.example", "dsl", "tcp-plus", {"fvc_ms": [300, 300], "plt_ms": [900, 900]},
                 rtt_ms=24.0, origins=12)
    data += rows("news.example", "dsl", "quic", {"fvc_ms": [250, 250], "plt_ms": [800, 800]},
                 rtt_ms=24.0, origins=12)
    # No network delay: the difference per RTT is undefined.
    data += rows("gnu.org", "none", "tcp-plus", {"fvc_ms": [50, 50], "plt_ms": [300, 300]},
                 rtt_ms=0.0, origins=1)
    data += rows("gnu.org", "none", "quic", {"fvc_ms": [45, 45], "plt_ms": [290, 290]},
                 rtt_ms=0.0, origins=1)
    return synthetic.trials(data)


def test_design_impact_by_hand():
    trials = design_trials()
    assert single_origin_sites(trials) == ["gnu.org"]
    table = design_impact(trials, summarize(measurements(trials)))
    assert set(table["site"]) == {"gnu.org"}
    assert set(zip(table["tcp"], table["quic"])) == {("tcp-plus", "quic")}  # no BBR trials
    dsl = table[table.network == "dsl"].set_index("metric")
    assert dsl.loc["fvc", "tcp_minus_rtt_ms"] == pytest.approx(77.0)
    assert dsl.loc["fvc", "quic_ms"] == pytest.approx(76.5)
    assert dsl.loc["fvc", "diff_ms"] == pytest.approx(0.5)
    assert dsl.loc["fvc", "diff_rtt"] == pytest.approx(0.5 / 24)  # 0.020, as in the paper
    # PLT: (510 - 24) - 495 = -9 ms: TCP+ is faster once credited with the handshake.
    assert dsl.loc["plt", "diff_ms"] == pytest.approx(-9.0)
    assert dsl.loc["plt", "diff_rtt"] == pytest.approx(-9.0 / 24)
    none = table[table.network == "none"].set_index("metric")
    assert none.loc["fvc", "diff_ms"] == pytest.approx(5.0)
    assert np.isnan(none.loc["fvc", "diff_rtt"])


def test_design_impact_includes_the_bbr_pair_when_measured():
    trials = synthetic.campaign(sites=3, single_origin=1, networks=["lte"], runs=5, seed=9)
    table = design_impact(trials, summarize(measurements(trials)))
    assert set(table["site"]) == {"gnu.org"}
    assert set(zip(table["tcp"], table["quic"])) == {("tcp-plus", "quic"),
                                                     ("tcp-plus-bbr", "quic-bbr")}
    assert set(table["metric"]) == {"fvc", "fcp", "plt"} and set(table["rtt_ms"]) == {74.0}
