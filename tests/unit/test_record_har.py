"""HAR 1.2 export (testbed/record/har_export.py) and `testbed recording show|har`, without the network."""

from __future__ import annotations

import base64
import gzip
import json

import pytest
from click.testing import CliRunner
from support.har import har_validator

from testbed.formats import recording
from testbed.record.cli import recording as recording_cli
from testbed.record.har_export import to_har, url_of
from testbed.record.recording_summary import resource_type, summarise

BUNDLED = recording.RECORDINGS_DIR / "local-news"

HTML = b"<!doctype html><title>x</title><img src='https://img.test/a.png'>"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
CSS = b"body { color: red }\n" * 50


def exchange(host, target, ip, status, headers, scheme="https", port=443):
    return {"scheme": scheme, "host": host, "port": port, "ip": ip, "method": "GET",
            "target": target, "request_headers": [["user-agent", "test"], ["cookie", "a=1; b=2"]],
            "status": status, "response_headers": headers}


@pytest.fixture
def rec(tmp_path) -> recording.Recording:
    css_gz = gzip.compress(CSS, mtime=0)
    rows = [
        (exchange("www.site.test", "/", "10.0.0.1", 302,
                  [["location", "/index.html"], ["content-length", "0"]]), b""),
        (exchange("www.site.test", "/index.html", "10.0.0.1", 200,
                  [["content-type", "text/html"], ["set-cookie", "s=1; Path=/"],
                   ["content-length", str(len(HTML))]]), HTML),
        (exchange("img.test", "/a.png?w=10&h=", "10.0.0.2", 200,
                  [["content-type", "image/png"], ["content-length", str(len(PNG))]]), PNG),
        (exchange("www.site.test", "/site.css", "10.0.0.1", 200,
                  [["content-type", "text/css"], ["content-encoding", "gzip"],
                   ["content-length", str(len(css_gz))]]), css_gz),
        (exchange("plain.test", "/x", "10.0.0.3", 404, [["content-type", "text/plain"]],
                  scheme="http", port=8080), b"nope"),
    ]
    path = recording.write(tmp_path, {"name": "unit", "url": "https://www.site.test/",
                                      "recorded_at": "2024-01-02T03:04:05Z", "loads": 2,
                                      "chromium_version": "130.0"}, rows)
    return recording.load(path)


def test_har_is_valid_har_1_2(rec):
    har = to_har(rec)
    errors = sorted(har_validator().iter_errors(har), key=str)
    assert not errors, errors[0]
    assert har["log"]["version"] == "1.2"
    assert len(har["log"]["entries"]) == len(rec.exchanges) == 5


def test_har_schema_rejects_a_broken_har(rec):
    har = to_har(rec)
    del har["log"]["entries"][0]["response"]["status"]
    assert not har_validator().is_valid(har)


def test_har_entries_carry_urls_ips_redirects_and_decoded_content(rec):
    entries = {e["request"]["url"]: e for e in to_har(rec)["log"]["entries"]}
    assert set(entries) == {"https://www.site.test/", "https://www.site.test/index.html",
                            "https://img.test/a.png?w=10&h=", "https://www.site.test/site.css",
                            "http://plain.test:8080/x"}
    assert entries["https://www.site.test/"]["response"]["redirectURL"] == "/index.html"
    assert entries["https://img.test/a.png?w=10&h="]["serverIPAddress"] == "10.0.0.2"
    assert entries["https://img.test/a.png?w=10&h="]["request"]["queryString"] == [
        {"name": "w", "value": "10"}, {"name": "h", "value": ""}]
    css = entries["https://www.site.test/site.css"]["response"]
    assert base64.b64decode(css["content"]["text"]) == CSS  # HAR content is decoded
    assert css["content"]["size"] == len(CSS)
    assert css["bodySize"] == len(gzip.compress(CSS, mtime=0))
    assert css["content"]["compression"] == len(CSS) - css["bodySize"]
    html = entries["https://www.site.test/index.html"]
    assert html["request"]["cookies"] == [{"name": "a", "value": "1"}, {"name": "b", "value": "2"}]
    assert html["response"]["cookies"] == [{"name": "s", "value": "1"}]


def test_har_without_bodies_still_valid(rec):
    har = to_har(rec, bodies=False)
    assert har_validator().is_valid(har)
    assert all("text" not in e["response"]["content"] for e in har["log"]["entries"])


def test_har_reads_back_with_mitmproxys_har_reader(rec, tmp_path):
    from mitmproxy.io.har import request_to_flow

    har = to_har(rec)
    flows = [request_to_flow(e) for e in har["log"]["entries"]]
    by_url = {f.request.url: f for f in flows}
    png = by_url["https://img.test/a.png?w=10&h="]
    assert png.response.raw_content == PNG
    assert png.response.status_code == 200
    assert by_url["https://www.site.test/site.css"].response.content == CSS


