"""Serve a generated test site (tests/site/sitegen.py) over HTTPS and HTTP.

    python tests/site/server.py --site site --cert C --key K --log LOG --ready FILE

Listens on port 443 of every IP of the site, and on port 80 of the front
host's IP (which redirects to HTTPS), so it must run where those IPs exist:
inside the network namespace made by tests/site/harness.py. Every response
is logged as one JSON line (host, target, the local IP that answered, the
SHA-256 of the body as sent, de-chunked), so a test can check a recording
against what the server really sent. Writes FILE when every socket listens.

Per-request behaviour (everything else is static, from sitegen.build):
  /js/promo.js on the static host   picks the next promo image (--promo rotate,
                                    so N loads see N different ones) or a
                                    random one (--promo random)
  /api/headlines?section=S&n=N      JSON from the query string, chunked
  /hang on the front host           never answers (a page that never loads)
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import random
import socket
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sitegen

CHUNK = 1000


class Site:
    def __init__(self, spec: sitegen.SiteSpec, promo: str, log: Path):
        self.spec = spec
        self.static = sitegen.build(spec)
        self.promo = promo
        self._rotation = itertools.count()
        self._log = open(log, "a", buffering=1)  # noqa: SIM115 (open while serving)
        self._lock = threading.Lock()

    def next_promo(self) -> int:
        with self._lock:
            if self.promo == "random":
                return random.randrange(self.spec.promos)
            return next(self._rotation) % self.spec.promos

    def log(self, entry: dict) -> None:
        with self._lock:
            self._log.write(json.dumps(entry, sort_keys=True) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "testsite/1"
    site: Site  # set on the subclass made per server

    def log_message(self, format, *args):  # quiet: the JSON log is the record
        pass

    def do_GET(self):
        spec = self.site.spec
        host = (self.headers.get("host") or "").split(":")[0].lower()
        local_ip, _local_port = self.connection.getsockname()[:2]
        tls = isinstance(self.connection, ssl.SSLSocket)
        url = urlsplit(self.path)

        if host not in spec.ips or spec.ips[host] != local_ip:
            return self.reply(host, local_ip, 421, "text/plain", b"misdirected request\n")
        if not tls:
            return self.reply(host, local_ip, 301, "text/plain", b"",
                              headers=(("location", f"https://{host}{self.path}"),))
        if host == spec.www and url.path == "/hang":
            time.sleep(3600)
            return
        if host == spec.static and url.path == "/js/promo.js":
            body = sitegen.promo_script(spec, self.site.next_promo())
            return self.reply(host, local_ip, 200, "application/javascript", body,
                              headers=(("cache-control", "no-store"),))
        if host == spec.api and url.path == "/api/headlines":
            q = parse_qs(url.query)
            body = sitegen.headlines(spec, q.get("section", ["top"])[0],
                                     int(q.get("n", ["5"])[0]))
            return self.reply(host, local_ip, 200, "application/json", body, chunked=True,
                              headers=(sitegen.CORS, ("cache-control", "no-store")))
        res = self.site.static.get((host, url.path))
        if res is None:
            return self.reply(host, local_ip, 404, "text/plain", b"not found\n")
        headers = res.headers + ((("content-encoding", "gzip"),) if res.gzip else ())
        self.reply(host, local_ip, res.status, res.content_type, res.body,
                   chunked=res.chunked, headers=headers)

    def reply(self, host, local_ip, status, ctype, body: bytes, chunked=False, headers=()):
        self.send_response(status)
        self.send_header("content-type", ctype)
        for k, v in headers:
            self.send_header(k, v)
        if chunked:
            self.send_header("transfer-encoding", "chunked")
        else:
            self.send_header("content-length", str(len(body)))
        self.end_headers()
        if chunked:
            for i in range(0, len(body), CHUNK):
                part = body[i:i + CHUNK]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.wfile.write(body)
        self.wfile.flush()
        self.site.log({
            "host": host, "target": self.path, "method": self.command, "local_ip": local_ip,
            "scheme": "https" if isinstance(self.connection, ssl.SSLSocket) else "http",
            "status": status, "chunked": chunked, "size": len(body),
            "body_sha256": hashlib.sha256(body).hexdigest() if body else None,
        })


class Server(ThreadingHTTPServer):
    """A threading HTTP server; with a TLS context, each thread does its own handshake."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, handler, tls: ssl.SSLContext | None):
        self.tls = tls
        super().__init__(addr, handler)

    def finish_request(self, request, client_address):
        if self.tls is not None:
            try:
                request.settimeout(10)
                request = self.tls.wrap_socket(request, server_side=True)
                request.settimeout(None)
            except (OSError, ssl.SSLError):
                return
        self.RequestHandlerClass(request, client_address, self)


def tls_context(cert: str, key: str) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site", choices=sorted(sitegen.SITES), required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--log", required=True, type=Path)
    ap.add_argument("--ready", required=True, type=Path)
    ap.add_argument("--promo", choices=["rotate", "random"], default="rotate")
    args = ap.parse_args(argv)

    spec = sitegen.SITES[args.site]
    site = Site(spec, args.promo, args.log)
    handler = type("SiteHandler", (Handler,), {"site": site})
    tls = tls_context(args.cert, args.key)
    servers = [Server((ip, 443), handler, tls) for ip in sorted(set(spec.ips.values()))]
    servers.append(Server((spec.ips[spec.www], 80), handler, None))
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    args.ready.write_text("ready\n")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    socket.setdefaulttimeout(None)
    main()
