"""End to end: a replayed page whose own script requests `/r?<Math.random()>` and
`/t?<Date.now()>` makes the same requests in two visits, each in a fresh Chromium,
with no replay miss, over each stack (testbed.replay.deterministic, on by default).
The recording holds exactly the URLs the pinned script asks for, as a recording made
with the script would; with the option off, the two visits differ. And `testbed
record` of such a page, served for real, records those URLs once for both of its loads
(the recorder's proxy pins the pages too), and its replay asks for exactly them.

The page is gzip-encoded and its policy admits inline scripts by nonce only, so the
script runs only if the body was decoded, injected and encoded again and its hash
added to the policy."""

from __future__ import annotations

import gzip
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from support.needs import need, need_root
from support.paths import SITE, TESTBED

from testbed.formats import recording as rec
from testbed.host import proc
from testbed.host.chromium import CDPError, Chromium
from testbed.host.netns import NetNS
from testbed.host.paths import H3SERVER
from testbed.record import pinned_script
from testbed.replay import deterministic
from testbed.replay.env import ReplayEnv
from testbed.validate.site import exchange

pytestmark = pytest.mark.e2e

WWW, IP = "www.random.test", "192.0.2.80"
RECORDED_AT = "2019-06-01T12:00:00Z"
PIN = pinned_script.Pin(1559390400000)  # RECORDED_AT in ms
PAGE = b"""<!doctype html><html><head><meta charset="utf-8"><title>random</title>
<script nonce="n0nce">
window.asked = Promise.all([
  fetch('/r?' + Math.random(), {cache: 'no-store'}).then(r => r.text()),
  fetch('/t?' + Date.now(), {cache: 'no-store'}).then(r => r.text())]);
</script></head><body><p>random</p></body></html>
"""
HEADERS = (("cache-control", "no-store"), ("content-encoding", "gzip"),
           ("content-security-policy", "script-src 'nonce-n0nce'; object-src 'none'"))
ASKED = """(async () => { await window.asked;
  return performance.getEntriesByType('resource').map(e => e.name); })()"""


def mulberry32(seed: int) -> float:
    """The script's first Math.random() for `seed` (pinned_script.js, in Python)."""
    def imul(a: int, b: int) -> int:
        return (a * b) & 0xFFFFFFFF
    t = (seed + 0x6D2B79F5) & 0xFFFFFFFF
    t = imul(t ^ (t >> 15), t | 1)
    t ^= (t + imul(t ^ (t >> 7), t | 61)) & 0xFFFFFFFF
    return ((t ^ (t >> 14)) & 0xFFFFFFFF) / 4294967296


PINNED = [f"/r?{mulberry32(PIN.seed)!r}", f"/t?{PIN.time_ms}"]


@pytest.fixture(scope="module")
def site():
    d = Path(tempfile.mkdtemp(prefix="tb-deterministic-"))
    d.chmod(0o755)
    no_store = (("cache-control", "no-store"),)
    pairs = [exchange(f"https://{WWW}/", IP, gzip.compress(PAGE), headers=HEADERS),
             *(exchange(f"https://{WWW}{target}", IP, target.encode(), "text/plain",
                        headers=no_store) for target in PINNED),
             exchange(f"https://{WWW}/favicon.ico", IP, b"", "image/x-icon", status=204)]
    meta = {"name": "random", "url": f"https://{WWW}/", "loads": 1, "recorded_at": RECORDED_AT}
    try:
        yield rec.load(rec.write(d, meta, pairs))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def visit(env: ReplayEnv) -> tuple[list[str], dict]:
    """One visit in a fresh Chromium: the targets the page's script fetched, and the
    replay's misses during it."""
    before = env.summary()
    with Chromium(env.client_netns, env.chromium_flags()) as browser:
        page = browser.new_page()
        for attempt in range(3):  # a network change while link-local addresses settle
            try:
                page.navigate(f"https://{WWW}/")
                break
            except CDPError as e:
                if "ERR_NETWORK_CHANGED" not in str(e) or attempt == 2:
                    raise
        names = page.evaluate(ASKED)
        page.close()
    after = env.summary()
    prefix = f"https://{WWW}"
    asked = sorted(n[len(prefix):] for n in names
                   if n.startswith((f"{prefix}/r?", f"{prefix}/t?")))
    return asked, {"misses": after["misses"] - before["misses"],
                   "miss_urls": after["miss_urls"][len(before["miss_urls"]):]}


