"""Results per worker (`testbed report --by-worker`, analysis.statistics.workers)."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from analysis import Config, analyse, synthetic, write_report
from analysis.statistics.workers import by_worker, calibrations, worker_shifts, worker_tests
from results_contract.manifest import ManifestError, parse
from testbed.cli import cli


def two_workers(shift_ms: float, seed: int = 4):
    """A synthetic campaign whose trials alternate between two workers; vm-b's PLTs are
    shifted by shift_ms."""
    t = synthetic.campaign(sites=3, networks=["dsl"], runs=12, seed=seed, failure_rate=0.0)
    t["worker"] = np.where(np.arange(len(t)) % 2 == 0, "vm-a/0", "vm-b/0")
    t.loc[t["worker"] == "vm-b/0", "plt_ms"] += shift_ms
    return t


def test_by_worker_counts_every_ok_trial_once_per_worker():
    t = two_workers(0)
    table = by_worker(t)
    assert set(table["worker"]) == {"vm-a/0", "vm-b/0"}
    assert table["n"].sum() == int((t["status"] == "ok").sum())
    assert list(table.columns) == ["network", "setting", "worker", "n", "plt_mean_ms",
                                   "plt_median_ms"]


def test_workers_that_measure_alike_agree_and_a_slower_machine_differs():
    same = worker_tests(two_workers(0))
    assert len(same) == len(set(two_workers(0)["setting"]))
    assert (same["verdict"] == "agree").mean() >= 0.8  # 5 % false alarms expected
    slow = worker_tests(two_workers(2000))
    assert (slow["verdict"] == "differ").all(), slow
    assert (slow["median_spread_ms"] > 1000).all()


def test_a_store_without_the_worker_column_has_one_unrecorded_worker():
    t = synthetic.campaign(sites=2, networks=["dsl"], runs=4, seed=1).drop(
        columns=["worker"], errors="ignore")
    assert set(by_worker(t)["worker"]) == {"(not recorded)"}
    assert worker_tests(t).empty


def test_calibrations_come_from_the_manifest_and_junk_is_refused_on_load():
    manifest = parse({"workers": {"vm-b/0": {"calibration": {"dsl": {"min_rtt_ms": 24.4},
                                                             "lte": {"probes": 3}}},
                                  "vm-a/0": {"calibration": {"dsl": {"min_rtt_ms": 24.1}}}}})
    got = calibrations(manifest)
    assert got.to_dict("records") == [{"worker": "vm-a/0", "network": "dsl", "min_rtt_ms": 24.1},
                                      {"worker": "vm-b/0", "network": "dsl", "min_rtt_ms": 24.4}]
    assert calibrations(None).empty
    with pytest.raises(ManifestError, match=r"key workers\.vm-b/0\.calibration\.lte: expected "
                                            "an object, got str"):
        parse({"workers": {"vm-b/0": {"calibration": {"lte": "junk"}}}})


def test_the_report_shows_results_per_worker_only_when_asked(tmp_path):
    t = two_workers(2000)
    plain = write_report(analyse(t, Config()), tmp_path / "plain")
    assert 'id="workers"' not in plain.read_text(encoding="utf-8")
    manifest = parse({"workers": {"vm-a/0": {"calibration": {"dsl": {"min_rtt_ms": 24.1}}}},
                      "calibration_differs": ["network dsl: calibrated minimum RTT differs"]})
    a = analyse(t, Config(by_worker=True), manifest=manifest)
    page = write_report(a, tmp_path / "w", manifest=manifest).read_text(encoding="utf-8")
    assert 'id="workers"' in page and "vm-b/0" in page and "differ" in page
    assert "calibrated minimum RTT differs" in page
    assert (tmp_path / "w" / "tables" / "by_worker.csv").exists()
    assert (tmp_path / "w" / "tables" / "worker_tests.csv").exists()


def test_cli_by_worker_prints_whether_the_workers_agree(tmp_path):
    t = two_workers(2000)
    t.to_csv(tmp_path / "c.csv", index=False)
    done = CliRunner().invoke(cli, ["report", str(tmp_path / "c.csv"), "--by-worker",
                                    "--out", str(tmp_path / "r")])
    assert done.exit_code == 0, done.output
    lines = [x for x in done.output.splitlines() if x.startswith("workers: dsl ")]
    assert lines and all("2 workers differ" in x for x in lines), done.output


def test_a_worker_3_percent_slower_on_every_trial_is_reported_as_different():
    t = synthetic.campaign(sites=20, networks=["dsl"], runs=10, seed=5, failure_rate=0.0)
    t["worker"] = np.where(np.arange(len(t)) % 2 == 0, "vm-a/0", "vm-b/0")
    slow = t["worker"] == "vm-b/0"
    same = worker_tests(t)
    t.loc[slow, "plt_ms"] *= 1.03
    tests = worker_tests(t)
    assert (tests["verdict"] == "differ").all() and (tests["p"] < 1e-3).all(), tests
    assert (tests["equivalence"] == "different").all(), tests
    assert tests["largest_shift"].abs().between(0.02, 0.04).all()
    shifts = worker_shifts(t[t["status"] == "ok"])
    b = shifts[shifts["worker"] == "vm-b/0"]
    assert (b["shift"] > 0.02).all() and (b["verdict"] == "different").all()
    assert (same["verdict"] == "agree").mean() >= 0.8
    assert (same["equivalence"] != "different").all()


def test_a_worker_given_slower_sites_is_not_called_slower():
    t = synthetic.campaign(sites=20, networks=["dsl"], runs=10, seed=6, failure_rate=0.0)
    # vm-b measured the first half of the runs of the slow sites, the fast sites alike
    slow_sites = t.groupby("site")["plt_ms"].transform("mean") > t["plt_ms"].median()
    t["worker"] = np.where(slow_sites & (t["run"] < 8) | ~slow_sites & (t["run"] < 2),
                           "vm-b/0", "vm-a/0")
    tests = worker_tests(t)
    assert (tests["verdict"] == "agree").mean() >= 0.8, tests
