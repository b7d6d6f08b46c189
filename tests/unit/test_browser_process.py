"""A Browsertime process stepping through a block, against a stand-in Browsertime (no browser)."""

import sys
import tempfile
from pathlib import Path

import pytest
from support.paths import SUPPORT

from testbed.errors import TestbedError
from testbed.measure import browsertime, trial_har
from testbed.measure.browser_process import BrowsertimeProcess

FAKE = SUPPORT / "fake_browsertime.py"


class Recorder:
    """A driver that records what the process asked for."""

    def __init__(self, stacks, broken=()):
        self.stacks, self.broken, self.calls = stacks, set(broken), []

    def prepare(self, k):
        self.calls.append(("prepare", k))
        if k in self.broken:
            raise RuntimeError("h3server did not start")

    def launch(self, k):
        self.calls.append(("launch", k))
        return ["--enable-quic"] if self.stacks[k] == "quic" else ["--disable-quic"]

    def before_load(self, k):
        self.calls.append(("before", k))

    def after_load(self, k, measured):
        self.calls.append(("after", k, measured))

    def warmed(self, k):
        self.calls.append(("warmed", k))


class FakeProcess(BrowsertimeProcess):
    def argv(self):
        return [sys.executable, str(FAKE), str(self.ctl), str(self.out), self.kinds]


def run(tmp_path, kinds, stacks=None, broken=(), timeout_s=30.0, visits=()):
    stacks = stacks or ["tcp"] * len(kinds)
    driver = Recorder(stacks, broken)
    opts = browsertime.BrowsertimeOptions(iterations=len(kinds), timeout_s=timeout_s,
                                          video=False)
    s = FakeProcess("https://a.test/", opts, tmp_path / "block", netns=None, wrap=[],
                    driver=driver, visits=visits)
    s.kinds = ",".join(kinds)
    return s.run(), driver


def test_each_trial_gets_its_own_flags_and_its_own_har(tmp_path):
    outcomes, driver = run(tmp_path, ["ok", "ok", "ok"], stacks=["tcp", "quic", "tcp"])
    assert [o.measured for o in outcomes] == [True, True, True]
    assert [trial_har.protocols(o.har) for o in outcomes] == [{"h2": 3}, {"h3": 3}, {"h2": 3}]
    assert [o.result[0]["browserScripts"]["timings"]["flags"] for o in outcomes] == [
        ["--disable-quic"], ["--enable-quic"], ["--disable-quic"]]
    # servers are readied for the next trial right after the previous load
    assert driver.calls == [("prepare", 0), ("launch", 0), ("before", 0), ("after", 0, True),
                            ("prepare", 1), ("launch", 1), ("before", 1), ("after", 1, True),
                            ("prepare", 2), ("launch", 2), ("before", 2), ("after", 2, True)]


def test_the_first_trial_s_servers_start_while_browsertime_starts(tmp_path):
    import time

    seen = []

    class Slow(Recorder):
        def prepare(self, k):
            if k == 0:  # Browsertime is already running: its launcher asks for flags
                deadline = time.monotonic() + 30
                while not (self.ctl / "launch-1").exists() and time.monotonic() < deadline:
                    time.sleep(0.01)
                seen.append((self.ctl / "launch-1").exists())
            super().prepare(k)

    driver = Slow(["tcp", "tcp"])
    opts = browsertime.BrowsertimeOptions(iterations=2, video=False)
    s = FakeProcess("https://a.test/", opts, tmp_path / "block", netns=None, wrap=[],
                    driver=driver)
    s.kinds = "ok,ok"
    driver.ctl = s.ctl
    outcomes = s.run()
    assert seen == [True] and [o.measured for o in outcomes] == [True, True]
    assert driver.calls[:2] == [("prepare", 0), ("launch", 0)]


def test_a_failed_load_fails_only_its_trial(tmp_path):
    outcomes, _ = run(tmp_path, ["ok", "fail", "ok"])
    assert [o.measured for o in outcomes] == [True, False, True]
    assert outcomes[1].browser_error and outcomes[1].har is None
    assert trial_har.protocols(outcomes[2].har) == {"h2": 3}


def test_a_browser_that_does_not_start_fails_only_its_trial(tmp_path):
    outcomes, _ = run(tmp_path, ["nostart", "ok"])
    assert outcomes[0].browser_error == "Chromium did not start"
    assert outcomes[1].measured


