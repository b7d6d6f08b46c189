"""bench/sender's TLS client: GETs one path over one TLS 1.3 connection (HTTP/1.1,
keep-alive) at least COUNT times and for SECONDS, discarding the bodies, and prints as JSON the bytes, the
transfer time and its own CPU time over it (first request to last byte).

    python bench/sender_client.py --connect IP:PORT --host NAME --path /body --count N [--seconds S]

Reads with recv_into into one 1 MiB buffer: OpenSSL decrypts a record per call,
in C; the Python loop around it is a few per cent of the client's time.
"""

from __future__ import annotations

import argparse
import json
import resource
import socket
import ssl
import sys
import time


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def read_response(s: ssl.SSLSocket, view: memoryview) -> int:
    """Read one response (status 200, content-length framed); its body's length."""
    head = b""
    while b"\r\n\r\n" not in head:
        n = s.recv_into(view)
        if n == 0:
            raise ConnectionError("connection closed in the response head")
        head += bytes(view[:n])
    head, _, rest = head.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    if lines[0].split()[1:2] != ["200"]:
        raise ConnectionError(f"answered {lines[0]!r}")
    length = next((int(v) for k, _, v in (x.partition(":") for x in lines[1:])
                   if k.strip().lower() == "content-length"), None)
    if length is None:
        raise ConnectionError("no content-length")
    got = len(rest)
    while got < length:
        n = s.recv_into(view, min(len(view), length - got))
        if n == 0:
            raise ConnectionError(f"connection closed after {got} of {length} body bytes")
        got += n
    return got


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="sender_client.py")
    ap.add_argument("--connect", required=True, help="IP:PORT")
    ap.add_argument("--host", required=True)
    ap.add_argument("--path", default="/")
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=0.0)
    a = ap.parse_args(argv)
    ip, _, port = a.connect.rpartition(":")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.set_alpn_protocols(["http/1.1"])
    buf = memoryview(bytearray(1 << 20))
    request = f"GET {a.path} HTTP/1.1\r\nHost: {a.host}\r\n\r\n".encode()
    with (socket.create_connection((ip, int(port)), timeout=60) as raw,
          ctx.wrap_socket(raw, server_hostname=a.host) as s):
        t0, c0 = time.monotonic(), cpu_seconds()
        total = done = 0
        while done < a.count or time.monotonic() - t0 < a.seconds:
            s.sendall(request)
            total += read_response(s, buf)
            done += 1
        seconds, cpu = time.monotonic() - t0, cpu_seconds() - c0
        out = {"requests": done, "bytes": total, "seconds": seconds, "cpu_seconds": cpu,
               "version": s.version(), "cipher": s.cipher()[0]}
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
