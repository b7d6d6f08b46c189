"""Hostile values of warm visits: the campaign's `visit` and the settings keys
`session_tickets` and `early_data`. Refused before anything starts or is written,
one line naming the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.hostile_harness import Case, run_case

from testbed.campaign.store.store import Row, Store

RUN = ["run", "{dir}/c.toml", "--out", "{dir}/out"]
DRY = ["run", "{dir}/c.toml", "--dry-run"]
TCP = ('stack = "tcp"\ncongestion_control = "cubic"\ninitial_window_packets = 10\n'
       'pacing = false\n')
QUIC = ('stack = "quic"\ncongestion_control = "cubic"\ninitial_window_packets = 32\n'
        'pacing = true\n')


def visit(value: str, protocols: str = '["tcp-plus-0rtt", "quic-0rtt"]') -> dict:
    return {"c.toml": f'sites = ["local-news"]\nnetworks = ["dsl"]\nprotocols = {protocols}\n'
                      f"runs = 1\nvisit = {value}\n"}


def setting(text: str) -> dict:
    return {"p.toml": text, "c.toml": 'sites = ["local-news"]\nnetworks = ["dsl"]\n'
                                      'protocols = ["{dir}/p.toml"]\nruns = 1\n'}


def measured_first(d: Path, host) -> None:
    """{dir}/out holds a first visit of quic-0rtt (the campaign now visits it warm)."""
    out = d / "out"
    tid = "local-news+dsl+quic-0rtt+0"
    (out / "trials" / tid).mkdir(parents=True)
    with Store(out / "trials.sqlite") as store:
        store.add(Row(tid, "c", "local-news", "dsl", "quic-0rtt", 0, "ok", None, 1,
                      "2026-01-01T00:00:00+00:00", 1.0, *[1.0] * 6, 1, 1, 0, None, 24.0, 4,
                      visit="first"))


CASES = [
    Case("visit: unknown mode", RUN, ["c.toml", "key visit:", 'expected "first" or "warm"',
                                      'got "hot"'], visit('"hot"')),
    Case("visit: a number", DRY, ["c.toml", "key visit:", "got 1"], visit("1")),
    Case("visit: a list", RUN, ["c.toml", "key visit:", "got ['warm']"], visit('["warm"]')),
    Case("visit: unknown mode for one setting", RUN,
         ["c.toml", "key visit.quic-0rtt:", 'expected "first" or "warm"', 'got "cold"'],
         visit('{ quic-0rtt = "cold" }')),
    Case("visit: a setting the campaign does not list", DRY,
         ["c.toml", "key visit.quic:", "expected a setting listed in protocols"],
         visit('{ quic = "warm" }')),
    Case("visit: warm over TCP without session tickets", RUN,
         ["c.toml", "key visit.tcp-plus:", "session_tickets = true"],
         visit('{ tcp-plus = "warm" }', '["tcp-plus", "quic"]')),
    Case("visit: every setting warm, one without tickets", RUN,
         ["c.toml", "key visit:", "protocols.0 (tcp)", "session_tickets = true"],
         visit('"warm"', '["tcp", "quic-0rtt"]')),
    Case("visit: a setting's stored trials were other visits", RUN,
         ["c.toml", "key visit:", "quic-0rtt is now visited warm", "1 of its trials"],
         visit('{ quic-0rtt = "warm" }', '["quic-0rtt"]'), prepare=measured_first),
    Case("session_tickets on a QUIC setting", RUN,
         ["p.toml", "key session_tickets", "only for stack tcp"],
         setting(QUIC + "session_tickets = true\n")),
    Case("early_data over TCP without tickets", RUN,
         ["p.toml", "key early_data", "session_tickets = true"],
         setting(TCP + "early_data = true\n")),
    Case("session_tickets a string", DRY, ["p.toml", "key session_tickets",
                                           "expected true or false", 'got "yes"'],
         setting(TCP + 'session_tickets = "yes"\n')),
    Case("early_data a number", RUN, ["p.toml", "key early_data", "expected true or false",
                                      "got 1"], setting(QUIC + "early_data = 1\n")),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_hostile_warm_visits(case, tmp_path):
    run_case(case, tmp_path)
