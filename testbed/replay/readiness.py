"""Readiness probe, run inside the client namespace:

    python -m testbed.replay.readiness --timeout 20 tls:IP:PORT:SNI tcp:IP:PORT quic:IP:PORT:SNI

Retries each target until it answers: `tls` completes a TLS 1.3 handshake
that negotiates h2, `tcp` connects, `quic` completes a QUIC handshake that
negotiates h3. No HTTP request is sent, so the servers' counts stay at zero.
Exit 0 when all answered, 1 (naming what did not) at the deadline.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import ssl
import sys
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    kind: str
    ip: str
    port: int
    sni: str = ""

    @classmethod
    def parse(cls, text: str) -> Target:
        kind, ip, port, *rest = text.split(":")
        if kind not in ("tls", "tcp", "quic"):
            raise ValueError(f"unknown probe kind {kind!r} in {text!r}")
        return cls(kind, ip, int(port), rest[0] if rest else "")

    def __str__(self) -> str:
        return f"{self.kind}:{self.ip}:{self.port}" + (f":{self.sni}" if self.sni else "")


def try_tcp(t: Target, timeout: float) -> None:
    with socket.create_connection((t.ip, t.port), timeout=timeout):
        pass


def try_tls(t: Target, timeout: float) -> None:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["h2"])
    with (socket.create_connection((t.ip, t.port), timeout=timeout) as raw,
          ctx.wrap_socket(raw, server_hostname=t.sni or None) as s):
        if s.version() != "TLSv1.3" or s.selected_alpn_protocol() != "h2":
            raise RuntimeError(f"negotiated {s.version()} / {s.selected_alpn_protocol()}, "
                               f"expected TLSv1.3 / h2")


def try_quic(t: Target, timeout: float) -> None:
    from aioquic.asyncio import connect
    from aioquic.quic.configuration import QuicConfiguration

    async def handshake() -> None:
        cfg = QuicConfiguration(is_client=True, alpn_protocols=["h3"], verify_mode=ssl.CERT_NONE,
                                server_name=t.sni or None)
        async with connect(t.ip, t.port, configuration=cfg, wait_connected=True) as client:
            client.close()

    asyncio.run(asyncio.wait_for(handshake(), timeout))


ATTEMPTS = {"tcp": try_tcp, "tls": try_tls, "quic": try_quic}


def wait_all(targets: list[Target], deadline_s: float, attempt_timeout: float = 1.0) -> list[str]:
    """Probe until every target answered or the deadline passed; what still failed, and why."""
    deadline = time.monotonic() + deadline_s
    pending = {t: "not tried" for t in targets}
    while pending:
        for t in list(pending):
            try:
                ATTEMPTS[t.kind](t, attempt_timeout)
            except (TimeoutError, OSError, RuntimeError, ConnectionError) as e:
                pending[t] = f"{type(e).__name__}: {e}".rstrip(": ")
            else:
                del pending[t]
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    return [f"{t}: {why}" for t, why in pending.items()]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m testbed.replay.readiness")
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("targets", nargs="+", type=Target.parse)
    ns = ap.parse_args(argv)
    failed = wait_all(ns.targets, ns.timeout)
    if failed:
        print(f"not answering after {ns.timeout:.0f} s: {'; '.join(failed)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
