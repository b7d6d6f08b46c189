"""Browsertime's command line for a block of trials, and where its parts live.

One Browsertime process measures a block of consecutive trials on one page
(`-n N`, a fresh Chromium profile per iteration). What differs from trial to
trial is not on this command line: the Chromium flags come from the launcher
(testbed/measure/launcher.py, given as Chrome's binary) and the pre/post
scripts (hooks/) hold each load until the runner has the servers ready. See
testbed/measure/browser_process.py.

Tuned for little overhead without touching the measurement (bench/trial_overhead
shows PLT agreeing with bare Browsertime's):
- pageCompleteCheck (hooks/complete.js): the load event plus `settle_ms` (300) of
  network quiet (at most `settle_max_ms` after the load), instead of
  Browsertime's default of a 5 s start wait, 8 s after the load and a 1.5 s
  poll; asked every `poll_ms` until the page is loading, then awaited in the
  page (one WebDriver call per load: a WebDriver call into the loading page
  every 0.1 s made PLT higher and noisier than bare Browsertime's);
- a 200 ms orange start frame (Browsertime: 800 on desktop) and no pause
  between one iteration's browser and the next (Browsertime: a fixed 2 s);
- video recorded losslessly as Browsertime does, but not re-encoded
  (`videoParams.convert`), no timer burnt in, no filmstrip; visual metrics
  are computed by the runner on that video (testbed/measure/visual.py) while
  no load runs, with Browsertime's own script and arguments;
- video at VIDEO_FPS (60) frames per second instead of Browsertime's 30, so
  the visual metrics move in 16.7 ms steps, finer than one RTT of the
  paper's DSL profile (24 ms); the browser's own paint timings (1 ms steps)
  come with every result regardless.
- the video pipeline (`video_pipeline`, docs/networks.md): `lean` (the default)
  puts video_bin/ first on Browsertime's PATH, so its recorder's ffmpeg is
  testbed.measure.ffmpeg_wrapper: the tab strip is not recorded and a frame that
  did not change is not written; `legacy` records as Browsertime does (patched
  with the output rate, setup/browsertime/patch-browsertime.mjs).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from testbed.host import firefox
from testbed.host.enter import SAFE_PATH
from testbed.host.paths import BROWSERTIME_PACKAGE as PACKAGE
from testbed.host.paths import NODE, PYTHON

BROWSERTIME = PACKAGE / "bin/browsertime.js"
VISUALMETRICS = PACKAGE / "visualmetrics/visualmetrics-portable.py"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
HOOKS = Path(__file__).resolve().parent / "hooks"
LAUNCHER = Path(__file__).resolve().parent / "launcher.py"
FIREFOX_LAUNCHER = Path(__file__).resolve().parent / "firefox_launcher.py"
CLIENTS = ("chromium", "firefox")
"""The browsers a trial can run in (a campaign's `client`)."""

VIDEO_FPS = 60
"""Frames per second of the screen recording (Browsertime's default: 30): the visual
metrics' resolution is one frame, 1000 / VIDEO_FPS ms. A campaign's `video_fps`."""

PIPELINES = ("lean", "legacy")
"""How the screen is recorded (a campaign's `video_pipeline`): `lean`, through
testbed.measure.ffmpeg_wrapper (the page's rows only, unchanged frames not written);
`legacy`, Browsertime's own command (every frame of the window at a constant rate)."""
VIDEO_BIN = Path(__file__).resolve().parent / "video_bin"
"""The lean pipeline's `ffmpeg` (a link to ffmpeg_wrapper.py), first on Browsertime's
PATH; root's, in a folder only root may write (checked: wrapper_problem)."""
TAB_STRIP_PX = {"chromium": 44}
"""Rows at the top of the window the lean pipeline does not record: Chromium's tab strip
(40 px at the testbed's 1366x768 window; its loading throbber changes every frame),
not its toolbar, so the first frame still shows where the orange page begins.
A browser not named here is recorded whole."""

# Replaced by the launcher with the trial's own rules; set here so that
# Browsertime does not add its own (it adds none when chrome.args has some).
PLACEHOLDER_RULES = "--host-resolver-rules=MAP * ~NOTFOUND"


@dataclass(frozen=True)
class BrowsertimeOptions:
    iterations: int
    """Trials in this block (one iteration each)."""
    timeout_s: float = 120.0
    """Longest a page may take to complete before the trial fails as a timeout."""
    settle_ms: int = 300
    """After the load event, wait until the network has been quiet this long..."""
    settle_max_ms: int = 5000
    """...but at most this long after the load event (the least `limit_ms` may be)."""
    needed: tuple[str, ...] = ()
    """The URLs the window waits for (testbed.measure.completeness.Needed.window)."""
    limit_ms: int | None = None
    """How long after the load event the window waits at most for `needed`
    (completeness.window_limit_ms); None: settle_max_ms."""
    poll_ms: int = 100
    """How often the page-complete check runs."""
    complete_in_page: bool = True
    """The page-complete check, once the page is loading, waits in the page (a promise
    WebDriver awaits) instead of answering false to be asked again every poll_ms
    (False: a WebDriver call into the loading page every poll_ms)."""
    viewport: str = "1366x768"
    """Browser window size (Browsertime's default)."""
    video: bool = True
    """Record the screen (needed for FVC, LVC, VC85 and SI)."""
    video_fps: int = VIDEO_FPS
    """Frames per second of that recording."""
    visual_metrics: bool = True
    """Compute the visual metrics on the recording (off: bench/noise's variant)."""
    headless: bool = False
    """Chromium headless, with no X server (and so no video): bench/noise's variant;
    trials run under Xvfb."""
    orange_ms: int = 200
    """How long the orange start frame shows before navigation (Browsertime: 800);
    the visual metrics find the load's start at its end."""
    video_cpus: str | None = None
    """Pin the screen recorder (ffmpeg) to these CPUs (a taskset list, e.g. "1") with one
    encoder thread; None: Browsertime's default (all CPUs, its thread count)."""
    browser_stop_ms: int = 0
    """Pause after the browser stopped, before the next starts (Browsertime: a fixed
    2000; made an option by setup/browsertime/patch-browsertime.mjs). None is needed:
    the next load waits for the next browser's start (about 0.8 s) anyway."""
    video_pipeline: str = "lean"
    """How the screen is recorded: one of PIPELINES."""
    start_settle_ms: int = 100
    """Pause after the browser showed its blank start page, before the preScript
    (Browsertime's timeToSettle, 100; at least 1: Browsertime reads 0 as 100)."""


@cache
def version() -> str:
    """The installed Browsertime's version (its package.json; `--version` prints the
    wrapper package's)."""
    try:
        return json.loads((PACKAGE / "package.json").read_text())["version"]
    except FileNotFoundError:
        return ""


def missing() -> str | None:
    """What is not installed, with the fix; None when everything is there."""
    for path, what in ((NODE, "Node 22"), (BROWSERTIME, "Browsertime"),
                       (VISUALMETRICS, "Browsertime's visual metrics")):
        if not path.exists():
            return f"{what} missing ({path}); run `make setup` (setup/setup.sh node)"
    for binary in (CHROMIUM, CHROMEDRIVER):
        if not Path(binary).exists():
            return f"{binary} missing; run `make setup` (apt: chromium chromium-driver)"
    return None


def complete_check(opts: BrowsertimeOptions) -> str:
    """The page-complete check script (hooks/complete.js) with this block's values."""
    text = (HOOKS / "complete.js").read_text()
    limit = opts.settle_max_ms if opts.limit_ms is None else max(opts.settle_max_ms,
                                                                   opts.limit_ms)
    values = {"SETTLE_MS": str(int(opts.settle_ms)), "LIMIT_MS": str(int(limit)),
              "TIMEOUT_MS": str(int(opts.timeout_s * 1000)),
              # The recording's URLs are somebody else's text: a JSON array of ASCII
              # strings is a JavaScript literal they cannot leave.
              "NEEDED": json.dumps(list(opts.needed), ensure_ascii=True),
              "IN_PAGE": "true" if opts.complete_in_page else "false"}
    # One pass, so that a URL holding a placeholder's name is not replaced in turn.
    return re.sub(r"\b(" + "|".join(values) + r")\b", lambda m: values[m.group(1)], text)


def browser_args(client: str) -> list[str]:
    """Browsertime's options that choose and start the browser (through its launcher)."""
    if client == "firefox":
        return ["--browser", "firefox",
                "--firefox.binaryPath", str(FIREFOX_LAUNCHER),
                "--firefox.geckodriverPath", str(firefox.GECKODRIVER),
                "--firefox.acceptInsecureCerts", "false",
                "--firefox.disableSafeBrowsing", "true",
                "--firefox.disableTrackingProtection", "true",
                "--firefox.includeResponseBodies", "none"]
    return ["--browser", "chrome",
            "--chrome.binaryPath", str(LAUNCHER),
            "--chrome.chromedriverPath", CHROMEDRIVER,
            "--chrome.ignoreCertificateErrors", "false",
            f"--chrome.args={PLACEHOLDER_RULES}",
            "--chrome.cdp.performance", "false"]


def argv(opts: BrowsertimeOptions, url: str, result_dir: Path, check: Path,
         client: str = "chromium") -> list[str]:
    """Browsertime's command line; `{display}` is filled in by testbed.measure.xvfb.

    check: the file holding complete_check(opts); client: chromium or firefox."""
    timeout_ms = int(opts.timeout_s * 1000)
    args = [
        str(NODE), str(BROWSERTIME),
        *browser_args(client),
        "-n", str(opts.iterations),
        "--resultDir", str(result_dir),
        "--useSameDir",
        "--viewPort", opts.viewport,
        *(["--headless", "true"] if opts.headless else ["--xvfbParams.display", "{display}"]),
        "--browserRestartTries", "1",
        "--retries", "0",
        "--preScript", str(HOOKS / "pre.mjs"),
        "--postScript", str(HOOKS / "post.mjs"),
        "--pageCompleteCheck", str(check),
        "--pageCompleteCheckStartWait", "1",  # 0 means Browsertime's 5000
        "--pageCompleteCheckPollTimeout", str(opts.poll_ms),
        "--timeouts.pageCompleteCheck", str(timeout_ms),
        "--timeouts.pageLoad", str(timeout_ms),
        "--timeouts.script", str(timeout_ms),
        "--orangeDesktopDelayTime", str(opts.orange_ms),
        "--browserStopDelay", str(opts.browser_stop_ms),
        "--timeToSettle", str(max(1, int(opts.start_settle_ms))),
        "--screenshot", "false",
    ]
    if opts.video and not opts.headless:
        args += ["--video", "true", "--visualMetrics", "false",
                 "--videoParams.framerate", str(int(opts.video_fps)),
                 "--videoParams.convert", "false", "--videoParams.addTimer", "false",
                 "--videoParams.createFilmstrip", "false"]
        if opts.video_cpus:
            args += ["--videoParams.taskset", opts.video_cpus, "--videoParams.threads", "1"]
    else:
        args += ["--video", "false", "--visualMetrics", "false"]
    return [*args, url]


def wrapper_problem(folder: Path = VIDEO_BIN) -> str | None:
    """Why the lean pipeline's ffmpeg may not be run (None: it may): the folder, the link,
    the wrapper it leads to and that file's folder must be root's and writable by root
    alone, as every program the testbed starts."""
    link = folder / "ffmpeg"
    target = link.resolve()
    for path, st_of in ((folder, os.stat), (link, os.lstat), (target, os.stat),
                        (target.parent, os.stat)):
        try:
            st = st_of(path)
        except OSError as e:
            return f"{path}: {e.strerror}"
        if st.st_uid != 0 or (path != link and st.st_mode & 0o022):
            return f"{path}: expected root's, writable by root alone"
    return None


def env(ctl_dir: Path, opts: BrowsertimeOptions, client: str = "chromium") -> dict[str, str]:
    """Environment for the Browsertime process (passed through testbed.host.enter)."""
    out = {
        "TESTBED_TRIAL_CTL": str(ctl_dir),
        "TESTBED_CHROMIUM": CHROMIUM,
        "TESTBED_FIREFOX": str(firefox.FIREFOX),
        "PYTHON": str(PYTHON),
    }
    if opts.video and not opts.headless and opts.video_pipeline == "lean":
        out["PATH"] = f"{VIDEO_BIN}:{SAFE_PATH}"
        out["TESTBED_VIDEO_TOP"] = str(TAB_STRIP_PX.get(client, 0))
    return out
