"""`testbed VERB --json` prints one JSON document on standard output (messages go to
standard error) for every verb that prints results. Run for real here: run
--dry-run, recording list/show, trials, trial, report, compare. The verbs that
need root and namespaces are run through their command with the measurement
replaced by canned observations: doctor (its checks), validate network (the probe
site and the profile's measurement); validate protocols and servers render canned
results through the function their --json prints (json_doc)."""

from __future__ import annotations

import json
import math
from contextlib import nullcontext
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.paths import ROOT

from analysis import synthetic
from testbed.campaign.store.store import Row as TrialRow
from testbed.campaign.store.store import Store
from testbed.cli import cli
from testbed.validate.verdict import Row


def parsed(args: list[str]):
    """stdout of `testbed ARGS` as JSON (exit 0 asked; stderr is allowed anything)."""
    done = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def two_campaigns(tmp_path_factory):
    d = tmp_path_factory.mktemp("json")
    for name, seed in (("a", 1), ("b", 2)):
        trials = synthetic.campaign(sites=3, networks=["dsl"], runs=12, seed=seed)
        synthetic.write_folder(trials, d / name)
    return d


def trial_row(trial_id: str) -> TrialRow:
    site, network, protocol, run = trial_id.split("+")
    return TrialRow(trial_id=trial_id, campaign="smoke", site=site, network=network,
                    setting=protocol, run=int(run), status="ok", reason=None, attempt=1,
                    started_at="", wall_s=1.0, plt_ms=900.0, fvc_ms=None, lvc_ms=None,
                    vc85_ms=None, si_ms=None, ttfb_ms=None, requests=None, bytes=None,
                    misses=None, http_versions=None, rtt_ms=24.0, origins=1)


def test_run_dry_run_json_narrowed_with_what_is_stored(tmp_path, bundled_only):
    out = tmp_path / "res"
    out.mkdir()
    with Store(out / "trials.sqlite") as store:
        store.add(trial_row("local-news+dsl+quic+0"))
        store.add(trial_row("local-news+dsl+tcp-plus+0"))  # stored, but narrowed away
    plan = parsed(["run", "smoke", "--dry-run", "--json", "--out", str(out),
                   "--setting", "quic", "--setting", "tcp"])
    assert [s["name"] for s in plan["settings"]] == ["tcp", "quic"]
    assert sorted(plan["order"]) == ["local-news+dsl+quic+0", "local-news+dsl+tcp+0"]
    assert plan["trials"] == 2 and plan["stored"] == 1
    assert plan["estimated_s"] > 0 and set(plan["per_network_s"]) == {"dsl"}
    text = CliRunner().invoke(cli, ["run", "smoke", "--dry-run", "--out", str(out),
                                    "--setting", "quic", "--setting", "tcp"])
    assert "trials: 1 x 1 x 2 x 1 = 2" in text.output
    assert "stored: 1 of these 2 trials are in the results; 1 to run" in text.output


def test_run_dry_run_json_without_a_store(tmp_path, bundled_only):
    plan = parsed(["run", "smoke", "--dry-run", "--json", "--out", str(tmp_path / "none")])
    assert plan["stored"] is None and plan["trials"] == 5


@pytest.mark.parametrize("option, name", [("--site", "nope"), ("--network", "lte"),
                                          ("--setting", "quic-bbr2")])
def test_run_narrowing_to_what_the_campaign_lacks_is_one_line(option, name, bundled_only,
                                                               capsys):
    err = one_line_error(["run", "smoke", "--dry-run", option, name], capsys)
    assert err.startswith(f"testbed: error: {option} {name}: expected one of the campaign's")


def test_run_json_only_with_dry_run(capsys):
    err = one_line_error(["run", "smoke", "--json"], capsys)
    assert err == ("testbed: error: --json: only with --dry-run (a campaign's results are "
                   "in its store)")


def one_line_error(args: list[str], capsys) -> str:
    """The one line `testbed ARGS` exits 2 with, nothing on stdout."""
    from testbed import cli as cli_mod

    with pytest.raises(SystemExit) as exit_:
        cli_mod.main(args)
    out, err = capsys.readouterr()
    assert exit_.value.code == 2 and out == "" and len(err.splitlines()) == 1, err
    return err.strip()


def test_recording_list_and_show_json():
    listed = parsed(["recording", "list", str(ROOT / "recordings"), "--json"])
    names = {r["name"] for r in listed["recordings"]}
    assert {"local-news", "gallery"} <= names and listed["figures"]["recordings"] == len(names)
    shown = parsed(["recording", "show", "local-news", "--json"])
    assert shown["name"] == "local-news" and shown["requests"] == 31
    assert sum(t["requests"] for t in shown["types"]) == 31
    assert sum(o["requests"] for o in shown["origins"]) == 31


def test_trials_lists_ids_and_status(two_campaigns):
    rows = parsed(["trials", str(two_campaigns / "a"), "--json"])
    assert len(rows) == 3 * 5 * 12 and {r["status"] for r in rows} <= {"ok", "failed"}
    runs = [int(r["trial_id"].rsplit("+", 1)[1]) for r in rows[:12]]
    assert runs == list(range(12))  # numerically: 2 before 10
    failed = [r for r in rows if r["status"] == "failed"]
    assert failed and all(r["reason"] for r in failed)
    text = CliRunner().invoke(cli, ["trials", str(two_campaigns / "a")])
    assert text.stdout.splitlines()[0] == f"{rows[0]['trial_id']}\tok"


