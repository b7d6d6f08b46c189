"""One Browsertime process measuring a block of trials on one page.

    process = BrowsertimeProcess(url, opts, workdir, netns=topo.client.name, wrap=shells,
                      driver=driver)
    outcomes = process.run()        # one Outcome per trial, in order

Browsertime runs `-n len(block)` iterations, each in a fresh Chromium profile,
as the testbed user inside the network's Mahimahi shells and an Xvfb of its
own. The runner (`driver`) steps it trial by trial through files in a control
folder, so servers and settings can change between iterations while the same
Browsertime process, shells and X display stay up:

    launch-N     the launcher (Chromium's stand-in) is starting browser N,
                 answered by flags-N.json (driver.launch(k): the trial's
                 Chromium flags; driver.prepare(k) readied its servers
                 after the previous load, or while Browsertime started)
    ready-N      the browser is up (preScript); driver.before_load(k), the
                 previous trial's visual metrics finished, then go-N.json
    warmed-N     a warm visit (visits[k] == "warm"): go-N.json named the page,
                 the preScript loaded it once unmeasured, cleared the HTTP
                 cache and closed the connections (hooks/pre.mjs: Chromium's
                 chrome.benchmarking, Firefox's privileged script);
                 driver.warmed(k), then measure-N.json lets the measured load go
    done-N       the load was measured (postScript, with Browsertime's
                 result); driver.after_load(k), visual metrics start on the
                 video in the background, while Browsertime stops the browser

With a `probe` (testbed.measure.load) the machine's load is read right before
go-N (after a bounded wait for a quiet machine, before driver.before_load) and
right after done-N (before visual metrics start): the trial's Outcome.load. A
warm visit's window starts again at measure-N.

Files (see testbed.host.safefs): the block's folder is root's (0750, group
testbed: no other account enters it) and holds what root writes (complete.js,
browsertime.log opened by root, visual/ with the video links and visualmetrics
logs); ctl/, browsertime/ (Browsertime's results, the screen recording) and
tmp/ (TMPDIR and HOME of Browsertime, chromedriver, geckodriver, the browser
and Xvfb: their profiles and caches) are the testbed user's alone (0700), and
everything started in them runs with umask 077, so what the browser shows is
no other account's to read while the trial runs. Root writes into ctl/ only
with safefs.write_at and reads what the user wrote there and in browsertime/
without following a symlink.

An iteration that never reports done (navigation failed, browser crashed) is
seen at the next launch or when Browsertime exits; a load that takes longer
than the timeout stops the process. Trials the block never reached come back
as None, to be run again.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from testbed.errors import TestbedError
from testbed.host import chromium, enter, firefox, paths, proc, safefs
from testbed.measure import browsertime, framerate, trial_har, visual
from testbed.measure.load import Load, Mark, Probe, Waited

log = logging.getLogger(__name__)

POLL_S = 0.005
START_S = 120.0
"""Longest wait for a browser to start or a launch to happen."""
LOAD_GRACE_S = 60.0
"""A load still running this long after the trial's timeout (Browsertime's own
timeouts should have ended it) stops the block."""
EXIT_S = 120.0
"""Longest wait for Browsertime to write its files and exit after the last trial."""
SOCKET_PATH_MAX = 107
"""Longest path of a Unix socket (sun_path, 108 bytes with its NUL). Chromium's
profile, made by chromedriver in TMPDIR, holds one: Chromium aborts at start
("Socket path too long") when TMPDIR is too deep."""
SINGLETON = "/org.chromium.Chromium.XXXXXX/SingletonSocket"


class Driver(Protocol):
    """What the runner does around each trial of a block (k: 0-based trial index)."""

    def prepare(self, k: int) -> None:
        """Make trial k's servers ready: for the first trial while Browsertime starts
        (before it launches a browser), right after the previous load for the others
        (while Browsertime stops that browser). An exception fails trial k (its
        browser is not let start)."""

    def launch(self, k: int) -> list[str] | dict:
        """Trial k's Chromium flags, or under Firefox the Firefox launcher's message
        (its preferences and trust: ReplayEnv.firefox_launch); its servers are ready."""

    def before_load(self, k: int) -> None:
        """Just before trial k's page load starts."""

    def after_load(self, k: int, measured: bool) -> None:
        """Just after trial k's load ended (measured or not)."""

    def warmed(self, k: int) -> None:
        """A warm visit's unmeasured load ended, its measured load is about to start
        (only called for trials whose visit is warm)."""


