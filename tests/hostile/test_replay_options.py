"""Hostile `testbed replay` options: a --stack the --setting contradicts,
neither of them, a network profile that does not exist or does not load.

Every case: exit 2, one line naming the option (or file) and what was expected,
nothing started, nothing written.
"""

from __future__ import annotations

import pytest
from support.hostile_harness import ROOT, Case, run_case

NEWS = str(ROOT / "recordings" / "local-news")


def replay(*options: str) -> list[str]:
    return ["replay", NEWS, *options, "--", "true"]


CASES = [
    Case("tcp stack with a quic setting", replay("--stack", "tcp", "--setting", "quic"),
         ["--setting quic: expected a tcp setting to match --stack tcp, got a quic setting"]),
    Case("quic stack with a tcp setting", replay("--stack", "quic", "--setting", "tcp-plus"),
         ["--setting tcp-plus: expected a quic setting", "got a tcp setting"]),
    Case("neither stack nor setting", replay(),
         ["--stack: expected tcp or quic, or --setting NAME"]),
    Case("unknown network profile", replay("--stack", "tcp", "--network", "nosuch"),
         ["nosuch: no such profile"]),
    Case("network profile with a bad key", replay("--setting", "tcp", "--network",
                                                 "{dir}/n.toml"),
         ["n.toml", "key min_rtt_ms", "expected a number"],
         files={"n.toml": 'min_rtt_ms = "fast"\n'}),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_replay_options(case, tmp_path):
    run_case(case, tmp_path)
