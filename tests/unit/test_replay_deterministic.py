"""The pinned script (testbed.record.pinned_script) and deterministic replays
(testbed.replay.deterministic): where the script goes in the HTML,
how a policy is widened to let it run, encoded bodies, the copy of a recording both
servers serve, and the script itself run by Node (what Chromium runs in the e2e test)."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess

import brotli
import pytest
import zstandard
from support.needs import need

from testbed.formats import recording as rec
from testbed.record import pinned_script as ps
from testbed.replay import deterministic as det
from testbed.validate.site import exchange, write

PIN = ps.Pin(1_700_000_000_000)
TEXT = ps.script(PIN)
TAG = b"<script>" + TEXT.encode() + b"</script>"
SOURCE = ps.script_hash(TEXT)


# --- the pin and the script --------------------------------------------------------------
@pytest.mark.parametrize("recorded_at", ["2023-11-14T22:13:20Z", "2023-11-14T22:13:20+00:00",
                                         "2023-11-14T22:13:20"])
def test_the_clock_starts_at_the_recordings_time(tmp_path, recorded_at):
    path = write(tmp_path, "s", "https://a.test/", [exchange("https://a.test/", "192.0.2.1",
                                                              b"<p>x")])
    loaded = rec.load(path)
    loaded = rec.Recording(**{**loaded.__dict__, "recorded_at": recorded_at})
    assert det.pin_for(loaded) == ps.Pin(1_700_000_000_000, ps.SEED)


def test_the_script_has_the_pin_filled_in_and_no_comments():
    assert "1700000000000" in TEXT and str(ps.SEED) in TEXT
    assert "TIME_MS" not in TEXT and "SEED" not in TEXT
    assert "//" not in TEXT and "</script" not in TEXT.lower()


def test_the_hash_is_a_csp_sha256_source():
    assert SOURCE.startswith("'sha256-") and SOURCE.endswith("='")


# --- where it goes -----------------------------------------------------------------------
@pytest.mark.parametrize(("html", "before"), [
    (b"<!doctype html><html><head><title>t</title></head><body>x</body></html>",
     b"<!doctype html><html><head>"),
    (b"<HTML lang=en><HEAD id=h><TITLE>t</TITLE>", b"<HTML lang=en><HEAD id=h>"),
    (b"<!doctype html><html lang=en><title>t</title><body>x", b"<!doctype html><html lang=en>"),
    (b"<!DOCTYPE html><p>no html or head tag", b"<!DOCTYPE html>"),
    (b"<p>a fragment", b""),
    # <header> is not <head>; a <head> inside the body is not the head
    (b"<html><body><header>h</header><head>", b"<html>"),
])
def test_the_script_goes_first_in_the_head(html, before):
    out = ps.inject_html(html, TEXT)
    assert out == before + TAG + html[len(before):]


def test_never_inside_a_comment():
    html = (b"<!doctype html><!--[if IE]><html class=ie><![endif]--><!--[if !IE]>-->"
            b"<html class=x><!--<![endif]--><title>t</title>")
    out = ps.inject_html(html, TEXT)
    assert out.index(TAG) == html.index(b"<html class=x>") + len(b"<html class=x>")
    unclosed = b"<!doctype html><!-- <head> <html>"
    assert ps.inject_html(unclosed, TEXT) == b"<!doctype html>" + TAG + unclosed[15:]


@pytest.mark.parametrize("hostile", [b"<head " * 300_000, b"<!--" * 300_000,
                                     b"<html" + b" a" * 3_000_000 + b">"])
def test_a_hostile_body_costs_linear_time(hostile):
    import time

    t0 = time.monotonic()
    assert ps.inject_html(hostile, TEXT).endswith(hostile[-100:])
    assert time.monotonic() - t0 < 2


def test_past_meta_charset_when_it_would_leave_the_prescan():
    html = b"<!doctype html><html><head><meta charset=\"utf-8\"><title>t</title>"
    out = ps.inject_html(html, TEXT)
    assert out.index(b"<meta charset") < out.index(b"<script>")
    assert out.index(b"<meta charset") < ps.CHARSET_PRESCAN


def test_before_a_meta_policy_even_if_charset_follows_it():
    html = (b"<html><head><meta http-equiv=\"Content-Security-Policy\" "
            b"content=\"script-src 'self'\"><meta charset=utf-8>")
    out = ps.inject_html(html, TEXT)
    assert out.index(b"<script>") < out.index(b"Content-Security-Policy")


def test_charset_far_down_is_left_where_it_is():
    html = b"<html><head>" + b" " * 2000 + b"<meta charset=utf-8>"
    assert ps.inject_html(html, TEXT).startswith(b"<html><head>" + TAG)


def test_utf16_is_served_as_recorded():
    with pytest.raises(ps.NotInjected, match="UTF-16"):
        ps.inject_html("<html><head>".encode("utf-16"), TEXT)


# --- the policy --------------------------------------------------------------------------
@pytest.mark.parametrize(("policy", "expected"), [
    # no directive governs inline scripts: allowed already
    ("img-src 'self'", "img-src 'self'"),
    # inline scripts allowed: a hash would turn 'unsafe-inline' off, so nothing is added
    ("script-src 'self' 'unsafe-inline'", "script-src 'self' 'unsafe-inline'"),
    ("script-src 'self'", f"script-src 'self' {SOURCE}"),
    ("default-src 'self'; img-src *", f"default-src 'self'; img-src *; script-src 'self' {SOURCE}"),
    ("script-src 'none'", f"script-src {SOURCE}"),
    ("script-src 'unsafe-inline' 'nonce-abc'", f"script-src 'unsafe-inline' 'nonce-abc' {SOURCE}"),
    ("script-src 'strict-dynamic' 'nonce-abc' 'unsafe-inline' https:",
     f"script-src 'strict-dynamic' 'nonce-abc' 'unsafe-inline' https: {SOURCE}"),
    ("script-src *; script-src-elem 'self'", f"script-src *; script-src-elem 'self' {SOURCE}"),
    ("img-src *, script-src 'self'", f"img-src *, script-src 'self' {SOURCE}"),
])
def test_the_governing_directive_allows_the_scripts_hash(policy, expected):
    assert ps.allow_script(policy, SOURCE) == expected


# --- one response ------------------------------------------------------------------------
HTML = b"<!doctype html><html><head><title>t</title></head><body>hello</body></html>"


def headers(encoding=None, csp=None, ctype="text/html; charset=utf-8"):
    h = [("content-type", ctype), ("content-length", "0")]
    h += [("content-encoding", encoding)] if encoding else []
    h += [("content-security-policy", csp)] if csp else []
    return tuple(h)


@pytest.mark.parametrize(("encoding", "encode", "decode"), [
    (None, lambda b: b, lambda b: b),
    ("gzip", gzip.compress, gzip.decompress),
    ("br", brotli.compress, brotli.decompress),
    ("zstd", zstandard.ZstdCompressor().compress,
     lambda b: zstandard.ZstdDecompressor().decompressobj().decompress(b)),
])
def test_an_encoded_body_is_decoded_injected_and_encoded_again(encoding, encode, decode):
    out_headers, body = ps.rewrite(headers(encoding), encode(HTML), TEXT)
    assert decode(body) == HTML.replace(b"<head>", b"<head>" + TAG)
    assert dict(out_headers)["content-length"] == str(len(body))
    assert dict(out_headers).get("content-encoding") == encoding


def test_gzip_is_reproducible():
    one = ps.rewrite(headers("gzip"), gzip.compress(HTML), TEXT)
    assert ps.rewrite(headers("gzip"), gzip.compress(HTML, mtime=5), TEXT) == one


def test_the_policy_header_follows():
    out_headers, _ = ps.rewrite(headers(csp="script-src 'self'"), HTML, TEXT)
    assert dict(out_headers)["content-security-policy"] == f"script-src 'self' {SOURCE}"


@pytest.mark.parametrize(("encoding", "body", "why"), [
    ("compress", b"x", "does not decode"),
    ("gzip", b"not gzip", "does not decode"),
])
def test_what_cannot_be_rewritten_says_why(encoding, body, why):
    with pytest.raises(ps.NotInjected, match=why):
        ps.rewrite(headers(encoding), body, TEXT)


@pytest.mark.parametrize(("ctype", "html"), [("text/html", True), ("TEXT/HTML; charset=x", True),
                                             ("application/xhtml+xml", False),
                                             ("text/plain", False)])
def test_only_html_is_rewritten(ctype, html):
    assert ps.is_html(headers(ctype=ctype)) is html


# --- the recording served ----------------------------------------------------------------
@pytest.fixture
def site(tmp_path):
    gz = gzip.compress(HTML)
    page, body = exchange("https://www.a.test/", "192.0.2.10", gz, headers=(
        ("content-encoding", "gzip"), ("content-security-policy", "script-src 'self'")))
    path = write(tmp_path / "in", "site", "https://www.a.test/", [
        ({**page, "seen_in": 1}, body),  # an optional key kept; the others stay absent
        exchange("https://www.a.test/frame.html", "192.0.2.10", b"<p>frame"),
        exchange("https://www.a.test/odd.html", "192.0.2.10", b"x", headers=(
            ("content-encoding", "compress"),)),
        exchange("https://www.a.test/app.js", "192.0.2.10", b"1", "text/javascript"),
        exchange("https://www.a.test/none", "192.0.2.10", b"", status=204),
        exchange("https://www.a.test/part.html", "192.0.2.10", b"<p>part", status=206),
    ])
    return rec.load(path)


def test_the_served_copy_carries_the_script_and_loads_as_any_recording(site, tmp_path):
    served, report = det.served_recording(site, tmp_path / "served", PIN)
    assert served.path == tmp_path / "served"
    assert rec.load(served.path).content_sha256 == served.content_sha256
    assert report.injected == 2
    why = "body does not decode: unknown content-encoding 'compress'"
    assert report.skipped == [("https://www.a.test/odd.html", why)]
    by_target = {x.target: x for x in served.exchanges}
    page = by_target["/"]
    assert page.seen_in == 1 and by_target["/app.js"].seen_in is None
    assert TAG in gzip.decompress(served.body(page))
    assert dict(page.response_headers)["content-length"] == str(page.body_size)
    assert SOURCE in dict(page.response_headers)["content-security-policy"]
    assert served.body(by_target["/frame.html"]).startswith(TAG)
    originals = {x.target: x for x in site.exchanges}
    for target in ("/odd.html", "/app.js", "/none", "/part.html"):
        assert by_target[target] == originals[target]
    assert [(x.scheme, x.host, x.method, x.target) for x in served.exchanges] == \
        [(x.scheme, x.host, x.method, x.target) for x in site.exchanges]
    assert served.recorded_at == site.recorded_at and served.origins == site.origins
    assert json.dumps(report.as_dict())  # what the manifest records


def test_no_html_no_copy(tmp_path):
    path = write(tmp_path, "s", "https://a.test/x.js",
                 [exchange("https://a.test/x.js", "192.0.2.1", b"1", "text/javascript")])
    loaded = rec.load(path)
    served, report = det.served_recording(loaded, tmp_path / "served", PIN)
    assert served is loaded and report.injected == 0
    assert not (tmp_path / "served").exists()


# --- the script run ----------------------------------------------------------------------
NODE_CHECK = """
globalThis.window = globalThis;
const RealDate = Date;
const visit = () => { eval(SCRIPT);
  return [Math.random(), Math.random(), Date.now(), new Date().getTime(), typeof Date(),
          new Date(2020, 1, 2).getFullYear(), new Date(5).getTime(),
          new Date() instanceof RealDate, window.crypto.randomUUID(),
          Array.from(window.crypto.getRandomValues(new Uint8Array(4))),
          new (class extends Date {})().getTime(), Date.UTC(2000, 0, 1)]; };
console.log(JSON.stringify(visit()));
"""


def run_node(text):
    node = shutil.which("node")
    need(None if node else "node not found (make setup installs it for Browsertime)")
    program = f"const SCRIPT = {json.dumps(text)};\n" + NODE_CHECK
    return json.loads(subprocess.run([node, "-e", program], capture_output=True, text=True,
                                     check=True, timeout=30).stdout)


def test_the_script_pins_random_and_the_clock():
    first, second = run_node(TEXT), run_node(TEXT)
    assert first == second  # two visits, the same values
    r1, r2, now, then, as_text, year, given, is_date, uuid, values, sub, utc = first
    assert 0 <= r1 < 1 and 0 <= r2 < 1 and r1 != r2
    assert now == PIN.time_ms and then == PIN.time_ms + 1  # 1 ms per reading
    assert as_text == "string" and year == 2020 and given == 5 and is_date
    assert len(uuid) == 36 and uuid[14] == "4" and len(values) == 4
    assert sub == PIN.time_ms + 4  # Date() and new Date() read the clock too
    assert utc == 946684800000
    assert run_node(ps.script(ps.Pin(PIN.time_ms, ps.SEED + 1)))[0] != r1
