"""A campaign kept small and resumed elsewhere: `testbed checkpoint` copies the store and
manifest out of a results folder while its runner holds it; `testbed run --resume-from`
begins a new results folder with those rows and measures only the rest. The runner is
the real one with scripted page loads (tests/support/scripted_campaign.py)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.paths import ROOT
from support.scripted_campaign import ScriptedRunner
from support.scripted_results import PLANNED, SCRIPTED, assert_consistent, stored, write_campaign

from testbed.campaign.plan import config
from testbed.campaign.store import reference
from testbed.cli import cli
from testbed.errors import InputError


def test_checkpoint_while_the_runner_holds_the_folder(tmp_path):
    campaign, out, gate = write_campaign(tmp_path), tmp_path / "out", tmp_path / "gate"
    gate.mkdir()
    first = subprocess.Popen([sys.executable, SCRIPTED, str(campaign), str(out), str(gate)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        while not (gate / "waiting").exists():  # the first block stored, the lock held
            assert first.poll() is None, first.stderr.read()
            time.sleep(0.05)
        done = CliRunner().invoke(cli, ["checkpoint", str(out), "--out", str(tmp_path / "ref")])
        assert done.exit_code == 0, done.output
        (gate / "go").touch()
        _, err = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert first.returncode == 0, err
    ref = tmp_path / "ref"
    kept = stored(ref)
    assert 0 < len(kept) < len(PLANNED) and kept <= PLANNED  # the rows stored by then
    assert sorted(p.name for p in ref.iterdir()) == ["manifest.json", "trials.sqlite"]
    assert json.loads((ref / "manifest.json").read_text())["campaign"]["name"] == "c"
    db = sqlite3.connect(ref / "trials.sqlite")
    try:  # one self-contained file: no WAL
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    finally:
        db.close()
    assert_consistent(out)  # the runner's folder as it would be without the checkpoint


def test_resume_from_a_checkpoint_measures_only_the_rest(tmp_path):
    campaign = config.load(write_campaign(tmp_path))
    first = tmp_path / "first"
    ScriptedRunner(config.narrowed(campaign, protocols=("quic",)), first).run()
    ref = tmp_path / "reference"
    c = reference.checkpoint(first, ref)
    assert c == {"trials": 2, "ok": 2, "failed": 0, "connections": 0}
    fresh = tmp_path / "fresh"
    stats = ScriptedRunner(campaign, fresh).run(resume_from=ref)
    assert stats == {"ok": 2, "failed": 0}  # the tcp trials only
    assert stored(fresh) == PLANNED
    for t in PLANNED:
        files = sorted(p.name for p in (fresh / "trials" / t).iterdir())
        if "+quic+" in t:
            assert files == ["SEEDED"], files
        else:  # measured here: its files as any trial's
            assert "trial.json" in files and "SEEDED" not in files, files
    sessions = json.loads((fresh / "manifest.json").read_text())["sessions"]
    assert [("seeded_from" in s) for s in sessions] == [False, True, False]
    # the seeded rows are the checkpoint's, byte for byte
    rows = {r[0]: r for r in sqlite3.connect(fresh / "trials.sqlite").execute(
        "SELECT * FROM trials WHERE setting = 'quic'")}
    assert rows == {r[0]: r for r in sqlite3.connect(ref / "trials.sqlite").execute(
        "SELECT * FROM trials")}
    # a second resume into a folder that has a store: refused, nothing changed
    before = stored(fresh)
    with pytest.raises(InputError, match="already has a store"):
        ScriptedRunner(campaign, fresh).run(resume_from=ref)
    assert stored(fresh) == before
    # the resumed folder reports as any results folder
    done = CliRunner().invoke(cli, ["report", str(fresh), "--out", str(tmp_path / "rep")])
    assert done.exit_code == 0, done.output


def test_resume_refuses_another_campaign_and_changed_content(tmp_path):
    campaign = config.load(write_campaign(tmp_path, runs=1))
    first = tmp_path / "first"
    ScriptedRunner(campaign, first).run()
    ref = tmp_path / "reference"
    reference.checkpoint(first, ref)
    doc = json.loads((ref / "manifest.json").read_text())
    other = tmp_path / "other.toml"
    other.write_text((tmp_path / "c.toml").read_text())
    with pytest.raises(InputError, match="holds campaign 'c', not 'other'"):
        ScriptedRunner(config.load(other), tmp_path / "o").run(resume_from=ref)
    assert not (tmp_path / "o" / "trials.sqlite").exists()
    # a recording whose content differs from the one the kept trials were measured with
    for s in doc["sessions"]:
        for r in s["recordings"].values():
            r["manifest_sha256"] = "0" * 64
            r["content_sha256"] = "1" * 64
    (ref / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(InputError, match="has other content"):
        ScriptedRunner(campaign, tmp_path / "n").run(resume_from=ref)
    assert not (tmp_path / "n").exists()


NEWS = ROOT / "recordings" / "local-news"


def rebuilt_news(folder: Path, url: str | None = None) -> Path:
    """local-news in `folder`, as another build of it by the same code writes it: another
    recording time, other Date headers, the exchanges in another order (or, with `url`,
    other content)."""
    site = folder / "local-news"
    shutil.rmtree(site, ignore_errors=True)
    shutil.copytree(NEWS, site)
    doc = json.loads((NEWS / "manifest.json").read_text())
    doc["recorded_at"] = "2030-01-02T03:04:05Z"
    for x in doc["exchanges"]:
        x["response_headers"] = [[k, "Wed, 02 Jan 2030 03:04:06 GMT" if k == "date" else v]
                                 for k, v in x["response_headers"]]
    doc["exchanges"].reverse()
    if url is not None:
        doc["url"] = url
    (site / "manifest.json").write_text(json.dumps(doc, indent=2))
    return site


def news_campaign(tmp_path: Path, runs: int = 1) -> Path:
    shutil.copytree(NEWS, tmp_path / "recs" / "local-news", dirs_exist_ok=True)
    p = tmp_path / "c.toml"
    p.write_text(f'sites = ["recs/local-news"]\nnetworks = ["dsl"]\nprotocols = ["tcp", "quic"]\n'
                 f"runs = {runs}\nretries = 0\n")
    return p


def test_resume_takes_another_build_of_the_same_recording(tmp_path):
    """Another build of a recording (other manifest.json bytes, the same content digest)
    continues the kept trials; other content is refused."""
    path = news_campaign(tmp_path)
    first = tmp_path / "first"
    ScriptedRunner(config.load(path), first).run()
    kept = json.loads((first / "manifest.json").read_text())["sessions"][0]["recordings"]
    ref = tmp_path / "reference"
    reference.checkpoint(first, ref)
    before = (tmp_path / "recs" / "local-news" / "manifest.json").read_bytes()
    site = rebuilt_news(tmp_path / "recs")
    assert (site / "manifest.json").read_bytes() != before
    path.write_text(path.read_text().replace("runs = 1", "runs = 2"))
    ScriptedRunner(config.load(path), tmp_path / "n").run(resume_from=ref)
    assert stored(tmp_path / "n") == PLANNED
    now = json.loads((tmp_path / "n" / "manifest.json").read_text())["sessions"][-1]
    assert now["recordings"]["local-news"]["manifest_sha256"] != kept["local-news"][
        "manifest_sha256"]
    assert now["recordings"]["local-news"]["content_sha256"] == kept["local-news"][
        "content_sha256"]
    # other content under the same name
    rebuilt_news(tmp_path / "recs", url="https://www.other-news.test/")
    with pytest.raises(InputError, match="local-news has other content"):
        ScriptedRunner(config.load(path), tmp_path / "m").run(resume_from=ref)
    assert not (tmp_path / "m").exists()


def test_a_session_without_content_digests_keeps_the_file_rule(tmp_path):
    """A campaign begun before content digests were recorded resumes only with the very
    manifest.json it was measured with (`testbed checkpoint` can add the digests)."""
    path = news_campaign(tmp_path)
    first = tmp_path / "first"
    ScriptedRunner(config.load(path), first).run()
    doc = json.loads((first / "manifest.json").read_text())
    for s in doc["sessions"]:
        for r in s["recordings"].values():
            del r["content_sha256"]
    (first / "manifest.json").write_text(json.dumps(doc))
    rebuilt_news(tmp_path / "recs")
    with pytest.raises(InputError, match="local-news has other content"):
        ScriptedRunner(config.load(path), first).run()


def test_checkpoint_refuses_a_symlinked_store(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (tmp_path / "elsewhere.sqlite").write_bytes(b"")
    (results / "trials.sqlite").symlink_to(tmp_path / "elsewhere.sqlite")
    done = CliRunner().invoke(cli, ["checkpoint", str(results), "--out", str(tmp_path / "r")])
    assert isinstance(done.exception, InputError)  # `testbed` prints its line, exit 2
    assert "trials.sqlite: the results folder's store: expected a file (not a symlink)" in str(
        done.exception)
    assert not (tmp_path / "r").exists()


def test_seed_refuses_a_trial_id_that_is_not_one_folder_name(tmp_path):
    from analysis import synthetic

    source = tmp_path / "kept"
    source.mkdir()
    rows = synthetic.trials([{"site": "s", "network": "dsl", "setting": "tcp", "run": 0}])
    synthetic.write_sqlite(rows, source / "trials.sqlite")
    db = sqlite3.connect(source / "trials.sqlite")  # a store someone edited
    with db:
        db.execute("UPDATE trials SET trial_id = '../escape'")
    db.close()
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(InputError, match="trial_id '../escape' is not one folder name"):
        reference.seed(out, source, "c")
    assert list(out.iterdir()) == [] and not (tmp_path / "escape").exists()


def _without_content_digests(results: Path) -> str:
    """Make results/manifest.json as a runner before content digests wrote it; the
    digest it had."""
    doc = json.loads((results / "manifest.json").read_text())
    had = doc["recordings"]["local-news"]["content_sha256"]
    for record in (doc, *doc["sessions"]):
        for r in record["recordings"].values():
            del r["content_sha256"]
    (results / "manifest.json").write_text(json.dumps(doc))
    return had


def test_checkpoint_gives_older_sessions_the_digest_of_the_very_same_file(tmp_path):
    path = news_campaign(tmp_path)
    first = tmp_path / "first"
    ScriptedRunner(config.load(path), first).run()
    had = _without_content_digests(first)
    ref = tmp_path / "ref"
    done = CliRunner().invoke(cli, ["checkpoint", str(first), "--out", str(ref)])
    assert done.exit_code == 0, done.output
    doc = json.loads((ref / "manifest.json").read_text())
    for record in (doc, *doc["sessions"]):
        assert record["recordings"]["local-news"]["content_sha256"] == had
    assert "content_sha256" not in (first / "manifest.json").read_text()  # results untouched
    # the kept campaign now resumes with another build of its recording
    rebuilt_news(tmp_path / "recs")
    path.write_text(path.read_text().replace("runs = 1", "runs = 2"))
    ScriptedRunner(config.load(path), tmp_path / "n").run(resume_from=ref)
    assert stored(tmp_path / "n") == PLANNED


def test_checkpoint_gives_no_digest_when_the_file_found_now_differs(tmp_path):
    path = news_campaign(tmp_path)
    first = tmp_path / "first"
    ScriptedRunner(config.load(path), first).run()
    _without_content_digests(first)
    rebuilt_news(tmp_path / "recs")  # the same content, but not the file that was measured
    ref = tmp_path / "ref"
    reference.checkpoint(first, ref)
    assert "content_sha256" not in (ref / "manifest.json").read_text()
    with pytest.raises(InputError, match="local-news has other content"):
        ScriptedRunner(config.load(path), tmp_path / "n").run(resume_from=ref)


def test_checkpoint_without_the_campaigns_recordings_keeps_the_manifest(tmp_path):
    path = news_campaign(tmp_path)
    first = tmp_path / "first"
    ScriptedRunner(config.load(path), first).run()
    _without_content_digests(first)
    shutil.rmtree(tmp_path / "recs")
    reference.checkpoint(first, tmp_path / "ref")
    assert (json.loads((tmp_path / "ref" / "manifest.json").read_text())
            == json.loads((first / "manifest.json").read_text()))
