"""The mitmproxy addon that captures a page load for `testbed record`.

    mitmdump -s testbed/record/addon.py --set testbed_capture=DIR \
             [--set testbed_resolve=host=ip ...]

For every completed exchange it appends one JSON line to DIR/exchanges.jsonl
(scheme, host, port, the IP that really answered — the server connection's
peer address —, method, target, headers as received with lower-case names,
status, body SHA-256) and stores the body once as DIR/bodies/<sha256>, as
received on the wire: de-chunked by mitmproxy, content-encoding kept. It
records nothing else: normalisation is the recorder's (testbed.record.normalise).

Connection failures and TLS failures go to DIR/errors.jsonl, so the
recorder can say why a page did not load. When mitmproxy is listening,
DIR/ready.json holds its port (listen on port 0 and let the kernel choose).

testbed_resolve maps host names to IPs (like curl's --resolve): when it is
set, only those hosts are contacted and no name is looked up; the recorded
host is still the name the browser asked for.

testbed_pin=TIME_MS puts the pinned script (testbed.record.pinned_script, its clock
starting at TIME_MS) in every HTML response the browser gets, after the response
as the origin sent it was recorded: the page's own scripts then ask for the URLs a
replay pinned to the same time will ask for.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path

from mitmproxy import ctx, exceptions, http, tls
from mitmproxy.proxy import server_hooks

from testbed.record import pinned_script

log = logging.getLogger(__name__)


def _pairs(fields) -> list[list[str]]:
    """Header fields as [[name, value]], names lower-case; bytes kept via latin-1."""
    return [[k.decode("latin-1").lower(), v.decode("latin-1")] for k, v in fields]


def parse_resolve(items: Sequence[str]) -> dict[str, str]:
    """["host=ip", ...] -> {host: ip}; OptionsError names a malformed item."""
    out = {}
    for item in items:
        host, sep, ip = item.partition("=")
        if not sep or not host or not ip:
            raise exceptions.OptionsError(f"testbed_resolve: {item!r} is not host=ip")
        out[host.lower()] = ip
    return out


def parse_pin(value: str) -> str | None:
    """testbed_pin's value ("" or TIME_MS) -> the pinned script, or None."""
    if not value:
        return None
    if not value.isdigit():
        raise exceptions.OptionsError(f"testbed_pin: {value!r} is not a time in ms")
    return pinned_script.script(pinned_script.Pin(int(value)))


def pin_page(resp: http.Response, script: str) -> None:
    """The response the browser gets with the pinned script in, if it is HTML (as the
    replay serves it: testbed.replay.deterministic); as it came if it cannot be."""
    headers = tuple((k, v) for k, v in _pairs(resp.headers.fields))
    if not pinned_script.is_html(headers) or resp.status_code == 206:  # a part of a page
        return
    try:
        new, body = pinned_script.rewrite(headers, resp.raw_content or b"", script)
    except pinned_script.NotInjected as e:
        log.warning(f"testbed capture: pinned script not put in ({e})")
        return
    resp.headers = http.Headers([(k.encode("latin-1"), v.encode("latin-1")) for k, v in new])
    resp.raw_content = body


