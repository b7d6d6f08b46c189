"""What the benches' sessions do around each load (testbed.measure.session.Driver)."""

from __future__ import annotations

from testbed.replay.env import ReplayEnv


class FixedDriver:
    """The same servers and Chromium flags for every load; nothing between loads."""

    def __init__(self, env: ReplayEnv, extra: list[str]):
        self.env, self.extra = env, extra

    def prepare(self, k):
        pass

    def launch(self, k):
        return [*self.env.chromium_flags(), *self.extra]

    def before_load(self, k):
        pass

    def after_load(self, k, measured):
        pass
