"""One results folder, one set of measuring parts (testbed.campaign.store.versions): a resumed
campaign whose stored trials other versions of the browser, servers, Mahimahi or kernel
measured stops before it touches the folder, names the manifest's key and both versions,
and runs with --mixed-versions (recorded) or after --rerun-runs of those trials. The
runner is the real one with scripted page loads (tests/support/scripted_campaign.py)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.scripted_campaign import ScriptedRunner
from support.scripted_results import PLANNED, stored, write_campaign

from testbed.campaign.plan import config
from testbed.campaign.store import reference, versions
from testbed.campaign.store.manifest import versions as this_machine
from testbed.cli import cli
from testbed.errors import InputError


def _older_server(out: Path, part: str = "h3server", value: str = "h3server 0.1.0") -> dict:
    """Say in the manifest that every session so far measured with another `part`."""
    path = out / "manifest.json"
    doc = json.loads(path.read_text())
    for s in [doc, *doc["sessions"]]:
        s["versions"][part] = value
    path.write_text(json.dumps(doc))
    return doc


def _unchanged(out: Path, doc: dict) -> None:
    assert json.loads((out / "manifest.json").read_text()) == doc
    assert stored(out) == PLANNED


def test_resuming_with_another_server_is_refused_and_changes_nothing(tmp_path):
    campaign = config.load(write_campaign(tmp_path))
    out = tmp_path / "out"
    ScriptedRunner(campaign, out).run()
    assert ScriptedRunner(campaign, out).run() == {"ok": 0, "failed": 0}  # same versions
    doc = _older_server(out)
    with pytest.raises(InputError) as e:
        ScriptedRunner(campaign, out).run()
    line = str(e.value)
    assert f"{out / 'manifest.json'}: sessions[0].versions.h3server: 4 stored trials were " \
           "measured with 'h3server 0.1.0', this machine has" in line, line
    assert "--mixed-versions" in line and "--rerun-runs" in line and "\n" not in line
    _unchanged(out, doc)


def test_another_browser_is_refused_and_a_dry_run_is_not(tmp_path):
    campaign = write_campaign(tmp_path)
    out = tmp_path / "out"
    ScriptedRunner(config.load(campaign), out).run()
    doc = _older_server(out, "chromium", "Chromium 1.0")
    runner = ScriptedRunner(config.load(campaign), out)
    with pytest.raises(InputError, match=r"versions\.chromium: 4 stored trials"):
        runner.run()
    # through the command as a user meets it (the check comes before any root-only step)
    done = CliRunner().invoke(cli, ["run", str(campaign), "--out", str(out), "--dry-run"])
    assert done.exit_code == 0, done.output  # a dry run measures nothing: not refused,
    said = [line for line in done.output.splitlines() if "versions.chromium" in line]
    assert len(said) == 1 and said[0].startswith("a resume here is refused"), done.output
    done = CliRunner().invoke(cli, ["run", str(campaign), "--out", str(out), "--dry-run",
                                    "--json"])
    assert done.exit_code == 0, done.output  # but it says so
    (line,) = json.loads(done.output)["version_differences"]
    assert "sessions[0].versions.chromium: 4 stored trials" in line
    _unchanged(out, doc)


def test_mixed_on_purpose_is_recorded(tmp_path):
    campaign = config.load(write_campaign(tmp_path, runs=3))
    out = tmp_path / "out"
    ScriptedRunner(config.load(write_campaign(tmp_path, runs=2)), out).run()
    _older_server(out)
    stats = ScriptedRunner(campaign, out).run(mixed_versions=True)
    assert stats == {"ok": 2, "failed": 0}
    session = json.loads((out / "manifest.json").read_text())["sessions"][-1]
    assert len(session["mixed_versions"]) == 1
    assert "versions.h3server: 4 stored trials" in session["mixed_versions"][0]
    # the next resume names the earlier sessions only: the mixed session's own
    # trials were measured with this machine's versions
    with pytest.raises(InputError, match=r"sessions\[0\]\.versions\.h3server: 4 stored"):
        ScriptedRunner(campaign, out).run()


def test_measuring_the_stored_trials_again_is_allowed(tmp_path):
    campaign = config.load(write_campaign(tmp_path))
    out = tmp_path / "out"
    ScriptedRunner(campaign, out).run()
    _older_server(out)
    with pytest.raises(InputError, match="2 stored trials"):  # run 1 stays: refused
        ScriptedRunner(campaign, out).run(rerun_runs=frozenset({0}))
    stats = ScriptedRunner(campaign, out).run(rerun_runs=frozenset({0, 1}))
    assert stats == {"ok": 4, "failed": 0}
    assert ScriptedRunner(campaign, out).run() == {"ok": 0, "failed": 0}


def test_a_checkpoint_measured_with_other_versions_is_refused(tmp_path):
    campaign = config.load(write_campaign(tmp_path))
    first = tmp_path / "first"
    ScriptedRunner(config.narrowed(campaign, protocols=("quic",)), first).run()
    ref = tmp_path / "ref"
    reference.checkpoint(first, ref)
    _older_server(ref, "kernel", "5.4.0")
    with pytest.raises(InputError, match=r"ref/manifest.json: sessions\[0\]\.versions\.kernel"):
        ScriptedRunner(campaign, tmp_path / "fresh").run(resume_from=ref)
    assert not (tmp_path / "fresh").exists()


def _store(folder: Path, rows: list[tuple]) -> None:
    con = sqlite3.connect(folder / "trials.sqlite")
    con.execute("CREATE TABLE trials (trial_id TEXT, started_at TEXT, run INT, site TEXT, "
                "network TEXT, protocol TEXT, status TEXT)")
    con.executemany("INSERT INTO trials VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    con.commit()
    con.close()


def test_each_trial_counts_for_the_session_that_measured_it(tmp_path):
    """Synthetic truth: session 0 (old server) stored 2 ok trials and 1 failed one,
    session 1 (this server) 3; a row older than every session, or with an unreadable
    time, belongs to none, as does a session that does not say when it started; a store without the client column is Chromium's."""
    now = {"h3server": "new", "chromium": "C", "testbed": "t2", "python": "3.12"}
    old = {**now, "h3server": "old", "testbed": "t1", "python": "3.11"}
    (tmp_path / "manifest.json").write_text(json.dumps({"sessions": [
        {"started_at": "2026-01-02T00:00:00+00:00", "versions": now},
        {"started_at": "2026-01-01T00:00:00+00:00", "versions": old},
        {"versions": {"h3server": "other"}},  # no time: measured nothing
        {"started_at": "2026-01-01T12:00:00+00:00"}]}))
    t0, t1 = "2026-01-01T10:00:00.000+00:00", "2026-01-02T10:00:00.000+00:00"
    _store(tmp_path, [("a", t0, 0, "s", "dsl", "quic", "ok"),
                      ("b", t0, 1, "s", "dsl", "quic", "ok"),
                      ("c", t0, 1, "s", "dsl", "tcp", "failed"),
                      ("d", t1, 2, "s", "dsl", "quic", "ok"),
                      ("e", "2025-01-01T00:00:00+00:00", 3, "s", "dsl", "quic", "ok"),
                      ("f", "garbage", 3, "s", "dsl", "quic", "ok")])
    lines = versions.differences(tmp_path, now)
    assert lines == [(f"{tmp_path / 'manifest.json'}: sessions[1].versions.h3server: 2 stored "
                     "trials were measured with 'old', this machine has 'new'")]
    forget = versions.Forgotten(frozenset({0}), ["s"], ["dsl"], ["quic"], ["chromium"],
                                "chromium")
    assert "1 stored trials" in versions.differences(tmp_path, now, forget)[0]
    forget = versions.Forgotten(frozenset({0, 1}), ["s"], ["dsl"], ["quic"], ["chromium"],
                                "chromium")
    assert versions.differences(tmp_path, now, forget) == []
    assert versions.differences(tmp_path, {**now, "h3server": ""}) == []  # cannot say
    assert versions.differences(tmp_path, old) == [
        (f"{tmp_path / 'manifest.json'}: sessions[0].versions.h3server: 1 stored trials "
        "were measured with 'new', this machine has 'old'")]


