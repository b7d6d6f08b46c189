"""h3server, the HTTP/3 replay server, run for real.

Its Rust unit tests (matching vectors, pacer, summary, ...) run with
`cargo test --release` in h3server/; these start the built binary:
one-line errors, a real HTTP/3 client on loopback (hits, misses, HEAD,
the summary and its per-connection figures, the qlog) and a clean exit on
SIGTERM. The pacing acceptance test
(Chromium behind mm-delay, packet timestamps) is in test_h3server_pacing.py.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support.http3 import CONN_KEYS, Server, fetch
from support.needs import need
from support.paths import ROOT

pytestmark = pytest.mark.e2e

H3SERVER = ROOT / "h3server" / "target" / "release" / "h3server"


@pytest.fixture(scope="module", autouse=True)
def built():
    need(None if H3SERVER.exists() else f"{H3SERVER} not built (make setup)")


def server(recording: Path, tls, tmp: Path, *extra: str) -> Server:
    """h3server on 127.0.0.1 (support.http3.Server)."""
    return Server(H3SERVER, recording, tls, tmp, *extra)


def test_serves_hits_and_counts_misses(site, tls, tmp_path):
    with server(site, tls, tmp_path) as srv:
        before = srv.read_summary()
        got = fetch(srv.port, [("GET", "/"), ("GET", "/app.js?v=2"), ("GET", "/app.js?v=9"),
                               ("GET", "/big.bin"), ("GET", "/nope"), ("POST", "/")])
        after = srv.summary_when("6 requests", lambda s: s["requests"] >= 6)
        assert srv.stop() == 0
    (home_h, home), (_, v2), (_, v9), (big_h, big), (nope_h, _), (post_h, _) = got
    assert home_h[":status"] == "200" and home == b"<h1>home</h1>"
    assert home_h["content-length"] == "13" and home_h["content-type"] == "text/html"
    assert "connection" not in home_h and "transfer-encoding" not in home_h
    assert (v2, v9) == (b"two", b"one")  # exact target; then longest prefix, earliest on ties
    assert big_h["content-length"] == str(1 << 20) and big == bytes(range(256)) * 4096
    assert nope_h[":status"] == "404" and post_h[":status"] == "404"
    assert before["requests"] == 0 and before["server"] == "h3server"
    assert before["cc"] == "cubic"  # the default, by quiche's name
    assert after["requests"] == 6 and after["misses"] == 2 and after["connections"] == 1
    assert after["miss_urls"] == [f"https://A.test:{srv.port}/nope", f"https://A.test:{srv.port}/"]
    assert after["bytes"] >= (1 << 20) + 13 + 3 + 3
    # every response, misses too, names this origin's HTTP/3 service on the port asked
    assert {h.get("alt-svc") for h, _ in got} == {f'h3=":{srv.port}"; ma=86400'}


def test_alt_svc_off_announces_nothing(site, tls, tmp_path):
    with server(site, tls, tmp_path, "--alt-svc", "off") as srv:
        got = fetch(srv.port, [("GET", "/"), ("GET", "/nope")])
        assert srv.stop() == 0
    assert [h[":status"] for h, _ in got] == ["200", "404"]
    assert not any("alt-svc" in h for h, _ in got)


@pytest.mark.parametrize("cc,quiche_cc", [("bbr2", "bbr2_gcongestion"), ("bbr", "bbr")])
def test_sigterm_exits_cleanly_with_a_final_summary(site, tls, tmp_path, cc, quiche_cc):
    with server(site, tls, tmp_path, "--pacing", "off", "--gso", "on", "--cc", cc) as srv:
        fetch(srv.port, [("GET", "/app.js?v=1")])
        assert srv.stop() == 0
        s = srv.read_summary()
    assert (s["requests"], s["misses"], s["connections"], s["bytes"]) == (1, 0, 1, 3)
    assert s["cc"] == quiche_cc  # bbr is BBRv1, bbr2 quiche's BBRv2
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_summary_has_each_connections_figures_and_qlog(site, tls, tmp_path):
    qlogs = tmp_path / "qlog"
    with server(site, tls, tmp_path, "--initial-cwnd-packets", "20",
                "--qlog-dir", str(qlogs)) as srv:
        fetch(srv.port, [("GET", "/big.bin"), ("GET", "/app.js?v=1")])  # then the client closes
        s = srv.summary_when("a closed connection",
                             lambda s: any(c["closed"] for c in s["conns"]))
        assert srv.stop() == 0
    assert s["connections"] == 1 and len(s["conns"]) == 1
    c = s["conns"][0]
    assert set(c) == CONN_KEYS
    assert c["closed"] is True and c["requests"] == 2 and c["cc"] == "cubic"
    assert c["peer"].startswith("127.0.0.1:") and c["local"] == f"127.0.0.1:{srv.port}"
    assert c["sent_packets"] > (1 << 20) // 1350 and c["recv_packets"] > 0
    assert c["sent_bytes"] > 1 << 20 and c["recv_bytes"] > 0
    assert c["rtt_ms"] > 0 and 0 < c["min_rtt_ms"] <= c["rtt_ms"] + c["rttvar_ms"]
    assert c["cwnd_initial_bytes"] == 20 * 1350 and c["max_datagram_size"] == 1350
    assert c["cwnd_bytes"] > 0 and c["delivery_rate_bps"] > 0
    assert 0 < c["handshake_ms"] < c["duration_ms"]
    # whole numbers, never above what was sent (a busy machine's loopback drops UDP too)
    for key in ("lost_packets", "retrans_packets"):
        assert isinstance(c[key], int) and 0 <= c[key] <= c["sent_packets"], (key, c[key])
    # --qlog-dir: one qlog for the connection, named by its id, in JSON-SEQ
    assert [p.name for p in qlogs.iterdir()] == [f"{c['id']}.sqlog"]
    records = [json.loads(r) for r in (qlogs / f"{c['id']}.sqlog").read_text().split("\x1e") if r.strip()]
    names = {r.get("name") for r in records}
    assert {"transport:packet_sent", "transport:packet_received"} <= names
    assert sum(r.get("name") == "transport:packet_sent" for r in records) == c["sent_packets"]


def test_a_settings_quic_knobs_reach_the_transport_parameters(site, tls, tmp_path):
    from testbed.protocols.apply import server_options
    from testbed.validate import evidence

    f = tmp_path / "knobs.toml"
    f.write_text('stack = "quic"\ncongestion_control = "cubic"\ninitial_window_packets = 10\n'
                 'pacing = false\nmax_udp_payload = 1200\ngso = true\nmax_ack_delay_ms = 5\n'
                 'ack_delay_exponent = 10\n')
    qlogs = tmp_path / "qlog"
    with server(site, tls, tmp_path, *server_options(str(f)).h3server_args,
                "--qlog-dir", str(qlogs)) as srv:
        fetch(srv.port, [("GET", "/big.bin")])
        assert srv.stop() == 0
        s = srv.read_summary()
    (c,) = s["conns"]
    assert c["max_datagram_size"] == 1200 and c["cwnd_initial_bytes"] == 10 * 1200
    events = evidence.parse_qlog((qlogs / f"{c['id']}.sqlog").read_text())
    sent = evidence.qlog_parameters(events, "local")
    assert (sent["max_ack_delay"], sent["ack_delay_exponent"]) == (5, 10)
    assert evidence.qlog_largest_packet(events) == 1200


def test_bad_recording_is_one_line_naming_file_and_key(site, tls, tmp_path):
    bad = tmp_path / "bad"
    (bad / "bodies").mkdir(parents=True)
    manifest = json.loads((site / "manifest.json").read_text())
    manifest["exchanges"][1]["status"] = 999
    (bad / "manifest.json").write_text(json.dumps(manifest))
    cp = subprocess.run([str(H3SERVER), "--recording", str(bad), "--listen", "127.0.0.1:1",
                         "--cert", str(tls[0]), "--key", str(tls[1])],
                        capture_output=True, text=True, timeout=30, check=False)
    assert cp.returncode == 2
    lines = cp.stderr.strip().splitlines()
    assert len(lines) == 1, cp.stderr
    assert str(bad / "manifest.json") in lines[0] and "key exchanges/1/status" in lines[0]


def test_missing_body_and_bad_key_are_input_errors(site, tls, tmp_path):
    gone = tmp_path / "gone"
    (gone / "bodies").mkdir(parents=True)
    (gone / "manifest.json").write_text((site / "manifest.json").read_text())
    cp = subprocess.run([str(H3SERVER), "--recording", str(gone), "--listen", "127.0.0.1:1",
                         "--cert", str(tls[0]), "--key", str(tls[1])],
                        capture_output=True, text=True, timeout=30, check=False)
    assert cp.returncode == 2 and "key exchanges/0/body: bodies/" in cp.stderr
    assert "is missing" in cp.stderr
    cp = subprocess.run([str(H3SERVER), "--recording", str(site), "--listen", "127.0.0.1:1",
                         "--cert", str(tls[0]), "--key", str(tls[0])],
                        capture_output=True, text=True, timeout=30, check=False)
    assert cp.returncode == 2 and str(tls[0]) in cp.stderr and "private key" in cp.stderr