@dataclass(frozen=True)
class Kept:
    """What is kept of a trial once its block ended (set by whoever runs the block)."""

    files: Mapping[str, bytes | Path]
    """The trial's files by name: their content, or a file staged to be moved in."""
    log: str | None = None
    """The block's Browsertime log, where it was copied to."""
    wall_s: float | None = None
    """Wall time of the trial within its block (see the campaign runner)."""


@dataclass
class Outcome:
    """What one trial of the block left behind."""

    index: int
    measured: bool = False
    result: list | dict | None = None
    """Browsertime's result of the iteration (from the postScript)."""
    window: dict | None = None
    """Why the page-complete check ended the measurement window (hooks/complete.js,
    through the postScript): {"end": "quiet" or "limit", "at": ms, "pending": [URL, ...],
    "pendingCount": N}; None when the page did not say."""
    har: dict | None = None
    video: Path | None = None
    visual: dict | None = None
    visual_error: str | None = None
    browser_error: str | None = None
    timed_out: bool = False
    warm_up_s: float | None = None
    """A warm visit: how long its unmeasured load took (to warmed-N)."""
    began: float = 0.0
    """time.monotonic() when the trial's browser was asked for."""
    launched: float | None = None
    """When the launcher announced the trial's browser (Browsertime started it)."""
    ready: float | None = None
    """When the browser was up (the preScript ran)."""
    load_began: float | None = None
    ended: float = 0.0
    kept: Kept | None = None
    load: Load | None = None
    """How busy the machine was during the load (the process's `probe`); None: no probe,
    or the load never started."""


def window_end(value: object) -> dict | None:
    """What the page said of why its window ended (hooks/complete.js), kept only in its
    own shape: the page is the recording's, so it may have written anything there (a huge
    object, other keys); None when it is not that shape."""
    if not isinstance(value, dict) or value.get("end") not in ("quiet", "limit"):
        return None
    at, count, pending = value.get("at"), value.get("pendingCount"), value.get("pending")
    if not isinstance(at, int | float) or not isinstance(count, int) \
            or not isinstance(pending, list):
        return None
    return {"end": value["end"], "at": at, "pendingCount": count,
            "pending": [u[:2000] for u in pending[:20] if isinstance(u, str)]}


def check_tmp_depth(tmp: Path) -> None:
    """TestbedError unless Chromium can make its profile's socket under tmp."""
    if len(str(tmp)) + len(SINGLETON) > SOCKET_PATH_MAX:
        raise TestbedError(
            f"{tmp}: too deep for Chromium's profile socket ({len(str(tmp))} characters, "
            f"at most {SOCKET_PATH_MAX - len(SINGLETON)}); use a shorter TESTBED_STATE_DIR "
            f"or folder name")


