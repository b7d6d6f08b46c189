"""Protocol settings applied to a real replay topology: the kernel reports them, and
TCP paces without fq when nginx-style servers run under the pacing library."""

from __future__ import annotations

import statistics
import sys
import time

import pytest

from testbed.emulate.probesite import PROBE_IP, ProbeSite
from testbed.emulate.shells import ShellChain
from testbed.formats.profiles import ProtocolProfile, load_protocol
from testbed.host import proc
from testbed.protocols import applied
from testbed.protocols.apply import PACING_PRELOAD, server_options
from testbed.validate import evidence

pytestmark = pytest.mark.e2e

PORT = 8443
# A server that answers each line it reads with 1 MB (argv, not a shell string).
SERVER = """
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen()
print("ready", flush=True)
while True:
    c, _ = s.accept()
    while c.recv(100):
        c.sendall(b"x" * 1_000_000)
    c.close()
"""
CLIENT = """
import socket, sys
c = socket.create_connection((sys.argv[1], int(sys.argv[2])))
c.sendall(b"GET\\n"); n = 0
while n < 1_000_000:
    n += len(c.recv(1 << 20))
print(n)
"""


def _transfer(site: ProbeSite, setting: str | ProtocolProfile, chain: ShellChain, tag: str):
    """With setting applied, serve 1 MB from the server namespace (with the setting's
    server environment), fetch it through chain; ss samples during it, and the
    capture."""
    with applied(server_options(setting, fq=False), site.topology) as change:
        return _serve(site, change.nginx_env, chain, tag)


def _serve(site: ProbeSite, nginx_env: dict[str, str], chain: ShellChain, tag: str):
    topo = site.topology
    env = [f"{k}={v}" for k, v in nginx_env.items()]
    pcap = site.dir / f"{tag}.pcap"
    log = site.dir / f"{tag}.log"
    samples: list[evidence.SockInfo] = []
    capture = ["tcpdump", "-i", topo.server_dev, "-n", "--immediate-mode", "-s", "128", "-U",
               "-w", pcap, "tcp", "port", str(PORT)]
    with proc.Background(topo.server.exec(capture), log=site.dir / f"{tag}.tcpdump.log"), \
            proc.Background(topo.server.exec(["env", *env, sys.executable, "-c", SERVER,
                                              PROBE_IP, str(PORT)]), log=log):
        deadline = time.monotonic() + 10
        while "ready" not in (log.read_text() if log.exists() else "") or \
                "listening" not in (site.dir / f"{tag}.tcpdump.log").read_text():
            assert time.monotonic() < deadline, "server or tcpdump did not start"
            time.sleep(0.05)
        client = proc.Background(site.client_argv(chain, [sys.executable, "-c", CLIENT,
                                                          PROBE_IP, str(PORT)]),
                                 log=site.dir / "client.log")
        with client:
            while client.alive():
                out = proc.output(topo.server.exec(["ss", "-tinm", "state", "established",
                                                    "sport", "=", f":{PORT}"]))
                samples += evidence.parse_ss(out)
                time.sleep(0.02)
        time.sleep(0.3)
    assert "1000000" in (site.dir / "client.log").read_text()
    packets = evidence.read_pcap(pcap.read_bytes())
    conns = evidence.connections(packets, PORT)
    assert conns, f"nothing captured: {len(packets)} packets, " + (
        site.dir / f"{tag}.tcpdump.log").read_text()
    conn = max(conns.values(), key=len)
    return samples, conn, topo.client_route()


@pytest.fixture
def site():
    with ProbeSite() as s:
        yield s


@pytest.mark.parametrize("setting,cc,iw", [("tcp", "cubic", 10), ("tcp-plus-bbr", "bbr", 32)])
def test_congestion_control_and_initial_window_in_force(site, setting, cc, iw):
    samples, conn, route = _transfer(site, setting, ShellChain(delay_ms=10), setting)
    assert f"initcwnd {iw}" in route and f"initrwnd {iw}" in route
    seen = {s.cc for s in samples if s.cc}
    assert seen == {cc}, seen  # not the host's default bbr for the baseline
    first = evidence.data_flights(evidence.flights(conn, PORT))[0]
    grown = evidence.acked_before(conn, first, PORT) if cc == "bbr" else 0
    assert evidence.outstanding_segments(conn, first, PORT) == iw + grown


def test_internal_pacing_without_fq(site):
    """The pacing library makes the server's TCP pace: SO_MAX_PACING_RATE shows in ss,
    and the response's first flight spreads over a good part of the RTT; the same
    server without it sends the flight back to back."""
    assert PACING_PRELOAD.exists(), "run `make setup` (step pacing)"
    chain = ShellChain(delay_ms=20)
    paced_samples, paced, _ = _transfer(site, "tcp-plus", chain, "paced")
    assert any(s.max_pacing_rate for s in paced_samples)
    fp = evidence.data_flights(evidence.flights(paced, PORT))[0]
    # the same setting without pacing
    unpaced = load_protocol("tcp-plus").model_copy(update={"pacing": False})
    assert server_options(unpaced, fq=False).nginx_env == {}
    burst_samples, burst, _ = _transfer(site, unpaced, chain, "unpaced")
    assert not any(s.max_pacing_rate for s in burst_samples)
    fb = evidence.data_flights(evidence.flights(burst, PORT))[0]
    rtt = 0.040
    assert fp.duration >= 0.2 * rtt, fp.duration
    # Back to back, relative to the paced flight, by the typical gap between packets
    # rather than first to last: a busy machine can hold a burst for a scheduler tick
    # (CI saw one 3.9 ms gap after a burst's first packet, the rest ~15 us apart), and
    # Linux sends a paced connection's first 10 segments unpaced (tcp_output.c,
    # tcp_update_skb_after_send), so the paced flight's median gap is a paced one.
    gb, gp = statistics.median(fb.gaps), statistics.median(fp.gaps)
    assert gb < gp / 4, (gb, gp, fb.times, fp.times)
