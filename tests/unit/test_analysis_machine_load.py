"""analysis.statistics.machine_load and the report's machine-load section: a pair whose
settings ran on unequally busy machines is flagged."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from analysis.report import report
from analysis.statistics import machine_load

PAIRS = [("tcp-plus", "quic"), ("tcp-plus-bbr", "quic-bbr")]


def rows(network: str, setting: str, busy: list[float | None], status: str = "ok",
         **extra: object) -> list[dict]:
    return [{"network": network, "setting": setting, "status": status, "client": "chromium",
             "cpu_busy": b, **extra} for b in busy]


def frame(*groups: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([r for g in groups for r in g])


def test_a_pair_more_than_ten_points_apart_is_flagged_with_the_busier_setting():
    trials = frame(rows("dsl", "tcp-plus", [0.30, 0.32, 0.34]),
                   rows("dsl", "quic", [0.45, 0.46, 0.90]),           # median 0.46: +14 pp
                   rows("lte", "tcp-plus", [0.30, 0.31, 0.32]),
                   rows("lte", "quic", [0.35, 0.38, 0.40]),           # +7 pp: within
                   rows("dsl", "quic", [0.0, 0.0], status="failed"))  # not counted
    t = machine_load.busier_pairs(trials, PAIRS)
    assert list(t["network"]) == ["dsl", "lte"]
    dsl, lte = t.iloc[0], t.iloc[1]
    assert (dsl["a"], dsl["b"], dsl["n_a"], dsl["n_b"]) == ("tcp-plus", "quic", 3, 3)
    assert round(dsl["busy_diff"], 2) == -0.14 and dsl["busier"] == "quic"
    assert lte["busier"] == ""
    assert list(machine_load.flagged(t)["network"]) == ["dsl"]


def test_the_threshold_is_a_stated_constant_and_applies_both_ways():
    trials = frame(rows("dsl", "tcp-plus", [0.61]), rows("dsl", "quic", [0.5]))
    assert machine_load.BUSIER_BY == 0.10
    assert machine_load.busier_pairs(trials, PAIRS)["busier"].tolist() == ["tcp-plus"]
    assert machine_load.busier_pairs(trials, PAIRS, threshold=0.2)["busier"].tolist() == [""]


def test_stores_without_the_machine_load_give_no_table():
    old = frame(rows("dsl", "tcp-plus", [None]), rows("dsl", "quic", [None]))
    assert machine_load.busier_pairs(old, PAIRS).empty
    assert machine_load.busier_pairs(old.drop(columns="cpu_busy"), PAIRS).empty
    only_one = frame(rows("dsl", "tcp-plus", [0.3]))  # the partner was not measured
    assert machine_load.busier_pairs(only_one, PAIRS).empty


def test_clients_are_compared_apart():
    trials = frame(rows("dsl", "tcp-plus", [0.3]), rows("dsl", "quic", [0.3]),
                   [{**r, "client": "firefox"} for r in rows("dsl", "tcp-plus", [0.3])],
                   [{**r, "client": "firefox"} for r in rows("dsl", "quic", [0.6])])
    t = machine_load.busier_pairs(trials, PAIRS)
    assert list(zip(t["client"], t["busier"])) == [("chromium", ""), ("firefox", "quic")]


def test_the_report_says_which_setting_ran_on_a_busier_machine():
    trials = frame(rows("dsl", "tcp-plus", [0.3], load_over_limit=0),
                   rows("dsl", "quic", [0.6], load_over_limit=1))
    section = report._machine_load(SimpleNamespace(trials=trials))
    assert section is not None and len(section["flags"]) == 1
    assert "ran on a busier machine than" in section["flags"][0]
    assert "60%" in section["flags"][0] and "30%" in section["flags"][0]
    assert section["threshold"] == "10" and "1 trial(s)" in section["over_limit"]
    assert "<table" in section["table"]
    assert report._machine_load(SimpleNamespace(trials=trials.drop(columns="cpu_busy"))) is None


def test_the_trial_page_says_how_busy_the_machine_was():
    from analysis.report.trial_page import machine_load as words

    row = {"cpu_busy": 0.4567, "cpu_steal": 0.01, "browser_cpu_s": 0.83,
           "server_cpu_s": 0.05, "loadavg_1m": 1.5, "load_wait_s": None,
           "load_over_limit": None}
    assert words(row) == ("CPU 46% busy (steal 1%), browser 0.83 CPU s, replay servers "
                          "0.05 CPU s, load average 1.50")
    waited = words({**row, "browser_cpu_s": float("nan"), "load_wait_s": 60.2,
                    "load_over_limit": 1})
    assert "browser – CPU s" in waited
    assert waited.endswith("waited 60.2 s for a quiet machine and started over the "
                           "campaign's limit")
    assert words({**row, "cpu_busy": None}) is None  # a store made before the columns


def test_a_campaigns_report_has_the_section_and_its_csv(tmp_path):
    from analysis import analyse, synthetic

    trials = synthetic.campaign(sites=2, networks=["dsl"], runs=3, seed=1)
    quic = trials["setting"].isin(["quic", "quic-bbr"])
    trials["cpu_busy"] = [0.7 if q else 0.4 for q in quic]
    page = report.write_report(analyse(trials), tmp_path).read_text(encoding="utf-8")
    assert 'id="machine-load"' in page and "ran on a busier machine than" in page
    table = pd.read_csv(tmp_path / "tables" / "machine-load.csv")
    assert set(table["busier"].dropna()) == {"quic", "quic-bbr"}
