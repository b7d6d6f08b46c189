"""End to end: `testbed replay --network PROFILE` puts the command behind the profile's
Mahimahi shells (a TCP connect to a replay server takes at least the profile's
minimum RTT), and `--setting NAME` alone picks the setting's stack."""

from __future__ import annotations

import subprocess

import pytest
from support.paths import ROOT, TESTBED

from testbed.formats.profiles import load_network

pytestmark = pytest.mark.e2e

NEWS = str(ROOT / "recordings" / "local-news")

# Five TCP connects to the page's server (its IP from the resolver rules), each timed
# from connect() to the established connection: one round trip (SYN, SYN-ACK).
CONNECTS = r"""
import os, socket, time, urllib.parse
host = urllib.parse.urlsplit(os.environ["TESTBED_URL"]).hostname
rules = dict(r.split()[1:3] for r in os.environ["TESTBED_HOST_RESOLVER_RULES"].split(",")
             if r.strip().startswith("MAP ") and "~NOTFOUND" not in r)
for _ in range(5):
    t = time.monotonic()
    socket.create_connection((rules[host], 443), timeout=10).close()
    print(f"{(time.monotonic() - t) * 1000:.3f}")
"""


SLACK_MS = 6.0
"""Most the fastest of five connects may exceed the profile's RTT: Mahimahi's delay
stages count whole milliseconds and a busy machine adds its scheduling time (26.0 ms
for DSL's 24 on 28 Nov 2026, 2-core VM at load 3.6); a delay applied twice gives ~48."""


def connect_ms(*options: str) -> list[float]:
    cp = subprocess.run([TESTBED, "replay", NEWS, *options, "--", "python3", "-c", CONNECTS],
                        check=False, capture_output=True, text=True, timeout=300)
    assert cp.returncode == 0, cp.stderr
    return [float(x) for x in cp.stdout.split()]


def test_replay_through_a_network_profile_has_its_delay():
    rtt = load_network("dsl").min_rtt_ms
    shaped = connect_ms("--network", "dsl", "--stack", "tcp")
    assert len(shaped) == 5
    # calibrated to the profile's minimum RTT (testbed validate network's tolerance is
    # 1 ms); the fastest of five connects adds at most SLACK_MS of this machine's time,
    # so a delay applied twice (or not at all) fails
    assert rtt - 1 <= min(shaped) <= rtt + SLACK_MS, (rtt, shaped)


def test_protocol_alone_names_the_stack():
    cp = subprocess.run([TESTBED, "replay", NEWS, "--setting", "tcp-plus", "--", "sh", "-c",
                         'echo "$TESTBED_STACK"; echo "$TESTBED_CHROMIUM_FLAGS"'],
                        check=False, capture_output=True, text=True, timeout=120)
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout.splitlines()[0] == "tcp"
    assert "--disable-quic" in cp.stdout.splitlines()
    assert "setting tcp-plus" in cp.stderr
