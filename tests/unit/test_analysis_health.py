"""Trial health: failures by reason, wrong protocol, misses, retries, protocol cross-check."""

from __future__ import annotations

from analysis import failures_by_reason, synthetic, trial_health
from analysis.statistics.health import protocol_mismatch, reason_kind


def test_health_counts_by_hand():
    t = synthetic.trials([
        {"site": "a", "network": "dsl", "setting": "quic", "run": 0, "plt_ms": 1.0,
         "http_versions": '{"h3": 40}'},
        {"site": "a", "network": "dsl", "setting": "quic", "run": 1, "plt_ms": 1.0,
         "http_versions": '{"h3": 38, "h2": 2}', "misses": 3, "attempt": 2},
        {"site": "a", "network": "dsl", "setting": "quic", "run": 2, "status": "failed",
         "reason": "wrong-protocol: 2 of 40 requests over h2", "misses": None, "attempt": 3},
        {"site": "a", "network": "dsl", "setting": "quic", "run": 3, "status": "failed",
         "reason": "server-died: h3server", "misses": None},
        {"site": "a", "network": "dsl", "setting": "tcp", "run": 0, "status": "failed",
         "reason": "server-died: nginx", "misses": None},
        {"site": "a", "network": "dsl", "setting": "tcp", "run": 1, "plt_ms": 1.0,
         "http_versions": '{"h2": 40}', "misses": 1},
    ])
    h = trial_health(t).set_index("setting")
    assert h.loc["quic"][["trials", "ok", "failed", "wrong_protocol", "retried", "with_misses",
                          "misses", "ok_protocol_mismatch"]].tolist() == [4, 2, 2, 1, 2, 1, 3, 1]
    assert h.loc["tcp"][["trials", "ok", "failed", "wrong_protocol", "misses"]].tolist() == [
        2, 1, 1, 0, 1]
    f = failures_by_reason(t)
    assert sorted(zip(f["reason"], f["setting"], f["trials"])) == [
        ("server-died", "quic", 1), ("server-died", "tcp", 1), ("wrong-protocol", "quic", 1)]
    assert "server-died: nginx" in f.set_index("setting").loc["tcp", "examples"]


def test_reason_kind_and_protocol_mismatch():
    assert reason_kind("server-died: h3server") == "server-died"
    assert reason_kind(None) == "(none)"
    assert not protocol_mismatch("quic-bbr", '{"h3": 10}')
    assert protocol_mismatch("quic", '{"h3": 9, "http/1.1": 1}')
    assert protocol_mismatch("tcp-plus", '{"h2": 9, "h3": 1}')
    assert not protocol_mismatch("tcp", '{"h2": 9, "h3": 0}')
    assert not protocol_mismatch("tcp", "not json") and not protocol_mismatch("tcp", None)
