"""A campaign runner with everything real but the page loads: the campaign file, its
labels, the results folder (lock, store, trial folders, manifest) are the runner's
own; each block's loads return made-up ok outcomes, without namespaces, servers or
a browser.

    python tests/support/scripted_campaign.py CAMPAIGN OUT [GATE] [--varied]

GATE (a folder): before the second block's loads, create GATE/waiting and wait
for GATE/go, so a test can act while the runner holds its results folder.
Exit status and error line as `testbed run`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from types import SimpleNamespace

from testbed.campaign.plan import config
from testbed.campaign.run.rows import TrialRecord
from testbed.campaign.runner import Runner
from testbed.campaign.store import commit
from testbed.errors import TestbedError
from testbed.host import runstate
from testbed.measure.browser_process import Kept, Outcome

NOISE = {"dsl": 0.01, "lte": 0.03, "da2gc": 0.08, "mss": 0.2}
"""varied_plt's coefficient of variation per network (others: 0.05)."""


def varied_plt(trial) -> float:
    """A made-up PLT that depends on the trial id alone (the same on every run of a test,
    after any resume): 500 ms x a per-setting factor, with noise per network (NOISE)."""
    import random

    rng = random.Random(trial.id)
    base = 500 * (1.1 if trial.setting == "tcp" else 1.0) * (2 if trial.site != "local-news" else 1)
    return max(1.0, round(rng.gauss(base, base * NOISE.get(trial.network, 0.05)), 1))


def outcome(k: int, stack: str, ok: bool = True, plt: float = 500) -> Outcome:
    """A scripted page load of trial k: measured (ok) or failed as Browsertime fails it."""
    proto = "h3" if stack == "quic" else "h2"
    return Outcome(
        index=k, measured=ok, began=0.0, ended=1.0,
        browser_error=None if ok else "UrlLoadError",
        result=[{"browserScripts": {"timings": {
            "pageTimings": {"pageLoadTime": plt, "domContentLoadedTime": 90},
            "loadEventEnd": plt, "ttfb": 40,
            "paintTiming": {"first-paint": 95, "first-contentful-paint": 97},
            "largestContentfulPaint": {"startTime": 310}}}}],
        har={"log": {"pages": [], "entries": [
            {"request": {"url": "https://a.test/"}, "response": {"httpVersion": proto}}]}},
        visual={"FirstVisualChange": 100, "LastVisualChange": 400, "VisualComplete85": 300,
                "SpeedIndex": 250})


class ScriptedRunner(Runner):
    """Runner.run as it is, but no sysctl check, calibration, topology or browser."""

    def __init__(self, campaign, out, gate: Path | None = None, before_block=None,
                 failing: frozenset[str] = frozenset(), varied: bool = False,
                 pause_s: float = 0.0):
        super().__init__(campaign, out)
        self.varied = varied
        """PLTs from varied_plt (else 500 ms each)."""
        self.pause_s = pause_s
        """Each scripted load takes this long (so a test can kill the runner mid-block)."""
        self.gate = gate
        self.before_block = before_block
        self.failing = failing
        """Settings whose page loads fail (as Browsertime fails a load)."""
        self.blocks = 0

    def check_settings(self) -> None:
        pass

    def calibrate(self, workdir: Path) -> None:
        self.calibrations = {name: {} for name in self.networks}

    def _open_site(self, r, stack):
        return SimpleNamespace(applied={}, broken=None, close=lambda: None)

    def _measure_block(self, block, servers, work, progress, task):
        self.blocks += 1
        if self.before_block is not None:
            self.before_block(self.blocks)
        if self.gate is not None and self.blocks == 2:
            (self.gate / "waiting").touch()
            while not (self.gate / "go").exists():
                time.sleep(0.05)
        out = []
        for k, t in enumerate(block.trials):
            setting = self.settings[t.setting]
            time.sleep(self.pause_s)
            o = outcome(k, setting.stack, ok=t.setting not in self.failing,
                        plt=varied_plt(t) if self.varied else 500)
            o.kept = Kept(files=commit.collect(o, self.out, self.campaign.keep_video))
            out.append((t, o, TrialRecord(setting, before={}, after={})))
        return out


def main(argv: list[str]) -> None:
    varied = "--varied" in argv  # PLTs from varied_plt, 20 ms a load
    argv = [a for a in argv if a != "--varied"]
    campaign, out = argv[0], Path(argv[1])
    gate = Path(argv[2]) if len(argv) > 2 else None
    try:
        stats = ScriptedRunner(config.load(campaign), out, gate, varied=varied,
                               pause_s=0.02 if varied else 0.0).run()
    except TestbedError as e:
        print(f"testbed: error: {e}", file=sys.stderr)
        sys.exit(e.exit_code)
    finally:
        runstate.release()
    print(f"{stats['ok']} ok, {stats['failed']} failed", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
