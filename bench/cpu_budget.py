"""The whole machine's CPU time, split into what was spent inside given time windows
(a trial's load) and outside them: why a trial cannot be cheaper on this machine.

A thread reads the first line of /proc/stat (every core's user, nice, system,
irq, softirq and steal time since boot, in USER_HZ ticks) every `every`
seconds with time.monotonic(); the busy time within a window is read off the
samples by linear interpolation between the two around each edge.
"""

from __future__ import annotations

import bisect
import os
import threading
import time
from dataclasses import dataclass
from typing import Self

TICK = 1 / os.sysconf("SC_CLK_TCK")
"""Seconds per /proc/stat tick."""


def busy_seconds(stat_line: str) -> float:
    """Busy CPU seconds of all cores in /proc/stat's "cpu" line (idle and iowait left
    out; guest time is already inside user and nice)."""
    fields = stat_line.split()
    if not fields or fields[0] != "cpu":
        raise ValueError(f"not /proc/stat's cpu line: {stat_line[:40]!r}")
    user, nice, system, _idle, _iowait, irq, softirq, *rest = (int(x) for x in fields[1:])
    steal = rest[0] if rest else 0
    return (user + nice + system + irq + softirq + steal) * TICK


@dataclass(frozen=True)
class Budget:
    """CPU seconds and wall seconds inside the windows and outside them."""

    cpu_in: float
    wall_in: float
    cpu_out: float
    wall_out: float

    def __add__(self, other: Budget) -> Budget:
        return Budget(self.cpu_in + other.cpu_in, self.wall_in + other.wall_in,
                      self.cpu_out + other.cpu_out, self.wall_out + other.wall_out)

    def share(self, cores: int, inside: bool) -> float:
        """How busy the cores were, 0..1, inside (or outside) the windows."""
        cpu, wall = (self.cpu_in, self.wall_in) if inside else (self.cpu_out, self.wall_out)
        return cpu / (wall * cores) if wall > 0 else 0.0


class Samples:
    """(time, busy CPU seconds) pairs in time order, and the busy time between two
    times, interpolated."""

    def __init__(self, points: list[tuple[float, float]]):
        if len(points) < 2:
            raise ValueError("at least two samples are needed")
        self.t = [p[0] for p in points]
        self.busy = [p[1] for p in points]
        if any(b <= a for a, b in zip(self.t, self.t[1:])):
            raise ValueError("samples must be in strictly increasing time order")

    def at(self, t: float) -> float:
        """Busy seconds at time t (clamped to the first and last sample)."""
        if t <= self.t[0]:
            return self.busy[0]
        if t >= self.t[-1]:
            return self.busy[-1]
        i = bisect.bisect_right(self.t, t)
        t0, t1, b0, b1 = self.t[i - 1], self.t[i], self.busy[i - 1], self.busy[i]
        return b0 + (b1 - b0) * (t - t0) / (t1 - t0)

    def between(self, a: float, b: float) -> float:
        return self.at(b) - self.at(a)

    def budget(self, start: float, end: float, windows: list[tuple[float, float]]) -> Budget:
        """The CPU and wall time of [start, end] inside `windows` (not overlapping,
        each clipped to [start, end]) and outside them."""
        cpu_in = wall_in = 0.0
        for a, b in sorted(windows):
            a, b = max(a, start), min(b, end)
            if b > a:
                cpu_in += self.between(a, b)
                wall_in += b - a
        return Budget(cpu_in, wall_in, self.between(start, end) - cpu_in,
                      (end - start) - wall_in)


class Sampler:
    """Samples /proc/stat in a thread while in the `with` block."""

    def __init__(self, every: float = 0.01):
        self.every = every
        self.points: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-budget", daemon=True)

    def _sample(self) -> None:
        with open("/proc/stat") as f:
            line = f.readline()
        self.points.append((time.monotonic(), busy_seconds(line)))

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self._sample()

    def __enter__(self) -> Self:
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sample()

    def samples(self) -> Samples:
        return Samples(self.points)
