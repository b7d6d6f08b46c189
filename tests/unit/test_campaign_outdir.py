"""The results folder: one runner at a time, store rows and trial folders that agree,
a disk that fills up mid-campaign. The runner is the real one with scripted page
loads (tests/support/scripted_campaign.py); the second runner is the real `testbed run`."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.paths import TESTBED
from support.scripted_campaign import ScriptedRunner
from support.scripted_results import PLANNED, SCRIPTED, assert_consistent, stored, write_campaign

from testbed.campaign.plan import config
from testbed.campaign.store import outdir
from testbed.campaign.store.store import Row, Store
from testbed.errors import InputError


def test_a_second_runner_into_the_same_folder_stops_at_once(tmp_path):
    campaign, out, gate = write_campaign(tmp_path), tmp_path / "out", tmp_path / "gate"
    gate.mkdir()
    first = subprocess.Popen([sys.executable, SCRIPTED, str(campaign), str(out), str(gate)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        while not (gate / "waiting").exists():  # the first block is stored; the lock held
            assert first.poll() is None, first.stderr.read()
            time.sleep(0.05)
        before = {p: p.stat().st_mtime_ns for p in (out / "trials").iterdir()}
        second = subprocess.run([TESTBED, "run", str(campaign), "--out", str(out)],
                                capture_output=True, text=True, timeout=120, check=False)
        lines = second.stderr.strip().splitlines()
        assert second.returncode == 2, second.stderr
        assert lines == [f"testbed: error: {out}: locked by testbed run pid {first.pid}"]
        assert {p: p.stat().st_mtime_ns for p in (out / "trials").iterdir()} == before
        (gate / "go").touch()
        _, err = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert first.returncode == 0, err
    assert assert_consistent(out) == PLANNED
    # the lock went with its holder: the next runner gets in (nothing left to run)
    again = subprocess.Popen([sys.executable, SCRIPTED, str(campaign), str(out)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, err = again.communicate(timeout=120)
    assert again.returncode == 0 and "0 ok" in err, err
    assert (out / outdir.LOCK).read_text().strip() == str(again.pid)


def test_a_trial_already_stored_is_refused_without_touching_its_folder(tmp_path):
    r = ScriptedRunner(config.load(write_campaign(tmp_path)), tmp_path / "out")
    (tmp_path / "out" / "trials").mkdir(parents=True)
    row = Row("local-news+dsl+tcp+0", "c", "local-news", "dsl", "tcp", 0, "ok", None, 1,
              "2026-01-01T00:00:00+00:00", 1.0, *[1.0] * 6, 1, 1, 0, None, 24.0, 4)
    with Store(tmp_path / "out" / "trials.sqlite") as store:
        r._store(store, row, {"trial.json": b"first"})
        with pytest.raises(sqlite3.IntegrityError):
            r._store(store, row, {"trial.json": b"second"})
        assert store.finished() == {row.trial_id}
    folder = tmp_path / "out" / "trials" / row.trial_id
    assert (folder / "trial.json").read_bytes() == b"first"
    assert [p.name for p in folder.parent.iterdir()] == [row.trial_id]


def test_reconcile_removes_folders_without_rows_and_refuses_rows_without_folders(tmp_path):
    trials = tmp_path / "trials"
    (trials / "a").mkdir(parents=True)
    (trials / "b").mkdir()
    (trials / ".c.tmp").mkdir()
    (trials / ".video-1-2.mp4").write_bytes(b"x")
    assert outdir.reconcile(trials, {"a"}) == [".c.tmp", ".video-1-2.mp4", "b"]
    assert [p.name for p in trials.iterdir()] == ["a"]
    with pytest.raises(InputError, match="1 stored trials have no folder"):
        outdir.reconcile(trials, {"a", "z"})


@pytest.fixture
def small_fs(tmp_path):
    """A 2 MB tmpfs (root only), unmounted after the test."""
    m = tmp_path / "fs"
    m.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(m)], check=True)
    try:
        yield m
    finally:
        subprocess.run(["umount", "-l", str(m)], check=False)


def fill(path: Path) -> None:
    with open(path, "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass


def test_a_disk_full_mid_campaign_stops_cleanly_and_resumes(tmp_path, small_fs):
    campaign = config.load(write_campaign(tmp_path))
    out, filler = small_fs / "out", small_fs / "filler"

    def fill_before_second_block(n: int) -> None:
        if n == 2:
            fill(filler)

    r = ScriptedRunner(campaign, out, before_block=fill_before_second_block)
    with pytest.raises(InputError) as e:
        r.run()
    assert "no space left" in str(e.value) and "resume" in str(e.value)
    assert len(str(e.value).splitlines()) == 1
    first = assert_consistent(out)
    assert len(first) == 2  # the first block's trials; the failed one left nothing behind
    filler.unlink()
    r = ScriptedRunner(campaign, out)
    assert r.run() == {"ok": 2, "failed": 0}
    assert assert_consistent(out) == PLANNED


def test_a_narrowed_campaign_runs_only_its_trials_and_the_whole_one_resumes(tmp_path):
    """`testbed run --setting quic` (config.narrowed) measures only quic's trials; the
    whole campaign run into the same folder afterwards measures only the rest."""
    campaign = config.load(write_campaign(tmp_path, runs=1))
    out = tmp_path / "out"
    stats = ScriptedRunner(config.narrowed(campaign, protocols=("quic",)), out).run()
    assert stats["ok"] == 1 and stored(out) == {"local-news+dsl+quic+0"}
    stats = ScriptedRunner(campaign, out).run()
    assert stats["ok"] == 1
    assert stored(out) == {"local-news+dsl+quic+0", "local-news+dsl+tcp+0"}


def test_narrowing_by_site_keeps_the_sites_a_glob_found(tmp_path, bundled_only):
    p = tmp_path / "c.toml"
    p.write_text('sites = ["*"]\nnetworks = ["dsl", "lte"]\nprotocols = ["tcp"]\nruns = 1\n')
    campaign = config.load(p)
    assert {e for e in config.resolve(campaign)["sites"]} == {"local-news", "gallery"}
    part = config.narrowed(campaign, sites=("gallery",), networks=("lte",))
    assert list(config.resolve(part)["sites"]) == ["gallery"]
    assert part.networks == ("lte",) and part.protocols == ("tcp",)
    assert list(config.resolve(campaign)["sites"]) == ["gallery", "local-news"]  # unchanged


def statuses(out: Path) -> dict[str, str]:
    db = sqlite3.connect(f"file:{out / 'trials.sqlite'}?mode=ro", uri=True)
    try:
        return dict(db.execute("SELECT trial_id, status FROM trials"))
    finally:
        db.close()


def test_retry_failed_runs_the_failed_trials_again_and_keeps_the_rest(tmp_path):
    """`testbed run --retry-failed` (Runner.run(retry_failed=True)): the stored failed
    trials are forgotten, folders too, and measured again; the ok ones are kept."""
    campaign = config.load(write_campaign(tmp_path, runs=1))
    out = tmp_path / "out"
    stats = ScriptedRunner(campaign, out, failing=frozenset({"quic"})).run()
    assert (stats["ok"], stats["failed"]) == (1, 1)
    assert statuses(out) == {"local-news+dsl+tcp+0": "ok", "local-news+dsl+quic+0": "failed"}
    assert ScriptedRunner(campaign, out).run()["ok"] == 0  # a failed trial is stored: done
    stats = ScriptedRunner(campaign, out).run(retry_failed=True)
    assert (stats["ok"], stats["failed"]) == (1, 0)
    assert statuses(out) == {"local-news+dsl+tcp+0": "ok", "local-news+dsl+quic+0": "ok"}
    assert sorted(p.name for p in (out / "trials").iterdir()) == sorted(statuses(out))
