"""End to end: warm visits under Firefox, through the real replay, shells, Firefox,
geckodriver and Browsertime.

The TCP part of tests/e2e/test_warm_visits_e2e.py's campaign (DSL's rates and RTT
with a deep buffer; tcp-plus a first visit, tcp-plus-0rtt a warm one) with
`client = ["firefox"]`. Firefox's warm-up is the preScript's privileged script
(hooks/pre.mjs): the caches cleared, every connection closed, the TLS session
cache kept. (A QUIC setting's warm visit is refused under Firefox: it resumed 1
of 5 connections; docs/firefox.md.)

What the servers saw proves it, as for Chromium: in the warm visit every
connection of the measured load is a new one (the warm-up's were closed) that
resumed a session of the warm-up (nginx's $ssl_session_reused), requests came in
TLS early data, and the warm-up's requests reached the servers again (the caches
were cleared). The first visit resumed nothing. One exception, Firefox's own: a
name (SNI) the warm-up made no connection of, because Firefox sent its requests
over another name's connection (HTTP/2 coalescing, by timing), had no session to
resume (docs/firefox.md).
"""

from __future__ import annotations

import json

import pytest
from support.campaigns import run_warm
from support.needs import need_firefox

pytestmark = pytest.mark.e2e

CAMPAIGN = """\
sites = ["local-news"]
networks = ["dsl-deep.toml"]
protocols = ["tcp-plus", "tcp-plus-0rtt"]
visit = { tcp-plus-0rtt = "warm" }
client = ["firefox"]
runs = 1
timeout_s = 60
retries = 0
"""


def test_a_firefox_warm_visit_over_tcp_resumes_with_early_data_as_the_servers_see(tmp_path):
    need_firefox()
    out = tmp_path / "out"
    got = run_warm(tmp_path, CAMPAIGN, out)
    assert {p: (r["client"], r["status"], r["reason"]) for p, r in got.items()} == {
        p: ("firefox", "ok", None) for p in ("tcp-plus", "tcp-plus-0rtt")}
    first, tcp = got["tcp-plus"], got["tcp-plus-0rtt"]
    assert (first["visit"], first["tls_resumed"], first["early_data"]) == ("first", 0, 0)
    seen = {}
    for row in (tcp,):
        evidence = json.loads((out / "trials" / row["trial_id"] / "trial.json").read_text()
                              )["evidence"]
        warm_up, measured = evidence["warm_up"], evidence["server"]
        seen[row["setting"]] = (warm_up, measured)
        # the warm-up's connections were closed: the measured load opened its own, each
        # resumed but those of a name the warm-up made no connection of
        assert measured["connections"] > 0 and warm_up["connections"] > 0
        resumption = evidence["resumption"]
        missed = [name for name, n, resumed in resumption["names"] if resumed < n]
        assert set(missed).isdisjoint(resumption["warm_up_names"]), resumption
        assert measured["resumed"] == measured["connections"] - sum(
            n - resumed for _, n, resumed in resumption["names"])
        assert measured["resumed"] > 0
        assert (row["visit"], row["tls_resumed"], row["early_data"], row["quic_0rtt"]) == (
            "warm", int(not missed), 1, None)
        assert warm_up["resumed"] == 0
        assert measured["early_data"] > 0
        # every request of the warm-up but the favicon reached the servers again (the
        # caches were cleared), and the measured load's HAR holds only its own
        assert measured["requests"] >= warm_up["requests"] - 1
        assert row["requests"] == measured["requests"]
    print("\n" + "; ".join(
        f"{p}: warm-up {w['connections']} connections {w['requests']} requests "
        f"{w['names']}, measured {m['connections']} connections ({m['resumed']} resumed, "
        f"{m['early_data']} early) {m['requests']} requests {m['names']}"
        for p, (w, m) in seen.items()))
