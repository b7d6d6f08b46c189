"""The one file-download test site both replayed validations use. Pure."""

from __future__ import annotations

import json

from testbed.formats import recording as rec
from testbed.host.chromium import CDPError
from testbed.validate import protocols, servers, site


def test_site_is_a_page_and_files_each_on_its_own_ip(tmp_path):
    files = [site.File("a.test", "192.0.2.5", "/a.bin", b"\x01" * 100),
             site.File("b.test", "192.0.2.6", "/b.bin", b"\x02" * 50)]
    r = rec.load(site.make(tmp_path, "t-site", "page.test", "192.0.2.4", files))
    assert r.url == "https://page.test/" and r.ips == ["192.0.2.4", "192.0.2.5", "192.0.2.6"]
    page = next(x for x in r.exchanges if x.host == "page.test")
    assert page.target == "/" and b"<title>t-site</title>" in r.body(page)
    assert dict(page.response_headers)["cache-control"] == "no-store"
    for f in files:
        (x,) = [x for x in r.exchanges if x.host == f.host]
        assert (x.ip, x.target, r.body(x)) == (f.ip, f.path, f.body)
        headers = dict(x.response_headers)
        assert headers["content-type"] == "application/octet-stream"
        assert headers["timing-allow-origin"] == headers["access-control-allow-origin"] == "*"
        assert headers["cache-control"] == "no-store"


def test_both_checks_replay_the_same_kind_of_site(tmp_path):
    p = rec.load(protocols.make_recording(tmp_path / "p"))
    s = rec.load(servers.make_recording(tmp_path / "s", (10_000,), per_size=1))
    for r, page_host in ((p, protocols.PAGE_HOST), (s, servers.PAGE_HOST)):
        page = next(x for x in r.exchanges if x.host == page_host)
        files = [x for x in r.exchanges if x.host != page_host]
        assert files and all(x.ip != page.ip for x in files)
        assert {dict(x.response_headers)["timing-allow-origin"] for x in files} == {"*"}
    (f,) = [x for x in p.exchanges if x.host == protocols.FILE_HOST]
    assert f.body_size == protocols.FILE_SIZE and f.ip == protocols.FILE_IP


class FakePage:
    def __init__(self, value):
        self.value, self.seen = value, []

    def evaluate(self, expression, timeout):
        self.seen.append((expression, timeout))
        return self.value


def test_fetch_times_one_url_with_resource_timing():
    page = FakePage({"status": 200, "bytes": 10, "protocol": "h3", "ms": 12.5})
    got = site.fetch(page, 'https://x.test/f?"a"', timeout=9)
    assert got == site.Fetched(200, 10, "h3", 12.5)
    expression, timeout = page.seen[0]
    assert json.dumps('https://x.test/f?"a"') in expression and timeout == 9
    assert "responseEnd - e.requestStart" in expression
    assert site.fetch(FakePage(None), "https://x.test/", 1) == site.Fetched(None, None, None,
                                                                             None)


def test_network_changed_is_only_a_network_change():
    assert site.network_changed(CDPError("loading https://p/: net::ERR_NETWORK_CHANGED"))
    assert site.network_changed(CDPError("JavaScript error: TypeError: Failed to fetch"))
    assert not site.network_changed(CDPError("chromium did not answer Page.navigate"))
