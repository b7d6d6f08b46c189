"""The recorder's side of deterministic scripts: the proxy puts the pinned script in the
HTML the browser gets (testbed_pin) and records the response as the origin sent it."""

from __future__ import annotations

import gzip
import json

import pytest
from mitmproxy import exceptions
from mitmproxy.test import taddons, tflow, tutils

from testbed.record import addon as addon_mod
from testbed.record import pinned_script
from testbed.record.proxy import mitmdump_argv
from testbed.record.recorder import RecordOptions

TIME_MS = 1_700_000_000_000
PAGE = b"<!doctype html><html><head><title>t</title></head><body>x</body></html>"


@pytest.fixture
def capture(tmp_path):
    a = addon_mod.Capture()
    with taddons.context(a) as tctx:
        tctx.configure(a, testbed_capture=str(tmp_path), testbed_pin=str(TIME_MS))
        yield a, tctx, tmp_path


def flow(body: bytes, headers, method=b"GET"):
    f = tflow.tflow(resp=True)
    f.request = tutils.treq(host="www.a.test", port=443, scheme=b"https", path=b"/",
                            method=method, headers=[(b"Host", b"www.a.test")])
    f.response = tutils.tresp(headers=list(headers), content=b"")
    f.response.raw_content = body
    f.server_conn.peername = ("10.0.0.7", 443)
    return f


def recorded(d):
    [x] = [json.loads(line) for line in (d / "exchanges.jsonl").read_text().splitlines()]
    return x, (d / "bodies" / x["body"]).read_bytes()


def test_the_browser_gets_the_script_and_the_recording_the_page_as_sent(capture):
    a, _, d = capture
    gz = gzip.compress(PAGE, mtime=0)
    f = flow(gz, ((b"Content-Type", b"text/html"), (b"Content-Encoding", b"gzip"),
                  (b"Content-Length", str(len(gz)).encode()),
                  (b"Content-Security-Policy", b"script-src 'self'")))
    a.response(f)
    x, body = recorded(d)
    assert body == gz and ["content-security-policy", "script-src 'self'"] in \
        x["response_headers"]
    text = pinned_script.script(pinned_script.Pin(TIME_MS))
    sent = gzip.decompress(f.response.raw_content)
    assert sent == PAGE.replace(b"<head>", b"<head><script>" + text.encode() + b"</script>")
    assert f.response.headers["content-length"] == str(len(f.response.raw_content))
    assert pinned_script.script_hash(text) in f.response.headers["content-security-policy"]


@pytest.mark.parametrize(("headers", "method"), [
    (((b"Content-Type", b"text/javascript"),), b"GET"),
    (((b"Content-Type", b"text/html"), (b"Content-Encoding", b"compress")), b"GET"),
    (((b"Content-Type", b"text/html"),), b"HEAD"),
])
def test_other_responses_go_to_the_browser_as_sent(capture, headers, method):
    a, _, _ = capture
    f = flow(PAGE, headers, method)
    a.response(f)
    assert f.response.raw_content == PAGE


def test_without_the_option_nothing_changes(tmp_path):
    a = addon_mod.Capture()
    with taddons.context(a) as tctx:
        tctx.configure(a, testbed_capture=str(tmp_path))
        f = flow(PAGE, ((b"Content-Type", b"text/html"),))
        a.response(f)
    assert f.response.raw_content == PAGE


def test_a_pin_that_is_not_a_time_is_refused(capture):
    a, tctx, _ = capture
    with pytest.raises(exceptions.OptionsError, match="testbed_pin"):
        tctx.configure(a, testbed_pin="soon")


def test_the_recorder_asks_the_proxy_for_the_recordings_time(tmp_path):
    on = mitmdump_argv(tmp_path / "c", tmp_path / "cap", {}, None, TIME_MS)
    assert f"testbed_pin={TIME_MS}" in on
    assert not any("testbed_pin" in a for a in mitmdump_argv(tmp_path / "c", tmp_path / "cap",
                                                              {}, None))
    assert RecordOptions(url="https://a.test/").deterministic_scripts is True
    assert pinned_script.pin_at("2023-11-14T22:13:20Z").time_ms == TIME_MS