@pytest.mark.parametrize("manifest", ["", "{", "[]", '{"sessions": 3}', "\xff",
                                      '{"sessions": ["not a session"]}'])
def test_a_manifest_that_is_not_one_is_refused_naming_it(tmp_path, manifest):
    (tmp_path / "manifest.json").write_text(manifest, errors="surrogateescape")
    _store(tmp_path, [("a", "2026-01-01T10:00:00+00:00", 0, "s", "dsl", "quic", "ok")])
    with pytest.raises(InputError, match=f"^{tmp_path / 'manifest.json'}: "):
        versions.differences(tmp_path, {"h3server": "new"})


@pytest.mark.timeout(60)  # a reader that waits on the FIFO fails, not hangs
def test_a_fifo_or_a_symlink_is_never_read(tmp_path):
    import os

    (tmp_path / "elsewhere.json").write_text(json.dumps({"sessions": []}))
    os.symlink(tmp_path / "elsewhere.json", tmp_path / "manifest.json")
    with pytest.raises(InputError, match="symlink"):
        versions.differences(tmp_path, {})
    os.unlink(tmp_path / "manifest.json")
    os.mkfifo(tmp_path / "manifest.json")  # a reader that waited on it would hang here
    with pytest.raises(InputError, match="manifest.json"):
        versions.differences(tmp_path, {})
    (tmp_path / "none").mkdir()
    assert versions.differences(tmp_path / "none", {}) == []  # no manifest: nothing to say


