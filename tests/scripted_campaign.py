"""A campaign runner with everything real but the page loads: the campaign file, its
labels, the results folder (lock, store, trial folders, manifest) are the runner's
own; each block's loads return made-up ok outcomes, without namespaces, servers or
a browser.

    python tests/scripted_campaign.py CAMPAIGN OUT [GATE]

GATE (a folder): before the second block's loads, create GATE/waiting and wait
for GATE/go, so a test can act while the runner holds its results folder.
Exit status and error line as `testbed run`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from testbed.campaign import commit, config
from testbed.campaign.rows import TrialRecord
from testbed.campaign.runner import Runner
from testbed.errors import TestbedError
from testbed.host import runstate
from testbed.measure.session import Kept, Outcome


def outcome(k: int, stack: str, ok: bool = True) -> Outcome:
    """A scripted page load of trial k: measured (ok) or failed as Browsertime fails it."""
    proto = "h3" if stack == "quic" else "h2"
    return Outcome(
        index=k, measured=ok, began=0.0, ended=1.0,
        browser_error=None if ok else "UrlLoadError",
        result=[{"browserScripts": {"timings": {
            "pageTimings": {"pageLoadTime": 500, "domContentLoadedTime": 90},
            "loadEventEnd": 500, "ttfb": 40,
            "paintTiming": {"first-paint": 95, "first-contentful-paint": 97},
            "largestContentfulPaint": {"startTime": 310}}}}],
        har={"log": {"pages": [], "entries": [
            {"request": {"url": "https://a.test/"}, "response": {"httpVersion": proto}}]}},
        visual={"FirstVisualChange": 100, "LastVisualChange": 400, "VisualComplete85": 300,
                "SpeedIndex": 250})


class ScriptedRunner(Runner):
    """Runner.run as it is, but no sysctl check, calibration, topology or browser."""

    def __init__(self, campaign, out, gate: Path | None = None, before_block=None,
                 failing: frozenset[str] = frozenset()):
        super().__init__(campaign, out)
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

    def _session(self, block, servers, work, progress, task):
        self.blocks += 1
        if self.before_block is not None:
            self.before_block(self.blocks)
        if self.gate is not None and self.blocks == 2:
            (self.gate / "waiting").touch()
            while not (self.gate / "go").exists():
                time.sleep(0.05)
        out = []
        for k, t in enumerate(block.trials):
            setting = self.settings[t.protocol]
            o = outcome(k, setting.stack, ok=t.protocol not in self.failing)
            o.kept = Kept(files=commit.collect(o, self.out, self.campaign.keep_video))
            out.append((t, o, TrialRecord(setting, before={}, after={})))
        return out


def main(argv: list[str]) -> None:
    campaign, out = argv[0], Path(argv[1])
    gate = Path(argv[2]) if len(argv) > 2 else None
    try:
        stats = ScriptedRunner(config.load(campaign), out, gate).run()
    except TestbedError as e:
        print(f"testbed: error: {e}", file=sys.stderr)
        sys.exit(e.exit_code)
    finally:
        runstate.release()
    print(f"{stats['ok']} ok, {stats['failed']} failed", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
