"""`testbed record` for real: mitmdump and Chromium record the local test site.

The site (tests/site/) runs in a namespace this module creates, on two IPs
and three host names, over HTTPS with its own throwaway CA; the recorder's
proxy and browser run in that same namespace (--netns), so no packet leaves
it. The server logs what it sent; the recording is checked against that.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from support.paths import SITE, TESTBED

from testbed.formats import recording
from testbed.host import topology

sys.path.insert(0, str(SITE))  # the site's modules are scripts too
import sitegen
from harness import LocalSite

pytestmark = pytest.mark.e2e

SPEC = sitegen.TEST_SITE
DEAD_IP = "10.77.0.9"  # exists in the namespace, nothing listens on it
EXTRA_HOSTS = ["--resolve", f"dead.site.test={DEAD_IP}",
               "--resolve", f"badtls.site.test={SPEC.ips[SPEC.www]}"]  # not in the certificate


def run_record(site: LocalSite, url: str, out: Path, *extra: str) -> subprocess.CompletedProcess:
    argv = [str(TESTBED), "record", url, "--out", str(out), *site.record_args(), *EXTRA_HOSTS,
            *extra]
    return subprocess.run(argv, check=False, capture_output=True, text=True, timeout=300)


@pytest.fixture
def site():
    """The test site in its namespace, for one test.

    Per test, not per module: a namespace must not outlive the run state of
    the process that owns it (tests/conftest.py releases it after each test,
    and `testbed` sweeps namespaces of runs without state).
    """
    with LocalSite(SPEC, promo="rotate") as s:
        s.ns.add_address(DEAD_IP)
        yield s


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The test site recorded with 3 loads; (recording, what the server sent)."""
    out = tmp_path_factory.mktemp("recordings")
    with LocalSite(SPEC, promo="rotate") as site:
        cp = run_record(site, SPEC.url(), out, "--name", "site", "--loads", "3")
        served = site.served()
    print(cp.stdout, cp.stderr)
    assert cp.returncode == 0, cp.stderr
    assert sorted(p.name for p in out.iterdir()) == ["site"]  # no temporary folder left
    return recording.load(out / "site"), served


def test_every_origin_is_recorded_with_the_ip_that_served_it(recorded):
    rec, served = recorded
    assert {(o.scheme, o.host, o.port, o.ip) for o in rec.origins} == {
        ("https", host, 443, ip) for host, ip in SPEC.ips.items()}
    assert rec.ips == ["10.77.0.1", "10.77.0.2"]
    answered_by = {(s["host"], s["local_ip"]) for s in served}
    for x in rec.exchanges:
        assert (x.host, x.ip) in answered_by
        assert x.ip == SPEC.ips[x.host]


def test_the_union_of_three_loads_holds_every_promo_image_shown(recorded):
    rec, served = recorded
    shown = {s["target"] for s in served if s["target"].startswith("/promo/")}
    recorded_promos = {x.target for x in rec.exchanges if x.target.startswith("/promo/")}
    assert len(shown) == 3  # the server rotates: three loads showed three different images
    assert recorded_promos == shown
    # The promo script itself is kept once: from the first load.
    [script] = [x for x in rec.exchanges if x.target == "/js/promo.js"]
    assert rec.body(script) == sitegen.promo_script(SPEC, 0)


def test_every_body_is_byte_identical_to_what_the_server_sent(recorded):
    rec, served = recorded
    sent: dict[tuple, set] = {}
    for s in served:
        sent.setdefault((s["host"], s["target"]), set()).add(s["body_sha256"])
    static = sitegen.build(SPEC)
    assert rec.exchanges and sent
    for x in rec.exchanges:
        body = rec.body(x)
        assert (hashlib.sha256(body).hexdigest() if body else None) in sent[(x.host, x.target)]
        path = x.target.split("?")[0]
        if (x.host, path) in static and x.target != "/js/promo.js":
            assert body == static[(x.host, path)].body, x.target


def test_chunked_responses_are_stored_dechunked_with_a_content_length(recorded):
    rec, served = recorded
    chunked = {(s["host"], s["target"]) for s in served if s["chunked"]}
    assert (SPEC.static, "/js/app.js") in chunked
    assert (SPEC.api, "/api/headlines?section=top&n=5") in chunked  # and a query string
    for x in rec.exchanges:
        names = [k for k, _ in x.response_headers]
        assert "transfer-encoding" not in names
        if x.status != 304:
            assert dict(x.response_headers)["content-length"] == str(x.body_size)
        if (x.host, x.target) in chunked:
            assert rec.body(x) and b"\r\n0\r\n" not in rec.body(x)[-10:]
    [api] = [x for x in rec.exchanges if x.target == "/api/headlines?section=top&n=5"]
    assert json.loads(rec.body(api))["section"] == "top"


def test_alt_svc_and_alternate_protocol_are_gone(recorded):
    rec, _ = recorded
    sent_with = [r for r in sitegen.build(SPEC).values() if sitegen.ALT_SVC in r.headers]
    assert sent_with  # the site does send them
    for x in rec.exchanges:
        names = {k for k, _ in x.response_headers}
        assert not names & {"alt-svc", "alternate-protocol"}


def test_gzip_is_kept_as_sent_and_other_headers_kept(recorded):
    rec, _ = recorded
    [css] = [x for x in rec.exchanges if x.target == "/css/site.css"]
    headers = dict(css.response_headers)
    assert headers["content-encoding"] == "gzip"
    assert rec.body(css)[:2] == b"\x1f\x8b"
    assert headers["cache-control"] == "public, max-age=3600"
    assert headers["access-control-allow-origin"] == "*"
    assert all(k == k.lower() for x in rec.exchanges for k, _ in x.response_headers)


