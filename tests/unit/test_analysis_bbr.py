"""Where BBR beats CUBIC (analysis.statistics.bbr), the transport figures
(analysis.statistics.connections) and their report sections, from hand-made trials, the fixture and old stores."""

from __future__ import annotations

import html
import json
import re
import sqlite3

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from support.paths import FIXTURES

from analysis import ResultsError, synthetic
from analysis.statistics import across, bbr
from analysis.statistics.connections import (
    COLUMNS,
    connections_of,
    normalise,
    transport_summary,
)
from results_contract import schema
from results_contract.load import load
from testbed.cli import cli

FIXTURE = FIXTURES / "results"


def hand_made(sites: int = 1):
    """`sites` sites on two paths: BBR about 20 % faster on the lossy one, 10 % slower on
    the other (each site a point more or less than the one before)."""
    rows = []
    for i in range(sites):
        site = "s" if sites == 1 else f"s{i}"
        for network, rtt, factor in (("dsl", 24.0, 1.10), ("da2gc", 262.0, 0.80)):
            factor *= 1 + 0.01 * (i - (sites - 1) / 2)
            for run in range(4):
                jitter = 1 + 0.001 * run
                rows += [{"site": site, "network": network, "setting": "tcp-plus",
                          "run": run, "plt_ms": 1000.0 * jitter, "rtt_ms": rtt,
                          "bytes": 2_000_000},
                         {"site": site, "network": network, "setting": "tcp-plus-bbr",
                          "run": run, "plt_ms": 1000.0 * factor * jitter, "rtt_ms": rtt,
                          "bytes": 2_000_000}]
    return synthetic.trials(rows)


MANIFEST = {"networks": synthetic.manifest_networks(["dsl", "da2gc"])}


def test_site_effects_relative_difference_and_path():
    trials = hand_made()
    e = bbr.site_effects(trials, bbr.page_sizes(trials, {"s": 900_000.0}),
                         bbr.path_losses(MANIFEST)).set_index("network")
    assert e.loc["da2gc", "rel"] == pytest.approx(-0.2)
    assert e.loc["dsl", "rel"] == pytest.approx(0.1)
    assert (e.loc["da2gc", "verdict"], e.loc["dsl", "verdict"]) == ("helped", "hurt")
    assert (e.loc["da2gc", "loss_percent"], e.loc["dsl", "loss_percent"]) == (3.3, 0.0)
    assert e.loc["da2gc", "rtt_ms"] == 262 and e.loc["dsl", "page_bytes"] == 2_000_000
    assert e.loc["dsl", "largest_bytes"] == 900_000
    assert set(e["stack"]) == {"tcp"}  # no QUIC pair in these trials


def test_claims_say_what_is_missing_without_connections():
    trials = hand_made(sites=5)
    a = bbr.analyse_bbr(trials, normalise(pd.DataFrame(columns=["trial_id"]), "x"), MANIFEST)
    claims = a.claims.set_index("claim")["verdict"]
    assert claims["lossy"] == "holds" and claims["long-rtt"] == "holds"
    assert claims["large-files"] == "no data" and claims["small-files-fast-paths"] == "no data"
    assert any("no per-connection figures" in m for m in a.missing)
    assert any("DA2GC" in f and "BBR helped" in f for f in a.findings)
    assert any("DSL" in f and "BBR hurt" in f for f in a.findings)
    none = bbr.analyse_bbr(trials, connections_of(FIXTURE).iloc[:0], None)
    assert any("no path loss" in m for m in none.missing)


def noisy(factors: dict[str, float], spread: float, sites: int = 5) -> pd.DataFrame:
    """`sites` sites on each network of `factors` (BBR's mean PLT = factor × CUBIC's,
    give or take 2 points a site), 4 runs whose PLT alternates ± spread around each
    mean."""
    rows = []
    for network, factor in factors.items():
        rtt = {"dsl": 24.0, "da2gc": 262.0}[network]
        for i in range(sites):
            f = factor * (1 + 0.02 * (i - (sites - 1) / 2))
            for run in range(4):
                jitter = 1 + spread * (1 if run % 2 else -1)
                other = 1 - spread * (1 if run % 2 else -1)
                rows += [{"site": f"s{i}", "network": network, "setting": "tcp-plus",
                          "run": run, "plt_ms": 1000.0 * jitter, "rtt_ms": rtt,
                          "bytes": 2_000_000},
                         {"site": f"s{i}", "network": network, "setting": "tcp-plus-bbr",
                          "run": run, "plt_ms": 1000.0 * f * other, "rtt_ms": rtt,
                          "bytes": 2_000_000}]
    return synthetic.trials(rows)


