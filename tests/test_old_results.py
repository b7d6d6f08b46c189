"""Results written before trial ids and folders used `+` (`site|network|protocol|run`)
stay readable: report, export and compare read them, compare matches them with
new-form results, and a campaign resumes into them without measuring a stored
trial again. The old-form folders are made here the way the earlier code left
them: the same store and files, with `|` in every trial_id and folder name."""

from __future__ import annotations

import io
import json
import sqlite3
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from analysis import synthetic
from analysis.schema import OLD_SEPARATOR, SEPARATOR, trial_id
from testbed.campaign import config
from testbed.cli import cli

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scripted_campaign import ScriptedRunner


def old_id(site, network, protocol, run) -> str:
    return OLD_SEPARATOR.join((site, network, protocol, str(run)))


def to_old_form(out: Path) -> set[str]:
    """Rewrite a results folder as the earlier code wrote it: `|` ids, rows and folders."""
    db = sqlite3.connect(out / "trials.sqlite")
    try:
        with db:
            db.execute("UPDATE trials SET trial_id = replace(trial_id, ?, ?)",
                       (SEPARATOR, OLD_SEPARATOR))
        ids = {r[0] for r in db.execute("SELECT trial_id FROM trials")}
    finally:
        db.close()
    if (out / "trials").is_dir():
        for folder in (out / "trials").iterdir():
            folder.rename(folder.with_name(folder.name.replace(SEPARATOR, OLD_SEPARATOR)))
    return ids


def stored(out: Path) -> set[str]:
    db = sqlite3.connect(f"file:{out / 'trials.sqlite'}?mode=ro", uri=True)
    try:
        return {r[0] for r in db.execute("SELECT trial_id FROM trials")}
    finally:
        db.close()


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """(old, new): one synthetic campaign as an old-form and as a new-form results
    folder; the old one has trial folders with a HAR for two trials."""
    base = tmp_path_factory.mktemp("results")
    trials = synthetic.campaign(sites=2, networks=["dsl"], runs=6, seed=3)
    old, new = base / "old", base / "new"
    synthetic.write_folder(trials, new)
    synthetic.write_folder(trials, old)
    ids = to_old_form(old)
    assert all(OLD_SEPARATOR in i for i in ids)
    for t in sorted(ids)[:2]:
        (old / "trials" / t).mkdir(parents=True)
        (old / "trials" / t / "browsertime.har.gz").write_bytes(b"har")
    return old, new


def test_report_reads_old_results_and_links_their_folders(pair, tmp_path):
    old, _ = pair
    done = CliRunner().invoke(cli, ["report", str(old), "--out", str(tmp_path / "r")])
    assert done.exit_code == 0, done.output
    page = (tmp_path / "r" / "trials.html").read_text()
    first = min(stored(old))
    assert first.replace(OLD_SEPARATOR, "%7C") + "/browsertime.har.gz" in page
    assert page.count(">HAR</a>") == 2


def test_export_keeps_old_trial_ids(pair, tmp_path):
    old, _ = pair
    done = CliRunner().invoke(cli, ["export", str(old), "--csv", "-"])
    assert done.exit_code == 0, done.output
    df = pd.read_csv(io.StringIO(done.output))
    assert set(df["trial_id"]) == stored(old)
    assert len(df) == 2 * 1 * 5 * 6


def test_compare_matches_old_and_new_results_by_their_columns(pair):
    old, new = pair
    assert not stored(old) & stored(new)  # no trial_id in common
    done = CliRunner().invoke(cli, ["compare", str(old), str(new)])
    assert done.exit_code == 0, done.output
    # the same trials under both forms: every site verdict compared, all agree
    assert "agreement: 100.0% of 108 site verdicts" in done.output  # 6 pairs x 9 metrics x 2


def test_a_campaign_resumes_into_old_results(tmp_path):
    c = tmp_path / "c.toml"
    c.write_text('sites = ["local-news"]\nnetworks = ["dsl"]\nprotocols = ["tcp", "quic"]\n'
                 "runs = 1\nretries = 0\n")
    out = tmp_path / "out"
    assert ScriptedRunner(config.load(c), out).run() == {"ok": 2, "failed": 0}
    old = to_old_form(out)
    assert old == {old_id("local-news", "dsl", p, 0) for p in ("tcp", "quic")}

    again = ScriptedRunner(config.load(c), out)
    assert again.run(runs=2) == {"ok": 2, "failed": 0}  # only run 1: run 0 is stored
    new = {trial_id("local-news", "dsl", p, 1) for p in ("tcp", "quic")}
    assert stored(out) == old | new
    assert {p.name for p in (out / "trials").iterdir()} == old | new
    for t in new:
        assert json.loads((out / "trials" / t / "trial.json").read_text())["row"]["trial_id"] == t
    assert ScriptedRunner(config.load(c), out).run(runs=2) == {"ok": 0, "failed": 0}
    assert stored(out) == old | new