def test_redirect_font_images_and_scripts_are_recorded(recorded):
    rec, _ = recorded
    by_target = {(x.host, x.target): x for x in rec.exchanges}
    redirect = by_target[(SPEC.www, "/")]
    assert redirect.status == 302 and dict(redirect.response_headers)["location"] == "/index.html"
    assert (SPEC.cdn, "/fonts/sans.woff2") in by_target
    assert all((SPEC.cdn, f"/img/article-{i}.jpg") in by_target for i in range(SPEC.articles))
    assert (SPEC.static, "/js/app.js") in by_target and (SPEC.www, "/index.html") in by_target
    assert rec.loads == 3 and rec.chromium_version and rec.mitmproxy_version == "11.0.2"


def test_show_and_har_work_on_the_recording(recorded, tmp_path):
    rec, _ = recorded
    show = subprocess.run([str(TESTBED), "recording", "show", str(rec.path)],
                          check=False, capture_output=True, text=True, timeout=60)
    assert show.returncode == 0, show.stderr
    assert all(h in show.stdout for h in SPEC.hosts)
    har_file = tmp_path / "site.har"
    har = subprocess.run([str(TESTBED), "recording", "har", str(rec.path), "--output", str(har_file)],
                         check=False, capture_output=True, text=True, timeout=60)
    assert har.returncode == 0, har.stderr
    from support.har import har_validator

    doc = json.loads(har_file.read_text())
    assert har_validator().is_valid(doc)
    assert len(doc["log"]["entries"]) == len(rec.exchanges)


@pytest.mark.parametrize("url, extra, cause", [
    ("ftp://www.site.test/", [], "not an http:// or https:// URL"),
    ("https://dead.site.test/", [], f"cannot reach dead.site.test:443 ({DEAD_IP})"),
    ("https://badtls.site.test/", [], "TLS failure with badtls.site.test:443"),
    ("https://www.site.test/hang", ["--timeout", "5"], "did not finish loading within 5 s"),
    ("https://nowhere.test/", [], "cannot reach nowhere.test:443"),
], ids=["not-http", "unreachable", "tls-failure", "never-loads", "unknown-host"])
def test_errors_give_one_line_and_write_nothing(site, tmp_path, url, extra, cause):
    out = tmp_path / "out"
    cp = run_record(site, url, out, "--loads", "2", *extra)
    assert cp.returncode != 0
    assert cp.stdout == ""
    lines = cp.stderr.strip().splitlines()
    assert len(lines) == 1, cp.stderr
    assert lines[0].startswith("testbed: error: ") and cause in lines[0], lines[0]
    assert not out.exists() or not any(out.iterdir())


def _own_address() -> str | None:
    """An IPv4 address of this machine a replay could serve (not loopback): packets to it
    stay on the machine as loopback's do."""
    import ipaddress

    out = subprocess.run(["ip", "-4", "-j", "addr", "show", "scope", "global"], check=True,
                         capture_output=True, text=True).stdout
    for link in json.loads(out):
        for a in link.get("addr_info", []):
            ip = ipaddress.IPv4Address(a["local"])
            if not any(ip in n for n in topology.OWN_NETWORKS):
                return str(ip)
    return None


SPARE_ADDRESS = "198.51.100.77"
"""An address for loopback where the machine has no global IPv4 address (a container
without a network: `make image-test`); TEST-NET-2, which no network routes."""


@contextmanager
def own_address() -> Iterator[str]:
    """One of this machine's own global IPv4 addresses; where it has none, SPARE_ADDRESS
    on loopback for the test's duration (removed after it, also on failure)."""
    own = _own_address()
    if own is not None:
        yield own
        return
    subprocess.run(["ip", "addr", "add", f"{SPARE_ADDRESS}/32", "dev", "lo"], check=True,
                   capture_output=True, timeout=30)
    try:
        yield SPARE_ADDRESS
    finally:
        subprocess.run(["ip", "addr", "del", f"{SPARE_ADDRESS}/32", "dev", "lo"], check=True,
                       capture_output=True, timeout=30)


def test_records_without_a_namespace_through_host_loopback(tmp_path):
    with own_address() as own:
        _record_through_host_loopback(tmp_path, own)


def _record_through_host_loopback(tmp_path, own: str) -> None:
    """The path real sites take (no --netns): proxy and browser in the host's namespace.

    The only server is on one of this machine's own addresses (not 127.0.0.1,
    which a recording may not hold: a replay cannot serve it); --resolve sends
    the site's name there, so no packet leaves the machine.
    """
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    pages = {"/": (b"text/html", b"<!doctype html><title>t</title><img src='/pic.png'>"),
             "/pic.png": (b"image/png", sitegen._png(40, 20, (0, 128, 0)))}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            ctype, body = pages.get(self.path, (b"text/plain", b"missing"))
            self.send_response(200 if self.path in pages else 404)
            self.send_header("content-type", ctype.decode())
            self.send_header("content-length", str(len(body)))
            self.send_header("alt-svc", 'h3=":443"')
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer((own, 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        cp = subprocess.run([str(TESTBED), "record", f"http://loop.test:{port}/", "--loads", "1",
                             "--out", str(tmp_path), "--resolve", f"loop.test={own}"],
                            check=False, capture_output=True, text=True, timeout=300)
    finally:
        server.shutdown()
        server.server_close()
    assert cp.returncode == 0, cp.stderr
    rec = recording.load(tmp_path / f"loop.test-{port}")
    assert [(o.scheme, o.host, o.port, o.ip) for o in rec.origins] == [
        ("http", "loop.test", port, own)]
    by_target = {x.target: x for x in rec.exchanges}
    assert rec.body(by_target["/pic.png"]) == pages["/pic.png"][1]
    assert all("alt-svc" not in dict(x.response_headers) for x in rec.exchanges)