NO_CONNECTIONS = normalise(pd.DataFrame(columns=["trial_id"]), "x")


@pytest.mark.parametrize(("factor", "spread", "verdict"), [
    (0.80, 0.001, "holds"),          # 20 % faster on every site: shown
    (0.97, 0.20, "inconclusive"),    # 3 % faster on average, sites ± 3 %: not shown
    (1.20, 0.001, "contradicted"),   # 20 % slower on every site: the opposite is shown
])
def test_a_claim_needs_the_test_across_sites_not_only_the_median_sign(factor, spread, verdict):
    trials = noisy({"da2gc": factor}, spread)
    e = bbr.site_effects(trials, bbr.page_sizes(trials), bbr.path_losses(MANIFEST))
    assert (e["rel"].median() < 0) == (factor < 1)
    c = bbr.claims(e, bbr.delivery_by_size(NO_CONNECTIONS, trials)).set_index("claim")
    assert c.loc["lossy", "verdict"] == verdict, c.loc["lossy", "evidence"]
    assert "t test across sites p = " in c.loc["lossy", "evidence"]
    found = bbr.findings(e, bbr.delivery_by_size(NO_CONNECTIONS, trials))
    word = {"holds": "BBR helped", "contradicted": "BBR hurt",
            "inconclusive": "BBR made no significant difference"}[verdict]
    assert word in found[0], found


def test_lossy_and_long_rtt_select_the_same_networks_one_result_not_two():
    trials = noisy({"da2gc": 0.8}, 0.001)
    e = bbr.site_effects(trials, bbr.page_sizes(trials), bbr.path_losses(MANIFEST))
    c = bbr.claims(e, bbr.delivery_by_size(NO_CONNECTIONS, trials)).set_index("claim")
    assert c.loc["lossy", "networks"] == c.loc["long-rtt", "networks"] == "DA2GC"
    assert "one result, not two" in c.loc["long-rtt", "evidence"]
    assert "one result" not in c.loc["lossy", "evidence"]


def test_size_claims_test_across_sites():
    rows = [{"stack": "tcp", "network": "da2gc", "bucket": "> 1 MB", "site": f"s{i}",
             "n_bbr": 9, "n_cubic": 9, "log_bbr": 0.0, "log_cubic": 0.0, "d": d}
            for i, d in enumerate((0.30, 0.25, 0.35, 0.28, 0.32))]
    per_site = pd.DataFrame(rows)
    d = bbr.delivery_by_size(NO_CONNECTIONS, hand_made(), per_site)
    assert d.loc[0, "sites"] == 5 and d.loc[0, "p"] < 0.01
    e = bbr.site_effects(hand_made(), bbr.page_sizes(hand_made()), bbr.path_losses(MANIFEST))
    c = bbr.claims(e, d, delivery_sites=per_site).set_index("claim")
    assert c.loc["large-files", "verdict"] == "holds", c.loc["large-files", "evidence"]
    c = bbr.claims(e, d, delivery_sites=per_site.iloc[:2]).set_index("claim")
    assert c.loc["large-files", "verdict"] == "inconclusive"
    # BBR delivering small objects slower on a fast path: "hurts small files" holds
    small = per_site.assign(network="dsl", bucket="< 100 kB", d=-per_site["d"])
    fast = e[e["network"] == "dsl"]
    c = bbr.claims(fast, d, delivery_sites=small).set_index("claim")
    assert c.loc["small-files-fast-paths", "verdict"] == "holds", c.loc[
        "small-files-fast-paths", "evidence"]


def test_the_float_case_gives_one_verdict_however_the_claim_is_worded():
    # one group p = 1e-20 for the claim, five p = 1e-12 against it: 1 - p/2 rounds to 1.0
    # and made z infinite on one side only
    groups = pd.DataFrame({"effect": [-0.2] + [0.1] * 5, "p": [1e-20] + [1e-12] * 5})
    helps, p_helps = bbr.directed(groups, "effect", True, 0.01)
    hurts, p_hurts = bbr.directed(groups, "effect", False, 0.01)
    flipped, p_flipped = bbr.directed(groups.assign(effect=-groups["effect"]), "effect",
                                      False, 0.01)
    assert (helps, hurts, flipped) == ("contradicted", "holds", "contradicted")
    assert p_helps == p_hurts == p_flipped and 0 < p_helps < 1e-20
    z = bbr.signed_z(groups["effect"], groups["p"])
    assert np.isfinite(z).all() and z[0] == pytest.approx(-9.33, abs=0.01)