def test_trial_json(two_campaigns, tmp_path):
    first = parsed(["trials", str(two_campaigns / "a"), "--json"])[0]["trial_id"]
    got = parsed(["trial", str(two_campaigns / "a"), first, "--json", "--no-filmstrip",
                  "--output", str(tmp_path / "t.html")])
    assert got["trial_id"] == first and got["row"]["status"] == "ok"
    assert got["page"] == str(tmp_path / "t.html") and (tmp_path / "t.html").is_file()


def test_report_json(two_campaigns, tmp_path):
    got = parsed(["report", str(two_campaigns / "a"), "--out", str(tmp_path / "rep"), "--json"])
    assert got["trials"] == 180 and got["ok"] + got["failed"] == 180
    assert got["baseline"] == "tcp" and isinstance(got["warnings"], list)
    from analysis.campaign.findings import VERDICTS

    assert set(got["findings"]) == set(VERDICTS)  # every verdict, counted (0 or more)
    assert sum(got["findings"].values()) > 0
    assert Path(got["report"]).is_file()


def test_compare_json(two_campaigns):
    got = parsed(["compare", str(two_campaigns / "a"), str(two_campaigns / "b"), "--json"])
    assert 0 <= got["score"] <= 1 and got["baseline"] == "tcp"
    assert got["summary"] and {"a", "b", "network", "metric"} <= set(got["summary"][0])
    assert got["written"] == []


def test_doctor_json_on_canned_checks(monkeypatch):
    from testbed.commands import doctor

    monkeypatch.setattr(doctor, "run_checks", lambda: [
        doctor.passed("root", "uid 0"), doctor.info("kernel", "6.1"),
        doctor.failed("nginx", "missing", "run make setup")])
    done = CliRunner().invoke(cli, ["doctor", "--json"])
    assert done.exit_code == 1  # a required check failed; the JSON is whole all the same
    rows = json.loads(done.stdout)
    assert [(r["name"], r["status"]) for r in rows] == [
        ("root", "PASS"), ("kernel", "INFO"), ("nginx", "FAIL")]


def test_validate_network_json_on_a_canned_measurement(monkeypatch):
    from testbed.emulate import calibrate
    from testbed.validate import network

    def canned(site, profile, probes, starts, recalibrate, update):
        cal = calibrate.Calibration.model_construct(
            profile=profile.name, delay_ms=11, reply_wait_ms=None, chain_offset_ms=0.5,
            measured_at="2026-11-26T00:00:00Z")
        return network.Report(profile, cal, [Row("RTT", "24 ms", "24.3 ms", True, "±1 ms"),
                                             Row("loss", "0 %", "0.0 %", True)], [], 3.0)

    monkeypatch.setattr(network, "ProbeSite", nullcontext)
    monkeypatch.setattr(network, "validate_profile", canned)
    got = parsed(["validate", "network", "dsl", "lte", "--json"])
    assert got["ok"] is True and [p["profile"] for p in got["profiles"]] == ["dsl", "lte"]
    assert got["profiles"][0]["rows"][0] == {
        "name": "RTT", "expected": "24 ms", "observed": "24.3 ms", "ok": True,
        "tolerance": "±1 ms", "hint": "", "group": "", "required": True, "figures": [],
        "verdict": "yes"}


@pytest.mark.parametrize("flag", [[], ["--recalibrate"]])
def test_validate_network_recalibrate_reaches_the_measurement(monkeypatch, flag):
    """`testbed validate network dsl --recalibrate` asks the measurement to calibrate
    again (the measurement itself takes minutes: canned here, it records what it was
    asked); without the flag it is not asked to."""
    from testbed.emulate import calibrate
    from testbed.validate import network

    asked = []

    def canned(site, profile, probes, starts, recalibrate, update):
        asked.append((profile.name, recalibrate))
        cal = calibrate.Calibration.model_construct(
            profile=profile.name, delay_ms=11, reply_wait_ms=None, chain_offset_ms=0.5,
            measured_at="2026-11-26T00:00:00Z")
        return network.Report(profile, cal, [Row("RTT", "24 ms", "24.3 ms", True)], [], 3.0)

    monkeypatch.setattr(network, "ProbeSite", nullcontext)
    monkeypatch.setattr(network, "validate_profile", canned)
    got = parsed(["validate", "network", "dsl", *flag, "--json"])
    assert got["ok"] is True
    assert asked == [("dsl", bool(flag))]


def test_validate_protocols_json_doc_on_canned_results():
    from testbed.formats.profiles import load_network, load_protocol
    from testbed.validate import protocols

    results = [protocols.Result(load_protocol("quic"), [Row("setting", "h3", "h3", True)]),
               protocols.Result(load_protocol("tcp"), [Row("cc", "cubic", "bbr", False)])]
    doc = json.loads(protocols.jsonout.dumps(
        protocols.json_doc(results, load_network("dsl"), 11, [Row("one BBR", ok=None)])))
    assert doc["ok"] is False and doc["settings"] == {"quic": True, "tcp": False}
    assert [(r["group"], r["name"], r["verdict"]) for r in doc["rows"]] == [
        ("quic", "setting", "yes"), ("tcp", "cc", "NO"), ("", "one BBR", "-")]


def test_validate_servers_json_doc_on_canned_results():
    from testbed.validate import servers

    results = {s: servers.StackResult(s, {10_000: [10.0, 12.0, math.nan]})
               for s in ("tcp", "quic")}
    rows = servers.rows(results, (10_000,), 0.05)
    doc = json.loads(servers.jsonout.dumps(servers.json_doc(
        results, rows, rtt_ms=10, rate_mbit=100, runs=3, max_gap=0.05)))
    assert doc["ok"] is True and doc["rtt_ms"] == 10
    assert doc["results"][0]["times_ms"] == {"10000": [10.0, 12.0, None]}  # NaN: null
    assert doc["rows"][0]["verdict"] == "yes"
