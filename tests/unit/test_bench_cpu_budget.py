"""bench/cpu_budget: /proc/stat's busy time, and its split into time windows."""

from __future__ import annotations

import os
import sys
import time

import pytest
from support.paths import BENCH

sys.path.insert(0, str(BENCH))  # the benchmarks import each other by name

import cpu_budget as C


def test_busy_time_leaves_idle_and_iowait_out():
    # user nice system idle iowait irq softirq steal guest guest_nice
    line = "cpu  100 10 50 9999 777 5 3 2 40 0"
    assert C.busy_seconds(line) == pytest.approx((100 + 10 + 50 + 5 + 3 + 2) * C.TICK)


def test_busy_time_of_a_line_without_steal():
    assert C.busy_seconds("cpu 1 2 3 4 5 6 7") == pytest.approx((1 + 2 + 3 + 6 + 7) * C.TICK)


def test_a_core_s_line_is_refused():
    with pytest.raises(ValueError, match="cpu line"):
        C.busy_seconds("cpu0 1 2 3 4 5 6 7 8")


def test_busy_time_between_samples_is_interpolated():
    s = C.Samples([(0.0, 0.0), (1.0, 2.0), (2.0, 2.0)])
    assert s.between(0.25, 0.75) == pytest.approx(1.0)
    assert s.between(0.5, 1.5) == pytest.approx(1.0)
    assert s.between(-5, 10) == pytest.approx(2.0)  # clamped to the samples


def test_the_budget_splits_cpu_and_wall_inside_and_outside_the_windows():
    # 2 cores: fully busy from 0 to 1, half busy from 1 to 3, idle from 3 to 4
    s = C.Samples([(0.0, 0.0), (1.0, 2.0), (3.0, 4.0), (4.0, 4.0)])
    b = s.budget(0.0, 4.0, [(1.0, 3.0)])
    assert (b.cpu_in, b.wall_in) == pytest.approx((2.0, 2.0))
    assert (b.cpu_out, b.wall_out) == pytest.approx((2.0, 2.0))
    assert b.share(2, inside=True) == pytest.approx(0.5)
    assert b.share(2, inside=False) == pytest.approx(0.5)
    # windows are clipped to the span, in any order
    b = s.budget(0.5, 4.0, [(3.5, 9.0), (0.0, 1.0)])
    assert (b.cpu_in, b.wall_in) == pytest.approx((1.0, 1.0))
    assert (b.cpu_out, b.wall_out) == pytest.approx((2.0, 2.5))


def test_samples_must_be_ordered_and_two_or_more():
    with pytest.raises(ValueError):
        C.Samples([(0.0, 0.0)])
    with pytest.raises(ValueError):
        C.Samples([(1.0, 0.0), (1.0, 1.0)])


def test_the_sampler_sees_a_busy_loop():
    c0 = time.process_time()
    with C.Sampler(every=0.01) as sampler:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 0.3:
            pass
        t1 = time.monotonic()
    b = sampler.samples().budget(t0, t1, [])
    own = time.process_time() - c0
    # The whole machine was busy at least for this process's own CPU time (one core
    # kept busy) and at most every core the whole time; ticks are 10 ms and the
    # samples every 10 ms, so allow for rounding. A busy machine cannot pass a sampler
    # that misreads /proc/stat's units (the upper bound), an idle one cannot pass one
    # that reads nothing (the lower).
    slack = 4 * C.TICK + 2 * sampler.every
    assert own - slack <= b.cpu_out <= os.cpu_count() * (t1 - t0) + slack, (own, b.cpu_out)
    assert b.wall_out == pytest.approx(t1 - t0)
    assert len(sampler.points) >= 3