def test_zero_effect_across_sites_gives_helped_or_hurt_at_most_alpha_plus_two_points():
    campaigns, sites, alpha = 400, 20, 0.01
    v = synthetic.blocked(campaigns, sites=sites, runs=10, effects=(0.0, 0.0), seed=21)
    d = across.site_log_ratio(v[:, :, 1], v[:, :, 0]).ravel()
    c = np.repeat(np.arange(campaigns), sites)
    # one stack x network per campaign: its name tells the campaigns apart
    effects = pd.DataFrame({"stack": [f"c{i}" for i in c], "network": "da2gc",
                            "site": np.tile(np.arange(sites), campaigns), "d": d,
                            "rel": np.expm1(d), "verdict": "no difference",
                            "rtt_ms": 262.0, "loss_percent": 3.3})
    by_path = bbr.summary_by_path(effects, alpha)
    assert len(by_path) == campaigns
    assert (by_path["verdict"] != "no difference").mean() <= alpha + 0.02
    shifted = bbr.summary_by_path(effects.assign(d=effects["d"] - 0.05), alpha)
    assert (shifted["verdict"] == "helped").mean() > 0.9
    # BBR truly 3 % faster across sites: "helped" as often as the planner predicts from
    # the spread of the sites' log ratios in other (pilot) campaigns, within 5 points
    from analysis.statistics import planner
    pilots = synthetic.blocked(campaigns, sites=sites, runs=10, seed=22)
    sd = float(np.sqrt(np.mean(np.var(across.site_log_ratio(pilots[:, :, 1], pilots[:, :, 0]),
                                      axis=1, ddof=1))))
    predicted = planner.across_power(sites, -np.log(0.97), sd, alpha)
    helped = bbr.summary_by_path(effects.assign(d=effects["d"] + np.log(0.97)), alpha)
    assert 0.2 < predicted < 0.98
    assert abs((helped["verdict"] == "helped").mean() - predicted) <= 0.05, predicted
    assert not (helped["verdict"] == "hurt").any()


def test_connections_count_once_per_trial_and_site_not_per_connection():
    """A site with a hundred connections a trial weighs as much as a site with one."""
    trials = hand_made(sites=3)
    ids = trials.set_index(["site", "network", "setting", "run"])["trial_id"]
    rows = []
    for site, many in (("s0", 100), ("s1", 1), ("s2", 1)):
        for run in range(4):
            for protocol, rate in (("tcp-plus", 1e6), ("tcp-plus-bbr",
                                                       4e6 if site == "s0" else 0.5e6)):
                rows += [{"trial_id": ids[(site, "da2gc", protocol, run)],
                          "bytes_sent": 2_000_000, "requests": 1,
                          "delivery_rate_bps": rate}] * many
    d = bbr.delivery_by_size(normalise(pd.DataFrame(rows), "t"), trials).iloc[0]
    assert d["sites"] == 3 and d["n_bbr"] == 408
    # per site log ratios ln 4, ln 0.5, ln 0.5: geometric mean (4 * 0.25) ** (1/3) = 1
    assert d["ratio"] == pytest.approx(0.0, abs=1e-12)


def test_delivery_by_object_size_bucket():
    trials = hand_made()
    ids = trials.set_index(["network", "setting", "run"])["trial_id"]
    rows = []
    for run in range(3):
        for protocol, rate in (("tcp-plus", 1e6), ("tcp-plus-bbr", 2e6)):
            # one small object connection and one of two 600 kB objects
            rows += [{"trial_id": ids[("da2gc", protocol, run)], "bytes_sent": 50_000,
                      "requests": 1, "delivery_rate_bps": rate / 4},
                     {"trial_id": ids[("da2gc", protocol, run)], "bytes_sent": 1_200_000,
                      "requests": 2, "delivery_rate_bps": rate}]
    d = bbr.delivery_by_size(normalise(pd.DataFrame(rows), "t"), trials)
    d = d.set_index("bucket")
    assert list(d.index) == ["< 100 kB", "100 kB – 1 MB"]  # 1.2 MB over 2 requests
    assert d.loc["100 kB – 1 MB", "bbr_mbps"] == 2.0 and d.loc["< 100 kB", "cubic_mbps"] == 0.25
    assert d.loc["100 kB – 1 MB", "ratio"] == pytest.approx(1.0)
    assert (d["n_bbr"] == 3).all() and (d["n_cubic"] == 3).all()


