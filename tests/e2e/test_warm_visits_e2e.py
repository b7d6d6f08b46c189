"""End to end: warm visits through the real replay, shells, Chromium and Browsertime.

One campaign over DSL's rates and RTT with a deep buffer (bench/dsl-deep.toml):
tcp-plus as a first visit, tcp-plus-0rtt and quic-0rtt as warm ones. Not over
`dsl` itself: its 12 ms buffer drops packets of a warm visit's burst, and a
dropped handshake flight waits for a probe timeout (quiche's first RTT guess is
333 ms), so a response may still be on its way when the metrics are collected
and the HAR then lacks a request the server counted (a fresh-clone CI saw it
once: the headlines fetch's QUIC connection had not completed its handshake).

What the servers saw proves it: in a warm visit every connection of the
measured load resumed a session of the warm-up load (nginx's
$ssl_session_reused, quiche's is_resumed) and requests came in TLS early data /
QUIC 0-RTT; the warm-up's requests reached the servers again (the HTTP cache was
cleared) over as many new connections (the old ones were closed). The first
visit resumed nothing.
"""

from __future__ import annotations

import json

import pytest
from support.campaigns import run_warm
from support.needs import needs_parts

pytestmark = pytest.mark.e2e

CAMPAIGN = """\
sites = ["local-news"]
networks = ["dsl-deep.toml"]
protocols = ["tcp-plus", "tcp-plus-0rtt", "quic-0rtt"]
visit = { tcp-plus-0rtt = "warm", quic-0rtt = "warm" }
runs = 1
timeout_s = 60
retries = 0
"""


def test_warm_visits_resume_with_early_data_and_0rtt_as_the_servers_see(tmp_path):
    needs_parts()
    out = tmp_path / "out"
    got = run_warm(tmp_path, CAMPAIGN, out)
    assert {p: (r["status"], r["reason"]) for p, r in got.items()} == {
        p: ("ok", None) for p in ("tcp-plus", "tcp-plus-0rtt", "quic-0rtt")}
    first, tcp, quic = got["tcp-plus"], got["tcp-plus-0rtt"], got["quic-0rtt"]
    assert (first["visit"], first["tls_resumed"], first["early_data"]) == ("first", 0, 0)
    assert (tcp["visit"], tcp["tls_resumed"], tcp["early_data"], tcp["quic_0rtt"]) == (
        "warm", 1, 1, None)
    assert (quic["visit"], quic["tls_resumed"], quic["early_data"], quic["quic_0rtt"]) == (
        "warm", 1, None, 1)
    for row in (tcp, quic):
        evidence = json.loads((out / "trials" / row["trial_id"] / "trial.json").read_text()
                              )["evidence"]
        warm_up, measured = evidence["warm_up"], evidence["server"]
        assert measured["connections"] == warm_up["connections"] > 0
        assert measured["resumed"] == measured["connections"]
        assert measured["early_data"] > 0
        # every request of the warm-up but the favicon (not kept in the HTTP cache)
        # reached the servers again, and the measured load's HAR holds only its own
        assert measured["requests"] >= warm_up["requests"] - 1
        assert row["requests"] == measured["requests"]