def test_servers_that_do_not_start_fail_the_trial_without_a_load(tmp_path):
    outcomes, driver = run(tmp_path, ["ok", "ok", "ok"], broken={1})
    assert [o.measured for o in outcomes] == [True, False, True]
    assert "h3server did not start" in outcomes[1].browser_error
    assert ("before", 1) not in driver.calls


def test_a_crash_fails_the_running_trial_and_returns_the_rest_unrun(tmp_path):
    outcomes, _ = run(tmp_path, ["ok", "crash", "ok"])
    assert outcomes[0].measured
    assert not outcomes[1].measured and "exited with status 3" in outcomes[1].browser_error
    assert outcomes[2] is None


def test_a_load_past_the_timeout_stops_the_block(tmp_path, monkeypatch):
    from testbed.measure import browser_process
    monkeypatch.setattr(browser_process, "LOAD_GRACE_S", 0.0)
    outcomes, _ = run(tmp_path, ["hang", "ok"], timeout_s=0.3)
    assert outcomes[0].timed_out and not outcomes[0].measured
    assert outcomes[1] is None


def test_browsertime_giving_up_on_a_load_past_the_timeout_is_a_timeout(tmp_path):
    outcomes, _ = run(tmp_path, ["giveup"], timeout_s=0.3)
    assert outcomes[0].timed_out and not outcomes[0].measured
    assert "exited with status 1" in outcomes[0].browser_error


def test_browsertime_exiting_within_the_timeout_is_not_a_timeout(tmp_path):
    outcomes, _ = run(tmp_path, ["giveup"], timeout_s=30.0)
    assert not outcomes[0].timed_out
    assert "exited with status 1" in outcomes[0].browser_error


def test_browsertime_keeps_its_temporary_files_in_the_block_folder(monkeypatch):
    from testbed.host import runstate
    runstate.release()
    with tempfile.TemporaryDirectory(prefix="tb", dir="/tmp") as d:  # shallow: see below
        short = Path(d)
        monkeypatch.setattr(runstate, "STATE_ROOT", short / "state")
        opts = browsertime.BrowsertimeOptions(iterations=1, video=False)
        s = BrowsertimeProcess("https://a.test/", opts, short / "block", netns=None, wrap=[],
                    driver=Recorder(["tcp"]))
        s._prepare()
        assert (short / "block" / "tmp").is_dir()
        assert f"TMPDIR={short / 'block' / 'tmp'}" in s.argv()


def test_a_block_folder_too_deep_for_chromium_s_socket_is_refused_before_browsertime_starts():
    # Chromium aborts at start ("Socket path too long") when its profile's
    # SingletonSocket path, under TMPDIR, exceeds a Unix socket's 107 characters.
    opts = browsertime.BrowsertimeOptions(iterations=1, video=False)
    ok = Path("/run/testbed/4194304/campaign/block-31-1764042000000")
    BrowsertimeProcess("https://a.test/", opts, ok, netns=None, wrap=[], driver=Recorder(["tcp"])).argv()
    deep = Path("/run/testbed/26829/bench-qzc_hcxg/session-True-60-capnetlog")
    s = BrowsertimeProcess("https://a.test/", opts, deep, netns=None, wrap=[], driver=Recorder(["tcp"]))
    with pytest.raises(TestbedError, match="too deep for Chromium's profile socket"):
        s.argv()


def _video_process(tmp_path, monkeypatch):
    from testbed.measure import browser_process as session_mod

    monkeypatch.setattr(session_mod.visual, "run", lambda video, log: {"SpeedIndex": 1})
    monkeypatch.setattr(session_mod.framerate, "check", lambda video, asked: None)
    opts = browsertime.BrowsertimeOptions(iterations=1, video=True)
    s = BrowsertimeProcess("https://a.test/", opts, tmp_path / "block", netns=None, wrap=[],
                driver=Recorder(["tcp"]))
    s._prepare()
    (s.out / "pages" / "video").mkdir(parents=True)
    return s


def test_the_video_is_linked_into_root_s_folder(tmp_path, monkeypatch):
    from testbed.measure.browser_process import Outcome

    s = _video_process(tmp_path, monkeypatch)
    (s.out / "pages" / "video" / "1.mp4").write_bytes(b"video")
    o = Outcome(index=0)
    s._start_visual(o, 1)
    s._join_visual()
    assert o.video == s.visual_dir / "video-1.mp4" and o.video.read_bytes() == b"video"
    assert o.visual == {"SpeedIndex": 1}
    s.remove()


