"""What the benches' sessions do around each load (testbed.measure.browser_process.Driver)."""

from __future__ import annotations

from testbed.replay.env import ReplayEnv


class FixedDriver:
    """The same servers and Chromium flags for every load. With a recorder
    (testbed.measure.telemetry.Recorder) or captures (testbed.measure.captures.Captures),
    each load tells them what the campaign's BlockDriver tells them."""

    def __init__(self, env: ReplayEnv, extra: list[str], recorder=None, captures=None):
        self.env, self.extra, self.recorder, self.captures = env, extra, recorder, captures

    def prepare(self, k):
        pass

    def launch(self, k):
        flags = []
        if self.captures is not None:
            self.captures.start(k)
            flags = self.captures.chromium_flags(k)
        return [*self.env.chromium_flags(), *self.extra, *flags]

    def before_load(self, k):
        if self.recorder is not None:
            self.recorder.loading(True)

    def after_load(self, k, measured):
        if self.recorder is not None:
            self.recorder.loading(False)
