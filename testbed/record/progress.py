"""Progress of a long series of steps (sites to record, trials to run): the time
left, estimated from the mean time per step so far."""

from __future__ import annotations

import time


def hms(seconds: float) -> str:
    s = max(0, int(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class Eta:
    """Steps done out of `total`; `step()` after each one returns the estimated time
    left as H:MM:SS (mean time per step so far times the steps left)."""

    def __init__(self, total: int, clock=time.monotonic):
        self.total, self.done, self.clock, self.t0 = total, 0, clock, clock()

    def step(self) -> str:
        self.done += 1
        per = (self.clock() - self.t0) / self.done
        return hms(per * (self.total - self.done))