def test_a_video_over_the_rate_asked_fails_its_visual_metrics(tmp_path, monkeypatch):
    from testbed.measure import browser_process as session_mod
    from testbed.measure.browser_process import Outcome

    s = _video_process(tmp_path, monkeypatch)
    monkeypatch.setattr(session_mod.framerate, "check",
                        lambda video, asked: f"video: 180.0 fps recorded, {asked} asked")
    (s.out / "pages" / "video" / "1.mp4").write_bytes(b"video")
    o = Outcome(index=0)
    s._start_visual(o, 1)
    s._join_visual()
    assert o.visual_error == "video: 180.0 fps recorded, 60 asked" and o.visual is None
    s.remove()


def test_a_video_that_is_a_symlink_is_neither_linked_nor_analysed(tmp_path, monkeypatch):
    from testbed.measure.browser_process import Outcome

    canary = tmp_path / "canary"
    canary.write_text("root only")
    s = _video_process(tmp_path, monkeypatch)
    (s.out / "pages" / "video" / "1.mp4").symlink_to(canary)
    o = Outcome(index=0)
    s._start_visual(o, 1)
    assert o.video is None and o.visual is None
    assert "video not usable" in o.visual_error
    assert list(s.visual_dir.iterdir()) == []
    s.remove()


def test_a_warm_visit_warms_up_before_its_measured_load(tmp_path):
    outcomes, driver = run(tmp_path, ["ok", "ok"], visits=["warm", "first"])
    assert [o.measured for o in outcomes] == [True, True]
    # the warm-up ends (warmed) between the servers' first read and the measured load
    assert driver.calls == [("prepare", 0), ("launch", 0), ("before", 0), ("warmed", 0),
                            ("after", 0, True), ("prepare", 1), ("launch", 1), ("before", 1),
                            ("after", 1, True)]
    assert outcomes[0].warm_up_s is not None and outcomes[1].warm_up_s is None
    ctl = tmp_path / "block" / "ctl"
    import json
    go = json.loads((ctl / "go-1.json").read_text())
    assert go["warm"] == "https://a.test/" and go["check"].endswith("complete.js")
    assert "warm" not in json.loads((ctl / "go-2.json").read_text())
    assert json.loads((ctl / "measure-1.json").read_text()) == {"go": True}
    assert not (ctl / "measure-2.json").exists()


def test_a_failed_warm_up_fails_its_trial_unmeasured(tmp_path):
    outcomes, driver = run(tmp_path, ["warmfail", "ok"], visits=["warm", "warm"])
    assert [o.measured for o in outcomes] == [False, True]
    assert outcomes[0].browser_error == "warm-up load failed: net::ERR_FAILED"
    assert ("warmed", 0) not in driver.calls and ("warmed", 1) in driver.calls


class LoadProbe:
    """testbed.measure.load.Probe's stand-in: notes which control files were there at
    each reading."""

    def __init__(self, ctl):
        self.ctl, self.seen = ctl, []

    def quiet(self):
        self.seen.append(("quiet", sorted(p.name for p in self.ctl.iterdir())))

    def start(self, browser_pid):
        self.seen.append(("start", sorted(p.name for p in self.ctl.iterdir())))
        return "mark"

    def end(self, mark, waited=None):
        self.seen.append(("end", sorted(p.name for p in self.ctl.iterdir())))
        return f"load of {mark}"


def test_the_machine_is_read_right_before_go_and_right_after_done(tmp_path):
    driver = Recorder(["tcp", "tcp", "tcp"])
    opts = browsertime.BrowsertimeOptions(iterations=3, video=False)
    s = FakeProcess("https://a.test/", opts, tmp_path / "block", netns=None, wrap=[],
                    driver=driver, visits=["first", "warm", "first"])
    s.probe = LoadProbe(s.ctl)
    s.kinds = "ok,ok,fail"
    outcomes = s.run()
    assert [o.load for o in outcomes] == ["load of mark"] * 3  # a failed load too
    events = s.probe.seen
    assert [e for e, _ in events] == ["quiet", "start", "end",
                                      "quiet", "start", "start", "end",  # warm: again
                                      "quiet", "start", "end"]
    _, start, end = events[:3]
    assert "ready-1.json" in start[1] and "go-1.json" not in start[1]
    assert "done-1.json" not in start[1] and "done-1.json" in end[1]
    assert "warmed-2.json" in events[5][1] and "measure-2.json" not in events[5][1]