def test_fixture_claims_and_transport():
    trials = load(FIXTURE)
    conns = connections_of(FIXTURE)
    assert len(conns) > 1000 and list(conns.columns) == list(COLUMNS)
    a = bbr.analyse_bbr(trials, conns, json.loads((FIXTURE / "manifest.json").read_text()),
                        bbr.largest_objects(FIXTURE, trials))
    assert a.missing == ()
    assert set(a.claims["verdict"]) <= {"holds", "contradicted", "inconclusive"}
    assert a.effects["largest_bytes"].notna().all()
    t = transport_summary(conns, trials).set_index(["network", "setting"])
    assert t.loc[("da2gc", "quic"), "handshake_ms"] > 262
    assert pd.isna(t.loc[("da2gc", "tcp"), "handshake_ms"])  # NULL for TCP
    assert t.loc[("da2gc", "tcp-plus-bbr"), "retrans_rate"] < t.loc[("da2gc", "tcp-plus"),
                                                                     "retrans_rate"]
    assert t.loc[("dsl", "tcp"), "retrans_rate"] == 0


def test_report_renders_both_sections_from_the_fixture(tmp_path):
    done = CliRunner().invoke(cli, ["report", str(FIXTURE), "--out", str(tmp_path / "r")])
    assert done.exit_code == 0, done.output
    page = html.unescape((tmp_path / "r" / "index.html").read_text(encoding="utf-8"))
    transport = page[page.index('id="transport"'):page.index('id="bbr"')]
    assert "retransmitted (of bytes sent)" in transport and "DA2GC" in transport
    section = page[page.index('id="bbr"'):page.index('id="examples"')]
    assert "Missing:" not in section
    assert "plots/bbr-vs-cubic.svg" in section and "plots/bbr-delivery.svg" in section
    assert "100 kB – 1 MB" in section and "BBR helps on lossy paths" in section
    assert (tmp_path / "r" / "plots" / "bbr-delivery.png").is_file()
    for table in ("bbr_vs_cubic", "bbr_delivery", "bbr_claims", "transport", "examples"):
        assert (tmp_path / "r" / "tables" / f"{table}.csv").is_file()


def test_report_says_what_is_missing_on_a_store_without_connections(tmp_path):
    trials = synthetic.campaign(sites=2, networks=["dsl", "da2gc"],
                                settings=["tcp-plus", "tcp-plus-bbr", "quic", "quic-bbr"],
                                runs=3, seed=9)
    synthetic.write_folder(trials, tmp_path / "old", without=schema.ADDED[-1:],
                           manifest={"networks": synthetic.manifest_networks(["dsl", "da2gc"])})
    done = CliRunner().invoke(cli, ["report", str(tmp_path / "old"), "--out",
                                    str(tmp_path / "r")])
    assert done.exit_code == 0, done.output
    page = html.unescape((tmp_path / "r" / "index.html").read_text(encoding="utf-8"))
    assert 'id="no-transport"' in page
    section = page[page.index('id="bbr"'):page.index('id="examples"')]
    assert "Missing: no per-connection figures" in section
    assert "plots/bbr-vs-cubic.svg" in section and "plots/bbr-delivery" not in section
    assert re.search(r"TCP on DA2GC \(RTT 262 ms, loss 3.3 %\): BBR", section)


def test_a_broken_connections_table_is_one_error(tmp_path):
    trials = synthetic.campaign(sites=1, networks=["dsl"], settings=["tcp-plus"], runs=2)
    synthetic.write_folder(trials, tmp_path / "r")
    with sqlite3.connect(tmp_path / "r" / "trials.sqlite") as db:
        db.execute("CREATE TABLE connections (trial_id TEXT, srtt_ms TEXT)")
        db.execute("INSERT INTO connections VALUES ('x', 'fast')")
    with pytest.raises(ResultsError, match=r"trials.sqlite: missing column\(s\) transport, "):
        connections_of(tmp_path / "r")


def test_the_columns_are_the_contracts():
    """The connections table's columns as the results contract names them (once
    results_contract.schema defines CONNECTIONS, these must be its names in its order)."""
    contract = getattr(schema, "CONNECTIONS", None)
    if contract is not None:
        assert tuple(c.name for c in contract) == COLUMNS
    assert COLUMNS[:3] == ("trial_id", "transport", "origin") and COLUMNS[-1] == "requests"
    assert len(COLUMNS) == 32
