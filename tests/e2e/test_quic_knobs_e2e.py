"""`testbed validate protocols` proves a QUIC setting's sender knobs on a real replay:
datagram size and GSO on the wire, the ACK parameters h3server sent and the connection
options Chromium sent, in the qlog, beside the server's defaults; and the quic-quinn
setting (h3quinn, the second HTTP/3 server) as configured, from its summary and the wire;
quic-bbr's BBRv1 starting to pace from its window over the first RTT sample, as Linux's
BBR does (h3server's vendored quiche change); TCP+ heard nothing of HTTP/3; and the host's net.* sysctls and qdiscs are the same after
it as before (everything it changes lives in namespaces it owns)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.host_state import assert_unchanged, host_state
from support.quic_knobs import ALT_SVC, KNOBS

pytestmark = pytest.mark.e2e


def rows(stdout: str, setting: str) -> dict[str, tuple[str, str]]:
    """{property: (observed, ok)} of one setting's lines (the plain-text rendering)."""
    out = {}
    for line in stdout.splitlines():
        cells = dict(c.split(": ", 1) for c in line.split("\t") if ": " in c)
        if cells.get("setting") == setting:
            out[cells["property"]] = (cells.get("observed", ""), cells.get("ok", ""))
    return out


def test_knobs_and_defaults_proven(tmp_path: Path):
    (tmp_path / "knobs.toml").write_text(KNOBS)
    exe = Path(sys.executable).parent / "testbed"
    before = host_state()
    assert before["sysctl"].count("\n") > 100
    cp = subprocess.run([str(exe), "validate", "protocols", "tcp-plus", "quic",
                         str(tmp_path / "knobs.toml"), "quic-quinn", "quic-bbr", "--network", "dsl"],
                        capture_output=True, text=True, timeout=900, check=False,
                        env={**os.environ, "COLUMNS": "200"})
    after = host_state()
    assert cp.returncode == 0, cp.stdout[-4000:] + cp.stderr[-2000:]
    assert_unchanged(before, after)
    knobs, quic = rows(cp.stdout, "knobs"), rows(cp.stdout, "quic")
    # what the page heard of HTTP/3: nothing over TCP, h3 on its origin over QUIC
    tcp = rows(cp.stdout, "tcp-plus")
    assert tcp[ALT_SVC] == ("none", "yes"), tcp[ALT_SVC]
    quinn = rows(cp.stdout, "quic-quinn")
    # h3quinn served HTTP/3 with its controller, window, payload and pacing as configured
    for name in ("stack (Chromium flags)", "congestion control (h3quinn summary cc)",
                 "initial window (h3quinn summary cwnd_initial_bytes)", "pacing",
                 "max UDP payload (wire, qlog, summary)", "GSO (sends on the wire)", ALT_SVC):
        assert quinn[name][1] == "yes", (name, quinn[name])
    for name in ("max UDP payload (wire, qlog, summary)", "GSO (sends on the wire)",
                 "max_ack_delay (transport parameter sent, qlog)",
                 "ack_delay_exponent (transport parameter sent, qlog)",
                 "client QUIC connection options (transport parameter, qlog)"):
        assert knobs[name][1] == "yes", (name, knobs[name])
    bbr = rows(cp.stdout, "quic-bbr")
    for name in ("congestion control (qlog states)",
                 "BBR generation (h3server summary cc, qlog states)",
                 "BBR start pacing rate (qlog, first RTT sample)"):
        assert bbr[name][1] == "yes", (name, bbr[name])
    assert knobs["max_ack_delay (transport parameter sent, qlog)"][0] == "5"
    assert quic["max_ack_delay (transport parameter sent, qlog)"][0] == "25"
    assert "AKDU" in knobs["client QUIC connection options (transport parameter, qlog)"][0]
    assert "AKDU" not in quic["client QUIC connection options (transport parameter, qlog)"][0]
    assert quic["GSO (sends on the wire)"][0].startswith("0 of ")
    assert knobs["max UDP payload (wire, qlog, summary)"][0].startswith("wire: largest datagram 1200")
    # the page heard of h3 on its own origin (Chromium lifts its delayable-request limit)
    assert quic[ALT_SVC][1] == "yes" and 'h3=":443"' in quic[ALT_SVC][0], quic[ALT_SVC]
