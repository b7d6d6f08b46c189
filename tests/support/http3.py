"""For tests of the HTTP/3 replay servers run for real (h3server, h3quinn): a small
recording and a certificate (fixtures: import them into the test module), a free UDP
port, an aioquic client and the keys of a connection's summary."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import ssl
import subprocess
import time
from pathlib import Path

import pytest

from testbed.formats import recording as rec


def exchange(target: str, body: bytes, status: int = 200, method: str = "GET",
             headers: list | None = None) -> tuple[dict, bytes]:
    """One exchange of https://a.test/ (a recording's manifest row and its body)."""
    return ({"scheme": "https", "host": "a.test", "port": 443, "ip": "192.0.2.1",
             "method": method, "target": target, "request_headers": [], "status": status,
             "response_headers": headers or [["content-type", "text/plain"]]}, body)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A recording of a.test: a page, two versions of a script, 1 MiB of binary."""
    d = tmp_path_factory.mktemp("h3site")
    big = bytes(range(256)) * 4096  # 1 MiB: more than the first flow-control window
    path = rec.write(d, {"name": "h3site", "url": "https://a.test/", "loads": 1,
                         "recorded_at": "2024-01-01T00:00:00Z"}, [
        exchange("/", b"<h1>home</h1>", headers=[["content-type", "text/html"],
                                                 ["connection", "keep-alive"]]),
        exchange("/app.js?v=1", b"one"),
        exchange("/app.js?v=2", b"two"),
        exchange("/big.bin", big),
    ])
    # A header the Python loader refuses (testbed.formats.recording_rules) but the schema, all
    # h3server checks, allows: h3server must still not send it.
    manifest = json.loads((path / "manifest.json").read_text())
    home = next(x for x in manifest["exchanges"] if x["target"] == "/")
    home["response_headers"].append(["transfer-encoding", "chunked"])
    (path / "manifest.json").write_text(json.dumps(manifest))
    return path


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    """A self-signed certificate for a.test and its key: (cert.pem, key.pem)."""
    from datetime import UTC, datetime, timedelta

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    d = tmp_path_factory.mktemp("tls")
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "a.test")])
    now = datetime.now(UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(hours=1)).not_valid_after(now + timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("a.test")]), critical=False)
            .sign(key, hashes.SHA256()))
    (d / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (d / "key.pem").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    return d / "cert.pem", d / "key.pem"


def free_udp_port() -> int:
    """A UDP port of 127.0.0.1 that nothing uses now."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def client_connect(port: int, protocol):
    """aioquic's connect to 127.0.0.1:port as an HTTP/3 client of a.test (no certificate
    check, 16 MiB flow-control windows), `protocol` the connection's class: an async
    context manager yielding it."""
    from aioquic.asyncio import connect
    from aioquic.h3.connection import H3_ALPN
    from aioquic.quic.configuration import QuicConfiguration

    cfg = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN,
                            verify_mode=ssl.CERT_NONE, server_name="a.test",
                            max_data=16 << 20, max_stream_data=16 << 20)
    return connect("127.0.0.1", port, configuration=cfg, create_protocol=protocol)


def fetch(port: int, requests: list[tuple[str, str]]) -> list[tuple[dict, bytes]]:
    """HTTP/3 requests (method, path) to 127.0.0.1:port with aioquic; (headers, body) each."""
    from aioquic.asyncio.protocol import QuicConnectionProtocol
    from aioquic.h3.connection import H3Connection
    from aioquic.h3.events import DataReceived, HeadersReceived

    class Client(QuicConnectionProtocol):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            self.h3 = H3Connection(self._quic)
            self.streams: dict[int, tuple[dict, bytearray, asyncio.Future]] = {}

        def quic_event_received(self, event):
            for ev in self.h3.handle_event(event):
                if isinstance(ev, HeadersReceived):
                    self.streams[ev.stream_id][0].update(
                        {k.decode(): v.decode() for k, v in ev.headers})
                elif isinstance(ev, DataReceived):
                    self.streams[ev.stream_id][1].extend(ev.data)
                if getattr(ev, "stream_ended", False):
                    fut = self.streams[ev.stream_id][2]
                    if not fut.done():
                        fut.set_result(None)

        async def get(self, method: str, path: str):
            sid = self._quic.get_next_available_stream_id()
            fut = asyncio.get_running_loop().create_future()
            self.streams[sid] = ({}, bytearray(), fut)
            self.h3.send_headers(sid, [(b":method", method.encode()), (b":scheme", b"https"),
                                       (b":authority", f"A.test:{port}".encode()),
                                       (b":path", path.encode())], end_stream=True)
            self.transmit()
            await fut
            headers, body, _ = self.streams[sid]
            return headers, bytes(body)

    async def run():
        async with client_connect(port, Client) as client:
            return [await client.get(m, p) for m, p in requests]

    return asyncio.run(asyncio.wait_for(run(), 30))


CONN_KEYS = {"id", "peer", "local", "closed", "cc", "handshake_ms", "duration_ms", "rtt_ms",
             "min_rtt_ms", "rttvar_ms", "cwnd_initial_bytes", "cwnd_bytes", "max_datagram_size",
             "sent_packets", "recv_packets", "lost_packets", "retrans_packets", "sent_bytes",
             "recv_bytes", "lost_bytes", "stream_retrans_bytes", "delivery_rate_bps", "requests"}


START_S = 60.0
"""The longest a server may take to write its first summary: a bound on the wait (it takes
well under a second), not a measure of speed."""


class Server:
    """An HTTP/3 replay server (`binary`: h3server or h3quinn) on 127.0.0.1 serving
    `recording` with the `tls` fixture's certificate; stopped with SIGTERM by stop(),
    killed on exit if still running."""

    def __init__(self, binary: Path, recording: Path, tls, tmp: Path, *extra: str):
        self.name = binary.name
        self.port = free_udp_port()
        self.summary = tmp / "summary.json"
        self.log = tmp / f"{self.name}.log"
        self.argv = [str(binary), "--recording", str(recording),
                     "--listen", f"127.0.0.1:{self.port}", "--cert", str(tls[0]),
                     "--key", str(tls[1]), "--summary", str(self.summary), *extra]

    def __enter__(self) -> Server:  # noqa: PYI034
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL,
                                     stderr=self.log.open("wb"))
        deadline = time.monotonic() + START_S
        while not self.summary.exists():  # written once the recording is loaded and bound
            assert self.proc.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, f"{self.name} wrote no summary in {START_S} s"
            time.sleep(0.02)
        return self

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(30)

    def __exit__(self, *exc) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def read_summary(self) -> dict:
        return json.loads(self.summary.read_text())

    def summary_when(self, what: str, done, timeout_s: float = 30) -> dict:
        """The summary once done(summary) holds (it is rewritten, by rename, after each
        change)."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                summary = self.read_summary()
            except json.JSONDecodeError:  # caught mid-rewrite
                summary = None
            if summary is not None and done(summary):
                return summary
            assert time.monotonic() < deadline, \
                f"{self.name}'s summary did not show {what} within {timeout_s} s: {summary}"
            time.sleep(0.02)
