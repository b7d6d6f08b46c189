"""Hostile QUIC sender knobs in a protocol setting: payload sizes QUIC or the path cannot
carry, ACK parameters outside RFC 9000's ranges, GSO that is not true or false, client
connection options that are not tags, QUIC keys in a TCP setting.

A protocol setting reaches the loader through a campaign (`testbed run`) and through
`testbed validate protocols` (before any namespace, server or browser starts).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.hostile_harness import Case, run_case

CAMPAIGN = 'sites = ["local-news"]\nnetworks = ["dsl"]\nprotocols = ["{dir}/p.toml"]\nruns = 1\n'
QUIC = 'stack = "quic"\ncongestion_control = "cubic"\ninitial_window_packets = 32\npacing = true\n'
TCP = 'stack = "tcp"\ncongestion_control = "cubic"\ninitial_window_packets = 10\npacing = false\n'
RUN = ["run", "{dir}/c.toml", "--out", "{dir}/out"]
VALIDATE = ["validate", "protocols", "{dir}/p.toml"]
PAYLOAD = "from 1200 (QUIC's smallest datagram) to 1472"


def setting(extra: str, base: str = QUIC) -> dict[str, str]:
    return {"p.toml": base + extra + "\n", "c.toml": CAMPAIGN}


CASES = [
    Case("payload of 100 bytes", RUN, ["p.toml", "key max_udp_payload", PAYLOAD, "got 100"],
         files=setting("max_udp_payload = 100")),
    Case("payload of 70000 bytes", VALIDATE, ["p.toml", "key max_udp_payload", PAYLOAD, "got 70000"],
         files=setting("max_udp_payload = 70000")),
    Case("payload one byte over a 1500-byte IPv4 packet", RUN,
         ["p.toml", "key max_udp_payload", "got 1473"], files=setting("max_udp_payload = 1473")),
    Case("payload as a string", RUN, ["p.toml", "key max_udp_payload", 'got "1350"'],
         files=setting('max_udp_payload = "1350"')),
    Case("ACK delay of -1 ms", RUN, ["p.toml", "key max_ack_delay_ms", "0 to 16383", "got -1"],
         files=setting("max_ack_delay_ms = -1")),
    Case("ACK delay of 2^14 ms", VALIDATE, ["p.toml", "key max_ack_delay_ms", "got 16384"],
         files=setting("max_ack_delay_ms = 16384")),
    Case("ACK delay as a fraction", RUN, ["p.toml", "key max_ack_delay_ms", "got 2.5"],
         files=setting("max_ack_delay_ms = 2.5")),
    Case("ACK delay exponent of 21", RUN, ["p.toml", "key ack_delay_exponent", "0 to 20", "got 21"],
         files=setting("ack_delay_exponent = 21")),
    Case("GSO as a number", RUN, ["p.toml", "key gso", "expected true or false, got 1"],
         files=setting("gso = 1")),
    Case("GSO as a string", VALIDATE, ["p.toml", "key gso", 'got "on"'],
         files=setting('gso = "on"')),
    Case("connection option that is no tag", RUN,
         ["p.toml", "key client_quic_connection_options", "QUIC connection option tags"],
         files=setting('client_quic_connection_options = ["AKDU,NSTP"]')),
    Case("connection options that would be more flags", VALIDATE,
         ["p.toml", "key client_quic_connection_options", "QUIC connection option tags"],
         files=setting('client_quic_connection_options = ["AKDU --no-sandbox"]')),
    Case("connection options as one string", RUN,
         ["p.toml", "key client_quic_connection_options", 'got "AKDU"'],
         files=setting('client_quic_connection_options = "AKDU"')),
    Case("no connection option", RUN, ["p.toml", "key client_quic_connection_options"],
         files=setting("client_quic_connection_options = []")),
    Case("GSO in a TCP setting", RUN, ["p.toml", "key gso", "only for stack quic"],
         files=setting("gso = true", TCP)),
    Case("ACK delay in a TCP setting", VALIDATE,
         ["p.toml", "key max_ack_delay_ms", "only for stack quic"],
         files=setting("max_ack_delay_ms = 5", TCP)),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_quic_knobs(case: Case, tmp_path: Path):
    run_case(case, tmp_path)