class Capture:
    def __init__(self) -> None:
        self.dir: Path | None = None
        self.resolve: dict[str, str] = {}
        self.names: dict[str, str] = {}
        """server connection id -> host name asked for, where the address became an IP."""
        self.script: str | None = None
        """The pinned script put in HTML responses (testbed_pin), or None."""

    def load(self, loader) -> None:
        loader.add_option("testbed_capture", str, "", "Folder the captured exchanges go to.")
        loader.add_option("testbed_resolve", Sequence[str], [],
                          "host=ip: contact host at ip (no name lookup); "
                          "when set, hosts not listed are refused.")
        loader.add_option("testbed_pin", str, "",
                          "TIME_MS: put the pinned script, its clock starting there, in "
                          "every HTML response the browser gets (recorded as sent).")

    def configure(self, updated) -> None:
        if "testbed_capture" in updated and ctx.options.testbed_capture:
            self.dir = Path(ctx.options.testbed_capture)
            if not self.dir.is_dir():
                raise exceptions.OptionsError(f"testbed_capture: {self.dir} is not a folder")
            (self.dir / "bodies").mkdir(exist_ok=True)
        if "testbed_resolve" in updated:
            self.resolve = parse_resolve(ctx.options.testbed_resolve)
        if "testbed_pin" in updated:
            self.script = parse_pin(ctx.options.testbed_pin)

    def running(self) -> None:
        if self.dir is None:
            return
        addrs = ctx.master.addons.get("proxyserver").listen_addrs()
        self._write_atomic("ready.json", {"listen": [list(a[:2]) for a in addrs]})

    def server_connect(self, data: server_hooks.ServerConnectionHookData) -> None:
        if not self.resolve or data.server.address is None:
            return
        host, port = data.server.address
        ip = self.resolve.get(str(host).lower())
        self.names[data.server.id] = str(host)
        if ip is None:
            data.server.error = f"{host} is not in the resolve map"
        else:
            data.server.address = (ip, port)

    def server_connect_error(self, data: server_hooks.ServerConnectionHookData) -> None:
        self._error("connect", data.server, data.server.error)

    def tls_failed_server(self, data: tls.TlsData) -> None:
        self._error("tls", data.conn, data.conn.error)

    def error(self, flow: http.HTTPFlow) -> None:
        self._error("http", flow.server_conn, flow.error.msg if flow.error else "",
                    url=flow.request.pretty_url, host=flow.request.pretty_host)

    def response(self, flow: http.HTTPFlow) -> None:
        if self.dir is None or flow.error or flow.response is None:
            return
        peer = flow.server_conn.peername
        if not peer:  # a response mitmproxy made itself (e.g. a 502), not the server's
            return
        req, resp = flow.request, flow.response
        body = resp.raw_content or b""
        sha = hashlib.sha256(body).hexdigest() if body else None
        row = {
            "scheme": req.scheme,
            # The name the browser asked for (Host / :authority): req.host is the
            # address connected to, an IP where testbed_resolve mapped it.
            "host": req.pretty_host.lower(),
            "port": req.port,
            "ip": peer[0],
            "method": req.method,
            "target": req.path,
            "http_version": resp.http_version,
            "request_headers": _pairs(req.headers.fields),
            "status": resp.status_code,
            "response_headers": _pairs(resp.headers.fields),
            "body": sha,
            "body_size": len(body),
        }
        try:
            if sha is not None and not (self.dir / "bodies" / sha).exists():
                tmp = self.dir / "bodies" / f".{sha}.tmp"
                tmp.write_bytes(body)
                tmp.rename(self.dir / "bodies" / sha)
            self._append("exchanges.jsonl", row)
        except OSError as e:
            # As mitmproxy's save addon: stop rather than let traffic through unrecorded.
            log.error(f"testbed capture: cannot write to {self.dir}: {e}; stopping")
            ctx.master.shutdown()
            return
        if self.script is not None and req.method != "HEAD" and body:
            pin_page(resp, self.script)

    def _error(self, kind: str, conn, msg: str | None, url: str | None = None,
               host: str | None = None) -> None:
        if self.dir is None:
            return
        address = list(conn.address) if conn is not None and conn.address else [None, None]
        if host is None and conn is not None:
            host = self.names.get(conn.id, address[0])
        self._append("errors.jsonl", {"kind": kind, "host": host, "address": address[0],
                                      "port": address[1], "url": url,
                                      "error": msg or "unknown error"})

    def _append(self, name: str, row: dict) -> None:
        assert self.dir is not None
        with open(self.dir / name, "a") as f:
            f.write(json.dumps(row) + "\n")

    def _write_atomic(self, name: str, data: dict) -> None:
        assert self.dir is not None
        tmp = self.dir / f".{name}.tmp"
        tmp.write_text(json.dumps(data))
        os.replace(tmp, self.dir / name)


addons = [Capture()]