def needs(stack: str) -> None:
    need_root()
    if stack == "quic" and not H3SERVER.exists():
        need(f"{H3SERVER} not built (make setup)")


def test_the_recording_holds_the_pinned_urls(site):
    assert deterministic.pin_for(site) == PIN
    assert {x.target for x in site.exchanges} >= set(PINNED)


@pytest.mark.parametrize("stack", ["tcp", "quic"])
def test_two_visits_make_the_same_requests_with_no_miss(site, stack):
    needs(stack)
    with ReplayEnv(site, stack) as env:
        assert env.deterministic is not None and env.deterministic.injected == 1
        first, first_misses = visit(env)
        second, second_misses = visit(env)
    assert first == sorted(PINNED), first  # the recorded URLs exactly
    assert second == first
    assert first_misses["misses"] == 0 and second_misses["misses"] == 0, \
        (first_misses, second_misses)


def test_without_the_option_the_visits_differ(site):
    needs("tcp")
    with ReplayEnv(site, "tcp", deterministic_scripts=False) as env:
        assert env.deterministic is None and env.served is env.recording
        first, _ = visit(env)
        second, _ = visit(env)
    assert len(first) == len(second) == 2
    assert first != second and not set(first) & set(PINNED)


SERVER = """
import ssl, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
ip, cert, key, page, ready = sys.argv[1:6]
class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        if self.path == "/":
            body, ctype = open(page, "rb").read(), "text/html"
        elif self.path.startswith(("/r?", "/t?")):
            body, ctype = self.path.encode(), "text/plain"
        else:
            self.send_response(204); self.send_header("content-length", "0"); self.end_headers()
            return
        self.send_response(200)
        for k, v in (("content-type", ctype), ("content-length", str(len(body))),
                     ("cache-control", "no-store"),
                     ("content-security-policy", "script-src 'nonce-n0nce'")):
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
server = ThreadingHTTPServer((ip, 443), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
server.socket = context.wrap_socket(server.socket, server_side=True)
open(ready, "w").close()
server.serve_forever()
"""


def test_a_page_recorded_with_the_script_replays_its_urls_exactly(tmp_path):
    need_root()
    sys.path.insert(0, str(SITE))
    from harness import make_certs

    work = Path(tempfile.mkdtemp(prefix="tb-pinned-record-"))
    work.chmod(0o755)
    try:
        ca, cert, key = make_certs([WWW], work)
        (work / "page.html").write_bytes(PAGE)
        out = work / "out"
        with NetNS("pinned") as ns:
            ns.add_address(IP)
            ready = work / "ready"
            with proc.Background(ns.exec([sys.executable, "-c", SERVER, IP, str(cert),
                                          str(key), str(work / "page.html"), str(ready)]),
                                 log=work / "server.log") as server:
                deadline = time.monotonic() + 30
                while not ready.exists():
                    assert server.alive() and time.monotonic() < deadline, server.tail()
                    time.sleep(0.05)
                cp = subprocess.run([str(TESTBED), "record", f"https://{WWW}/", "--name", "r",
                                     "--out", str(out), "--loads", "2", "--netns", ns.name,
                                     "--upstream-ca", str(ca), "--resolve", f"{WWW}={IP}"],
                                    check=False, capture_output=True, text=True, timeout=300)
        assert cp.returncode == 0, cp.stderr
        made = rec.load(out / "r")
        pin = deterministic.pin_for(made)
        pinned = sorted([f"/r?{mulberry32(pin.seed)!r}", f"/t?{pin.time_ms}"])
        asked = sorted(x.target for x in made.exchanges if x.target.startswith(("/r?", "/t?")))
        assert asked == pinned  # one URL each for both loads: the pinned ones
        assert all(x.seen_in in (None, 2) for x in made.exchanges
                   if x.target.startswith(("/r?", "/t?")))
        [page] = [x for x in made.exchanges if x.target == "/"]
        assert made.body(page) == PAGE  # the page as the origin sent it, no script in it
        with ReplayEnv(made, "tcp") as env:
            replayed, misses = visit(env)
        assert replayed == pinned and misses["misses"] == 0, (replayed, misses)
    finally:
        shutil.rmtree(work, ignore_errors=True)
