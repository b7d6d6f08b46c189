"""Serve a built corpus site (corpus/record.py writes it) over HTTPS.

    python corpus/server.py --site DIR --cert C --key K --ready FILE

DIR holds `site.json` (host -> IP, and every resource: host, target, status,
content type, headers, whether the body is gzip) and `bodies/<sha256>`.
Listens on port 443 of every IP of the site, so it runs inside the network
namespace made for it. A request is answered by its exact target, else by
its path (a font URL's cache-busting query), else 404. Writes FILE when
every socket listens.
"""

from __future__ import annotations

import argparse
import json
import ssl
import threading
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

AS_OF = 1793491200.0
"""2026-11-01T00:00:00Z: the time every corpus recording is made at (its Date headers
and corpus.record.RECORDED_AT, where the pinned script's clock starts)."""


def load(site_dir: Path) -> tuple[dict[str, str], dict[tuple[str, str], tuple]]:
    index = json.loads((site_dir / "site.json").read_text())
    table = {}
    for host, target, status, ctype, headers, gz, sha in index["resources"]:
        body = (site_dir / "bodies" / sha).read_bytes() if sha else b""
        table[(host, target)] = (status, ctype, [tuple(h) for h in headers], gz, body)
    return index["ips"], table


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "corpus/1"
    table: dict  # set on the subclass made per server

    def log_message(self, format, *args):
        pass

    def date_time_string(self, timestamp=None):
        """Every response's Date is the corpus's time (corpus.record.RECORDED_AT), not
        now: a site recorded twice gives the same bytes."""
        return formatdate(AS_OF, usegmt=True)

    def do_GET(self):
        host = (self.headers.get("host") or "").split(":")[0].lower()
        res = self.table.get((host, self.path)) or self.table.get((host, urlsplit(self.path).path))
        if res is None:
            res = (404, "text/plain", [], False, b"not found\n")
        status, ctype, headers, gz, body = res
        self.send_response(status)
        self.send_header("content-type", ctype)
        for k, v in headers:
            self.send_header(k, v)
        if gz:
            self.send_header("content-encoding", "gzip")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, handler, tls: ssl.SSLContext):
        self.tls = tls
        super().__init__(addr, handler)

    def finish_request(self, request, client_address):
        try:
            request.settimeout(10)
            request = self.tls.wrap_socket(request, server_side=True)
            request.settimeout(None)
        except (OSError, ssl.SSLError):
            return
        self.RequestHandlerClass(request, client_address, self)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site", required=True, type=Path)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--ready", required=True, type=Path)
    args = ap.parse_args(argv)
    ips, table = load(args.site)
    handler = type("SiteHandler", (Handler,), {"table": table})
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(args.cert, args.key)
    tls.set_alpn_protocols(["http/1.1"])
    servers = [Server((ip, 443), handler, tls) for ip in sorted(set(ips.values()))]
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    args.ready.write_text("ready\n")
    threading.Event().wait()


if __name__ == "__main__":
    main()
