"""BBR generation from evidence, on samples captured for real (see
tests/fixtures/bbr_generation/README.md for how)."""

from __future__ import annotations

import json

import pytest
from support.paths import FIXTURES

from testbed.validate import evidence
from testbed.validate.bbr_generation import (
    BBR1,
    BBR2,
    quic_generation,
    tcp_generation,
)

FIX = FIXTURES / "bbr_generation"


def text(name: str) -> str:
    return (FIX / name).read_text()


def summary(name: str) -> dict:
    return json.loads(text(name))


# ------------------------------------------------------------------ TCP (ss -ti)

def test_tcp_plus_bbr_is_bbr1():
    f = tcp_generation(text("tcp-plus-bbr.ss.txt"), "reno bbr cubic")
    assert f.generation == BBR1, f.why
    assert "2.88672" in f.why and "1.25" in f.why  # startup and a ProbeBW gain cycle


def test_tcp_cubic_is_no_bbr():
    f = tcp_generation(text("tcp-plus.ss.txt"), "reno bbr cubic")
    assert f.generation is None and "cubic" in f.why


def test_tcp_kernel_without_bbr():
    f = tcp_generation(text("tcp-plus-bbr.ss.txt"), ["reno", "cubic"])
    assert f.generation is None and "no bbr" in f.why


def test_tcp_gain_outside_bbr1_is_not_bbr1():
    # BBRv3 (Google's tree, still named bbr) starts at pacing gain 2.77.
    v3 = text("tcp-plus-bbr.ss.txt").replace("pacing_gain:2.88672", "pacing_gain:2.77")
    f = tcp_generation(v3, "reno bbr cubic")
    assert f.generation is None and "2.77" in f.why


def test_tcp_bbr_without_gains_proves_nothing():
    line = ("\t bbr wscale:10,10 rto:244 rtt:40.585/20.292 mss:1448 cwnd:32 "
            "bbr:(bw:0bps,mrtt:40.585) send 9133621bps\n")
    f = tcp_generation("State\n0 0 198.18.1.1:8443 198.18.0.2:1\n" + line)
    assert f.generation is None and "no BBR gains" in f.why


def test_tcp_bbr2_module_is_bbr2():
    v2 = text("tcp-plus-bbr.ss.txt").replace("\t bbr ", "\t bbr2 ")
    assert tcp_generation(v2).generation == BBR2


def test_tcp_nothing():
    assert tcp_generation("").generation is None


# ------------------------------------------------------------------ QUIC (h3server)

def test_qlog_states_of_real_loads():
    assert states_of(text("quic-bbr.states.sqlog")) == {
        "bbr_startup", "bbr_drain", "bbr_probe_bw"}
    v2 = states_of(text("quic-bbr2.states.sqlog"))
    assert {"bbr_probe_bw_up", "bbr_probe_bw_down", "bbr_probe_bw_cruise"} <= v2
    assert "bbr_probe_bw" not in v2
    assert "congestion_avoidance" in states_of(text("quic.states.sqlog"))


def test_quic_bbr_is_bbr1_by_summary_and_states():
    f = quic_generation(summary("quic-bbr.summary.json"),
                        states_of(text("quic-bbr.states.sqlog")))
    assert f.generation == BBR1, f.why


def test_quic_bbr2_is_bbr2_by_summary_and_states():
    f = quic_generation(summary("quic-bbr2.summary.json"),
                        states_of(text("quic-bbr2.states.sqlog")))
    assert f.generation == BBR2, f.why


def test_quic_cubic_is_no_bbr():
    f = quic_generation(summary("quic.summary.json"), states_of(text("quic.states.sqlog")))
    assert f.generation is None and "cubic" in f.why


@pytest.mark.parametrize("cc,want", [("bbr", BBR1), ("bbr2_gcongestion", BBR2)])
def test_quic_summary_alone(cc, want):
    assert quic_generation({"cc": cc}).generation == want


def test_quic_states_alone():
    assert quic_generation(None, {"bbr_startup", "bbr_probe_bw"}).generation == BBR1
    assert quic_generation(None, {"bbr_probe_bw_down"}).generation == BBR2
    # startup and drain are named alike in both generations
    f = quic_generation(None, {"bbr_startup", "bbr_drain"})
    assert f.generation is None and "no ProbeBW" in f.why


def test_quic_summary_and_states_disagree():
    f = quic_generation({"cc": "bbr"}, states_of(text("quic-bbr2.states.sqlog")))
    assert f.generation is None and "but qlog states say bbr2" in f.why


@pytest.mark.parametrize("summary_,why", [
    ({"cc": "vegas"}, "unknown controller"),
    ({"cc": ["bbr"]}, "not a name"),
    ({}, "no summary cc"),
])
def test_quic_bad_or_missing_summary(summary_, why):
    f = quic_generation(summary_)
    assert f.generation is None and why in f.why


def test_qlog_garbage_is_skipped():
    assert states_of('\x1e{"name": "recovery:congestion_state_updated", "data": 3}\n'
                     '\x1enot json\n\x1e[1]\n') == set()


def states_of(sqlog_text: str) -> set[str]:
    return evidence.qlog_states(evidence.parse_qlog(sqlog_text))