def test_url_of_omits_default_ports(rec):
    urls = {url_of(x) for x in rec.exchanges}
    assert "http://plain.test:8080/x" in urls
    assert "https://www.site.test/index.html" in urls


def test_summary_counts_origins_types_and_bytes(rec):
    s = summarise(rec)
    assert s.requests == 5
    assert s.bytes == rec.total_bytes
    assert s.ips == ("10.0.0.1", "10.0.0.2", "10.0.0.3")
    www = next(o for o in s.origins if o.host == "www.site.test")
    assert (www.ip, www.requests) == ("10.0.0.1", 3)
    types = {t: n for t, n, _ in s.types}
    assert types == {"redirect": 1, "html": 1, "image": 1, "css": 1, "other": 1}
    assert dict(s.statuses) == {200: 3, 302: 1, 404: 1}


def test_resource_type_by_content_type(rec):
    kinds = {x.target: resource_type(x) for x in rec.exchanges}
    assert kinds["/a.png?w=10&h="] == "image"
    assert kinds["/"] == "redirect"


def test_cli_show_and_har_on_a_path(rec, tmp_path):
    runner = CliRunner()
    out = runner.invoke(recording_cli, ["show", str(rec.path)])
    assert out.exit_code == 0, out.output
    assert "10.0.0.2" in out.output and "img.test" in out.output
    har_file = tmp_path / "out.har"
    out = runner.invoke(recording_cli, ["har", str(rec.path), "--output", str(har_file)])
    assert out.exit_code == 0, out.output
    assert har_validator().is_valid(json.loads(har_file.read_text()))


def test_bundled_recording_show_and_har(tmp_path):
    runner = CliRunner()
    out = runner.invoke(recording_cli, ["show", "local-news"])
    assert out.exit_code == 0, out.output
    rec = recording.load("local-news")
    for o in rec.origins:
        assert o.host in out.output and o.ip in out.output
    har_file = tmp_path / "news.har"
    out = runner.invoke(recording_cli, ["har", "local-news", "--output", str(har_file)])
    assert out.exit_code == 0, out.output
    har = json.loads(har_file.read_text())
    errors = list(har_validator().iter_errors(har))
    assert not errors, errors[0]
    assert len(har["log"]["entries"]) == len(rec.exchanges)
    assert {e["serverIPAddress"] for e in har["log"]["entries"]} == set(rec.ips)


def test_bundled_recording_is_small_and_multi_origin():
    rec = recording.load("local-news")
    size = sum(p.stat().st_size for p in BUNDLED.rglob("*") if p.is_file())
    assert size < 5 * 1024 * 1024
    assert len(rec.origins) >= 3 and len(rec.ips) >= 2
    assert 20 <= len(rec.exchanges) <= 60


def test_har_decoding_is_bounded(tmp_path, monkeypatch):
    from testbed.errors import InputError
    from testbed.record import decoding

    big = gzip.compress(bytes(4096), mtime=0)
    path = recording.write(tmp_path, {"name": "bomb", "url": "https://www.site.test/",
                                      "recorded_at": "2024-01-02T03:04:05Z", "loads": 1}, [
        (exchange("www.site.test", "/", "10.0.0.1", 200, [["content-type", "text/html"]]), HTML),
        (exchange("www.site.test", "/z", "10.0.0.1", 200,
                  [["content-type", "text/plain"], ["content-encoding", "gzip"]]), big)])
    rec = recording.load(path)
    assert to_har(rec)["log"]["entries"][1]["response"]["content"]["size"] == 4096
    monkeypatch.setattr(decoding, "MAX_DECODED", 4095)
    monkeypatch.setattr(decoding.decode, "__defaults__", (4095,))
    with pytest.raises(InputError, match=r"bomb/manifest.json: key exchanges/1/body: decodes "
                                         r"\(gzip\) to more than 4095 bytes"):
        to_har(rec)
    assert len(to_har(rec, bodies=False)["log"]["entries"]) == 2


def test_har_keeps_a_body_that_does_not_decode(tmp_path):
    path = recording.write(tmp_path, {"name": "odd", "url": "https://www.site.test/",
                                      "recorded_at": "2024-01-02T03:04:05Z", "loads": 1}, [
        (exchange("www.site.test", "/", "10.0.0.1", 200,
                  [["content-type", "text/html"], ["content-encoding", "gzip"]]), HTML)])
    entry = to_har(recording.load(path))["log"]["entries"][0]
    assert base64.b64decode(entry["response"]["content"]["text"]) == HTML