class BrowsertimeProcess:
    def __init__(self, url: str, opts: browsertime.BrowsertimeOptions, workdir: Path, *,
                 netns: str | None, wrap: Sequence[str], driver: Driver,
                 env: dict[str, str] | None = None, visits: Sequence[str] = (),
                 client: str = "chromium", hosts: Mapping[str, str] | None = None,
                 probe: Probe | None = None):
        self.url = url
        self.probe = probe
        """Reads how busy the machine is right before each go (after a bounded wait for
        it to be quiet, if it has a limit) and right after each done
        (testbed.measure.load); None: not read."""
        self._marks: dict[int, tuple[Mark, Waited | None, int]] = {}
        """Trial -> the probe's readings at its load's start, its wait, its launch."""
        self.client = client
        """chromium or firefox: the browser Browsertime drives."""
        self.hosts = dict(hosts or {})
        """Firefox: host -> IP, its /etc/hosts in the block's mount namespace."""
        self.visits = tuple(visits)
        """Each trial's visit, "first" (the default) or "warm" (see the module)."""
        self.opts = opts
        self.workdir = Path(workdir)
        self.netns = netns
        self.wrap = [str(a) for a in wrap]
        self.driver = driver
        self.env = dict(env or {})
        self.ctl = self.workdir / "ctl"
        self.out = self.workdir / "browsertime"
        self.log_path = self.workdir / "browsertime.log"
        self.tmp = self.workdir / "tmp"
        """TMPDIR and HOME of Browsertime, its drivers, the browser and Xvfb (their
        profiles, caches, Xauthority), removed with the block: chromedriver leaves
        each browser's profile behind."""
        self.visual_dir = self.workdir / "visual"
        self.check_path = self.workdir / "complete.js"
        self._ctl_fd: int | None = None
        self.returncode: int | None = None
        self._visual_thread: threading.Thread | None = None
        self._prepared: dict[int, str | None] = {}
        self._stopping = False

    # --- files ------------------------------------------------------------------
    def _prepare(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:  # the testbed user passes through to its folders
            paths.chown_to_user(self.workdir, group_only=True)
        self.workdir.chmod(0o750)
        safefs.check_root_dir(self.workdir)
        safefs.root_dir(self.visual_dir)
        for d in (self.ctl, self.out, self.tmp):  # Browsertime (the testbed user) writes here
            if os.geteuid() == 0:
                safefs.user_dir(d)  # 0700
            else:
                d.mkdir(mode=0o700)
        safefs.write_file(self.check_path, browsertime.complete_check(self.opts))
        if self.client == "firefox":
            safefs.write_file(self.workdir / "hosts", firefox.hosts_file(self.hosts))
            safefs.write_file(self.workdir / "resolv.conf", firefox.RESOLV_CONF)
        self._ctl_fd = safefs.open_dir(
            self.ctl, owner=paths.user().pw_uid if os.geteuid() == 0 else os.geteuid())

    def _put(self, name: str, data: dict) -> None:
        assert self._ctl_fd is not None
        safefs.write_at(self._ctl_fd, name, json.dumps(data))

    def _has(self, name: str) -> bool:
        return (self.ctl / name).exists()

    def _read(self, name: str) -> dict:
        """A JSON file the testbed user's hooks wrote in ctl/ (never through a symlink)."""
        return json.loads(safefs.read_user(self.ctl / name))

    def argv(self) -> list[str]:
        check_tmp_depth(self.tmp)
        bt = browsertime.argv(self.opts, self.url, self.out, self.check_path, self.client)
        x = [] if self.opts.headless else proc.python("-m", "testbed.measure.xvfb", "--",
                                                      interpreter=browsertime.PYTHON)
        inner = [*chromium.private_env(self.tmp), *x, *bt]
        env = {**browsertime.env(self.ctl, self.opts, self.client), **self.env}
        if "TESTBED_VIDEO_TOP" in env and (bad := browsertime.wrapper_problem()):
            raise TestbedError(f"the lean video pipeline's ffmpeg: {bad}")
        return enter.as_user([*self.wrap, *inner], netns=self.netns, env=env,
                             cwd=str(self.tmp), binds=self.binds())

    def binds(self) -> dict[str, Path]:
        """Firefox's names (it has no --host-resolver-rules): the block's own /etc/hosts
        and /etc/resolv.conf, in the mount namespace of its Browsertime only."""
        if self.client != "firefox":
            return {}
        return {"/etc/hosts": self.workdir / "hosts",
                "/etc/resolv.conf": self.workdir / "resolv.conf"}

    # --- the run ------------------------------------------------------------------
    def run(self) -> list[Outcome | None]:
        self._prepare()
        n = self.opts.iterations
        outcomes: list[Outcome | None] = [None] * n
        try:
            self._run_browsertime(outcomes)
        finally:
            if self._ctl_fd is not None:
                os.close(self._ctl_fd)
                self._ctl_fd = None
        self._attach_har(outcomes)
        return outcomes

    def _run_browsertime(self, outcomes: list[Outcome | None]) -> None:
        with proc.Background(self.argv(), log=self.log_path, grace=5.0) as bt:
            try:
                # the first trial's servers start while Browsertime starts (its first
                # browser waits for them: the launcher waits for its flags)
                self._prepare_trial(0)
                self._steps(bt, outcomes)
            finally:
                self._join_visual()
            deadline = time.monotonic() + EXIT_S
            while bt.alive() and time.monotonic() < deadline:
                time.sleep(0.05)
            if bt.alive():
                log.warning("Browsertime did not exit %.0f s after the last trial", EXIT_S)
            self.returncode = bt.stop()

    def _steps(self, bt: proc.Background, outcomes: list[Outcome | None]) -> None:
        launch = 1  # the next launch number the launcher will claim
        k = 0
        n = len(outcomes)
        while k < n:
            o = Outcome(index=k, began=time.monotonic())
            outcomes[k] = o
            # 1. the browser of iteration k+1 is launched: ready trial k, answer the flags
            if not self._wait(bt, lambda n=launch: self._has(f"launch-{n}"), START_S):
                self._fail_rest(bt, outcomes, k, "no browser launch")
                return
            error = self._prepared.get(k)
            if error is not None:  # the trial's servers did not start
                self._put(f"flags-{launch}.json", {"abort": error})
                launch += 1
                o.browser_error = f"replay did not start: {error}"
                self._end(o, measured=False)
                k += 1
                continue
            o.launched = time.monotonic()
            flags = self.driver.launch(k)
            self._put(f"flags-{launch}.json",
                      flags if isinstance(flags, dict) else {"flags": flags})
            launch += 1
            # 2. the browser is up (ready) or the iteration failed (next launch / exit)
            it = k + 1
            if not self._wait(bt, lambda i=it, n=launch: self._has(f"ready-{i}.json") or
                              self._has(f"launch-{n}"), START_S):
                self._fail_rest(bt, outcomes, k, "Chromium did not start")
                return
            if not self._has(f"ready-{it}.json"):
                o.browser_error = "Chromium did not start"
                self._end(o, measured=False)
                k += 1
                continue
            o.ready = time.monotonic()
            self._join_visual()
            waited = self.probe.quiet() if self.probe is not None else None
            self.driver.before_load(k)
            self._load_start(k, launch - 1, waited)
            o.load_began = time.monotonic()
            if self._warm(k):
                self._put(f"go-{it}.json", {"go": True, "warm": self.url,
                                            "client": self.client,
                                            "check": str(self.check_path),
                                            "timeout_ms": int(self.opts.timeout_s * 1000)})
                went = self._warm_up(bt, o, it, launch)
                if went is None:  # the block ended
                    self._fail_rest(bt, outcomes, k + 1, "block ended early", mark=False)
                    return
                if not went:
                    k += 1
                    continue
            else:
                self._put(f"go-{it}.json", {"go": True})
            # 3. the load ends: measured (done) or failed (next launch / exit) or too slow
            limit = self.opts.timeout_s + LOAD_GRACE_S
            if not self._wait(bt, lambda i=it, n=launch: self._has(f"done-{i}.json") or
                              self._has(f"launch-{n}"), limit):
                alive = bt.alive()
                self._stopping = True
                # Still loading, or Browsertime gave up on a load that ran past the
                # timeout (it exits after its last iteration's failed load).
                o.timed_out = alive or time.monotonic() - o.load_began >= self.opts.timeout_s
                o.browser_error = None if alive else self._exit_reason(bt)
                self._end(o, measured=False)
                self._fail_rest(bt, outcomes, k + 1, "block ended early", mark=False)
                return
            self._load_end(o)  # before visual metrics start on the video
            if self._has(f"done-{it}.json"):
                done = self._read(f"done-{it}.json")
                o.result = done.get("result")
                o.window = window_end(done.get("window"))
                self._start_visual(o, it)
                self._end(o, measured=True)
            else:
                o.browser_error = self._iteration_error(it) or "page load failed"
                o.timed_out = (time.monotonic() - o.load_began) >= self.opts.timeout_s
                self._end(o, measured=False)
            k += 1

    def _warm(self, k: int) -> bool:
        return k < len(self.visits) and self.visits[k] == "warm"

    def _warm_up(self, bt: proc.Background, o: Outcome, it: int, launch: int) -> bool | None:
        """A warm visit's unmeasured load: True when it ended and the measured load was
        let go; False when it failed (the trial ended unmeasured); None when it did not
        end in time or Browsertime exited (the block ends)."""
        limit = self.opts.timeout_s + LOAD_GRACE_S
        if not self._wait(bt, lambda: self._has(f"warmed-{it}.json") or
                          self._has(f"launch-{launch}"), limit):
            alive = bt.alive()
            self._stopping = True
            o.timed_out = alive
            o.browser_error = ("warm-up load: " + self._exit_reason(bt)) if not alive else None
            self._end(o, measured=False)
            return None
        if not self._has(f"warmed-{it}.json"):
            o.browser_error = "warm-up load failed: " + (self._iteration_error(it) or "no report")
            self._end(o, measured=False)
            return False
        warmed = self._read(f"warmed-{it}.json")
        if warmed.get("error"):
            self._put(f"measure-{it}.json", {"abort": "warm-up failed"})
            o.browser_error = f"warm-up load failed: {str(warmed['error'])[:200]}"
            self._end(o, measured=False)
            return False
        assert o.load_began is not None  # set when the warm-up load began
        o.warm_up_s = round(time.monotonic() - o.load_began, 3)
        self.driver.warmed(o.index)
        if o.index in self._marks:  # the measured load is read from here
            _, waited, launch_n = self._marks[o.index]
            self._load_start(o.index, launch_n, waited)
        o.load_began = time.monotonic()
        self._put(f"measure-{it}.json", {"go": True})
        return True

    def _load_start(self, k: int, launch: int, waited: Waited | None) -> None:
        """Trial k's load starts: the probe's readings (its browser: the pid the
        launcher wrote in launch-N)."""
        if self.probe is None:
            return
        self._marks[k] = (self.probe.start(self._browser_pid(launch)), waited, launch)

    def _load_end(self, o: Outcome) -> None:
        """Trial o's load ended (once; nothing if it never started)."""
        started = self._marks.pop(o.index, None)
        if self.probe is not None and started is not None:
            o.load = self.probe.end(started[0], started[1])

    def _browser_pid(self, launch: int) -> int | None:
        """The pid the launcher wrote in launch-N (it execs the browser: the browser's)."""
        try:
            text = safefs.read_user(self.ctl / f"launch-{launch}").decode(errors="replace")
        except (OSError, safefs.UnsafePath):
            return None
        return int(text.strip()) if text.strip().isdigit() else None

    def _end(self, o: Outcome, measured: bool) -> None:
        self._load_end(o)
        o.measured = measured
        o.ended = time.monotonic()
        self.driver.after_load(o.index, measured)
        if o.index + 1 < self.opts.iterations and not self._stopping:
            self._prepare_trial(o.index + 1)

    def _prepare_trial(self, k: int) -> None:
        try:
            self.driver.prepare(k)
            self._prepared[k] = None
        except Exception as e:  # noqa: BLE001 - one trial's failure ends that trial only
            log.warning("trial %d of the block: replay did not start: %s", k, e)
            self._prepared[k] = str(e).splitlines()[0] if str(e) else type(e).__name__

    def _wait(self, bt: proc.Background, cond, limit: float) -> bool:
        """Poll cond until true (True), or Browsertime exits / limit passes (False)."""
        deadline = time.monotonic() + limit
        while not cond():
            if not bt.alive():
                return cond()
            if time.monotonic() > deadline:
                return False
            time.sleep(POLL_S)
        return True

    def _fail_rest(self, bt: proc.Background, outcomes: list[Outcome | None], k: int,
                   why: str, mark: bool = True) -> None:
        """Stop Browsertime; trial k failed (if mark) and later ones were not run."""
        self._stopping = True
        reason = self._exit_reason(bt) if not bt.alive() else why
        bt.stop()
        o = outcomes[k] if mark and k < len(outcomes) else None
        if o is not None:
            o.browser_error = reason
            self._end(o, measured=False)
            k += 1
        for j in range(k, len(outcomes)):
            outcomes[j] = None

    def _exit_reason(self, bt: proc.Background) -> str:
        code = bt.proc.poll() if bt.proc else None
        # Browsertime's own errors, or the phase gate's (on sparse links) when no start
        # of the shells came out in phase
        tail = [line for line in bt.tail(40).splitlines()
                if "ERROR" in line or line.startswith("phasegate:")]
        detail = tail[-1].split("ERROR:", 1)[-1].strip()[:200] if tail else ""
        return f"Browsertime exited with status {code}" + (f" ({detail})" if detail else "")

    def _iteration_error(self, it: int) -> str | None:
        """The last ERROR line Browsertime logged (its message for a failed iteration)."""
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return None
        errors = [line.split("ERROR:", 1)[-1].strip() for line in lines if "ERROR:" in line]
        return errors[-1][:200] if errors else None

    # --- visual metrics ---------------------------------------------------------------
    def _start_visual(self, o: Outcome, it: int) -> None:
        if not self.opts.video or self.opts.headless or not self.opts.visual_metrics:
            return
        videos = sorted(self.out.glob(f"**/video/{it}.mp4"))
        if not videos:
            o.visual_error = "no video recorded"
            return
        # A link of our own in root's folder (Browsertime removes its video folder when
        # it ends), to the file itself, never through a symlink the testbed user made.
        try:
            fd = safefs.open_user(videos[0], beneath=self.out)
        except (OSError, safefs.UnsafePath) as e:
            o.visual_error = f"video not usable: {e}"
            return
        video = self.visual_dir / f"video-{it}.mp4"
        try:
            want = os.fstat(fd)
            os.link(videos[0], video, follow_symlinks=False)
            got = video.lstat()  # in root's folder: what was linked, whatever the user did
            if (got.st_dev, got.st_ino) != (want.st_dev, want.st_ino):
                video.unlink()
                o.visual_error = "video not usable: replaced while it was linked"
                return
        finally:
            os.close(fd)
        o.video = video

        def work():
            o.visual_error = framerate.check(video, self.opts.video_fps)
            if o.visual_error:
                return
            try:
                o.visual = visual.run(video, self.visual_dir / f"visualmetrics-{it}.log")
            except visual.VisualMetricsError as e:
                o.visual_error = str(e)

        self._visual_thread = threading.Thread(target=work, name=f"visualmetrics-{it}",
                                               daemon=True)
        self._visual_thread.start()

    def _join_visual(self) -> None:
        if self._visual_thread is not None:
            self._visual_thread.join()
            self._visual_thread = None

    # --- the HAR ---------------------------------------------------------------------
    def _attach_har(self, outcomes: list[Outcome | None]) -> None:
        try:
            har = json.loads(safefs.read_user(self.out / "browsertime.har"))
        except FileNotFoundError:
            return
        for o in outcomes:
            if o is not None and o.measured:
                o.har = trial_har.iteration(har, o.index + 1)

    def remove(self) -> None:
        if self._ctl_fd is not None:
            os.close(self._ctl_fd)
            self._ctl_fd = None
        safefs.rmtree(self.workdir)
