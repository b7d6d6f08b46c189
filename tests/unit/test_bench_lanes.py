"""bench/lanes: the equivalence test of N lanes against one (synthetic data with a known
shift) and the lane count it stores for "auto"."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from support.paths import BENCH

sys.path.insert(0, str(BENCH))  # the benchmarks import each other by name

import lanes as L  # bench/lanes.py


def _logs(rng, n, shift, sd=0.01):
    return rng.normal(math.log1p(shift), sd, n)


def test_no_shift_and_little_noise_is_equivalent():
    rng = np.random.default_rng(1)
    t = L.tost(_logs(rng, 60, 0.0), _logs(rng, 60, 0.0))
    assert t["verdict"] == "equivalent" and t["p_tost"] < 0.05
    assert -0.02 < t["low"] < t["shift"] < t["high"] < 0.02


def test_a_ten_percent_shift_is_different():
    rng = np.random.default_rng(2)
    t = L.tost(_logs(rng, 60, 0.0), _logs(rng, 60, 0.10))
    assert t["verdict"] == "different"
    assert t["shift"] == pytest.approx(0.10, abs=0.01)


def test_few_noisy_trials_are_inconclusive():
    rng = np.random.default_rng(3)
    t = L.tost(_logs(rng, 8, 0.0, sd=0.15), _logs(rng, 8, 0.0, sd=0.15))
    assert t["verdict"] == "inconclusive"
    assert L.tost(np.array([0.0]), np.array([0.0, 0.1]))["verdict"] == "inconclusive"


def test_a_shift_inside_the_margin_with_many_trials_is_equivalent_and_false_rate_is_low():
    """At a true shift on the margin's edge (2 %), "equivalent" comes at most ~5 % of the
    time (the test's level); at no shift, almost always with these sizes."""
    rng = np.random.default_rng(4)
    edge = sum(L.tost(_logs(rng, 40, 0.0, 0.02), _logs(rng, 40, 0.02, 0.02))["verdict"]
               == "equivalent" for _ in range(400)) / 400
    none = sum(L.tost(_logs(rng, 40, 0.0, 0.02), _logs(rng, 40, 0.0, 0.02))["verdict"]
               == "equivalent" for _ in range(200)) / 200
    assert edge <= 0.08, edge
    assert none >= 0.9, none


def test_centred_logs_take_out_the_settings_own_difference():
    one = [{"status": "ok", "setting": "quic", "plt_ms": 1000.0},
           {"status": "ok", "setting": "quic", "plt_ms": 1000.0},
           {"status": "ok", "setting": "tcp-plus", "plt_ms": 2000.0},
           {"status": "failed", "setting": "tcp-plus", "plt_ms": None}]
    c = L.centres(one, "plt_ms")
    assert c == pytest.approx({"quic": math.log(1000), "tcp-plus": math.log(2000)})
    many = [{"status": "ok", "setting": "quic", "plt_ms": 1100.0},
            {"status": "ok", "setting": "tcp-plus", "plt_ms": 2200.0}]
    assert L.centred_logs(many, "plt_ms", c) == pytest.approx([math.log(1.1)] * 2)


def test_the_largest_equivalent_lane_count_stops_at_the_first_that_is_not():
    eq = {"plt_ms": "equivalent", "fvc_ms": "equivalent"}
    assert L.largest_equivalent({1: eq, 2: eq, 4: eq}) == 4
    assert L.largest_equivalent({1: eq, 2: eq, 4: {**eq, "fvc_ms": "inconclusive"}}) == 2
    assert L.largest_equivalent({1: eq, 2: {**eq, "plt_ms": "different"}, 4: eq}) == 1
    assert L.largest_equivalent({1: eq}) == 1
    assert L.blocks_of(1, 3) == 3 and L.blocks_of(4, 3) == 6 and L.blocks_of(8, 3) == 9
    assert L.blocks_of(4, 1) == 4 and L.blocks_of(1, 1) == 1