@pytest.mark.timeout(60)  # a reader that waits on the FIFO fails, not hangs
def test_a_store_that_is_a_fifo_or_a_symlink_is_refused(tmp_path):
    import os

    (tmp_path / "manifest.json").write_text(json.dumps({"sessions": [
        {"started_at": "2026-01-01T00:00:00+00:00", "versions": {"h3server": "old"}}]}))
    other = tmp_path / "other"
    other.mkdir()
    _store(other, [("a", "2026-01-01T10:00:00+00:00", 0, "s", "dsl", "quic", "ok")])
    os.symlink(other / "trials.sqlite", tmp_path / "trials.sqlite")
    with pytest.raises(InputError, match="trials.sqlite: expected a campaign store"):
        versions.differences(tmp_path, {"h3server": "new"})
    os.unlink(tmp_path / "trials.sqlite")
    os.mkfifo(tmp_path / "trials.sqlite")  # sqlite would wait on it for a writer
    with pytest.raises(InputError, match="trials.sqlite: expected a campaign store"):
        versions.differences(tmp_path, {"h3server": "new"})


def test_the_measuring_parts_are_the_manifests():
    assert set(versions.MEASURING) < set(this_machine())


def test_sessions_with_the_same_other_version_make_one_line(tmp_path):
    now = {"kernel": "6.18.44-fc-v657", "h3server": "h3server 0.1.1"}
    old = {"kernel": "6.18.44-fc-v669", "h3server": "h3server 0.1.0"}
    (tmp_path / "manifest.json").write_text(json.dumps({"sessions": [
        {"started_at": f"2026-01-0{d}T00:00:00+00:00", "versions": old} for d in (1, 2, 3)]}))
    _store(tmp_path, [(f"t{d}{k}", f"2026-01-0{d}T10:00:00+00:00", k, "s", "dsl", "quic", "ok")
                      for d in (1, 3) for k in range(d)])
    assert versions.differences(tmp_path, now) == [
        f"{tmp_path / 'manifest.json'}: sessions[0].versions.{part}: 4 stored trials were "
        f"measured with {old[part]!r} (in 2 sessions), this machine has {now[part]!r}"
        for part in ("kernel", "h3server")]
