"""Unit tests of the recorder's parts: no sockets, no namespaces, no browser."""

from __future__ import annotations

import gzip
import json

import pytest
from mitmproxy import exceptions
from mitmproxy.test import taddons, tflow, tutils

from testbed.errors import InputError
from testbed.record import addon as addon_mod
from testbed.record import normalise
from testbed.record.browser import LoadResult, flags
from testbed.record.proxy import mitmdump_argv, spki_sha256
from testbed.record.recorder import (
    check_url,
    default_name,
    explain_failure,
    load_succeeded,
    merge,
    normalise_row,
    page_rows,
    parse_resolve,
)

# normalise ---------------------------------------------------------------------------


def test_normalise_drops_hop_and_protocol_headers_case_insensitively():
    out = normalise.response_headers(
        [("Content-Type", "text/html"), ("Transfer-Encoding", "chunked"),
         ("Alt-Svc", 'h3=":443"'), ("Alternate-Protocol", "443:quic"),
         ("Set-Cookie", "a=1"), ("set-cookie", "b=2")], body_size=42)
    assert out == (("content-type", "text/html"), ("set-cookie", "a=1"), ("set-cookie", "b=2"),
                   ("content-length", "42"))


def test_normalise_replaces_content_length_in_place_and_keeps_one():
    out = normalise.response_headers(
        [("content-length", "999"), ("etag", "x"), ("content-length", "999")], body_size=7)
    assert out == (("content-length", "7"), ("etag", "x"))


def test_normalise_leaves_bodyless_statuses_and_head_alone():
    for status, method in ((304, "GET"), (204, "GET"), (200, "HEAD")):
        out = normalise.response_headers([("content-length", "100")], 0, status, method)
        assert out == (("content-length", "100"),)
    assert normalise.response_headers([("etag", "x")], 0, 304) == (("etag", "x"),)


def test_normalise_request_headers_lower_case_in_order():
    assert normalise.request_headers([("Host", "a"), ("Accept", "*/*")]) == (
        ("host", "a"), ("accept", "*/*"))


# recorder: pure parts ------------------------------------------------------------------


@pytest.mark.parametrize("url", ["ftp://example.org/", "file:///etc/passwd", "example.org",
                                 "https://", "http://:80/", "javascript:alert(1)"])
def test_check_url_rejects_non_http_urls(url):
    with pytest.raises(InputError):
        check_url(url)


def test_check_url_accepts_http_and_https():
    assert check_url("https://example.org/a?b=c") == "https://example.org/a?b=c"
    assert check_url("http://10.0.0.1:8080/") == "http://10.0.0.1:8080/"


def test_default_name_from_host():
    assert default_name("https://www.example.org/path") == "example.org"
    assert default_name("http://news.example.co.uk:8443/") == "news.example.co.uk-8443"


def test_parse_resolve():
    assert parse_resolve(["WWW.A.test=10.0.0.1", "b.test=10.0.0.2"]) == {
        "www.a.test": "10.0.0.1", "b.test": "10.0.0.2"}
    for bad in ("a.test", "a.test=notanip", "=10.0.0.1"):
        with pytest.raises(InputError):
            parse_resolve([bad])


def row(target, body="x", host="h.test", **kw):
    return {"scheme": "https", "host": host, "port": 443, "ip": "10.0.0.1", "method": "GET",
            "target": target, "body": body, "status": 200, **kw}


def test_merge_is_the_union_with_the_first_response_kept():
    load1 = [row("/", "html1"), row("/promo.js", "pick-a"), row("/a.jpg")]
    load2 = [row("/", "html2"), row("/promo.js", "pick-b"), row("/b.jpg")]
    load3 = [row("/"), row("/c.jpg"), row("/a.jpg")]
    merged = merge([load1, load2, load3])
    assert [r["target"] for r in merged] == ["/", "/promo.js", "/a.jpg", "/b.jpg", "/c.jpg"]
    assert merged[0]["body"] == "html1" and merged[1]["body"] == "pick-a"
    # how many loads asked for each (the judge of completeness needs only what all did)
    assert [r["seen_in"] for r in merged] == [3, 2, 2, 1, 1]
    assert normalise_row({**merged[3], "body_size": 1, "request_headers": [],
                          "response_headers": []})["seen_in"] == 1


def test_merge_keeps_same_path_on_other_hosts_and_methods():
    merged = merge([[row("/"), row("/", host="other.test"), row("/", method="POST")]])
    assert len(merged) == 3


def test_normalise_row_fits_the_recording_schema():
    captured = {**row("/x?y=1"), "http_version": "HTTP/1.1", "body_size": 3,
                "request_headers": [["Accept", "*/*"]],
                "response_headers": [["Transfer-Encoding", "chunked"], ["Alt-Svc", "h3"]]}
    out = normalise_row(captured)
    assert out["response_headers"] == [["content-length", "3"]]
    assert out["request_headers"] == [["accept", "*/*"]]
    assert "http_version" not in out and "body" not in out


def test_page_rows_leave_out_browser_background_traffic():
    result = LoadResult(url="https://www.a.test/", hosts={"www.a.test", "cdn.a.test"})
    rows = [row("/", host="www.a.test"), row("/x", host="cdn.a.test"),
            row("/favicon.ico", host="www.a.test"), row("/u", host="update.googleapis.com")]
    keep, others = page_rows(rows, result)
    assert [r["host"] for r in keep] == ["www.a.test", "cdn.a.test", "www.a.test"]
    assert others == {"update.googleapis.com"}


def test_load_succeeded_needs_the_final_document_from_the_server():
    result = LoadResult(url="https://a.test/", loaded=True,
                        document_urls=["https://a.test/", "https://a.test/home?x=1"])
    assert load_succeeded(result, [row("/home?x=1", host="a.test")])
    assert not load_succeeded(result, [row("/", host="a.test")])
    result.error = "net::ERR_FAILED"
    assert not load_succeeded(result, [row("/home?x=1", host="a.test")])


def test_explain_failure_names_tls_before_connect_and_ignores_other_hosts():
    result = LoadResult(url="https://a.test/", error="net::ERR_CONNECTION_CLOSED")
    errors = [
        {"kind": "connect", "host": "update.googleapis.com", "address": "x", "port": 443,
         "error": "not in the resolve map"},
        {"kind": "connect", "host": "a.test", "address": "10.0.0.1", "port": 443,
         "error": "refused"},
        {"kind": "tls", "host": "a.test", "address": "10.0.0.1", "port": 443,
         "error": "Certificate verify failed: hostname mismatch"},
    ]
    assert explain_failure(result, errors, 60) == (
        "TLS failure with a.test:443 (10.0.0.1): Certificate verify failed: hostname mismatch")
    assert explain_failure(result, errors[:2], 60) == "cannot reach a.test:443 (10.0.0.1): refused"
    assert explain_failure(result, errors[:1], 60) == (
        "https://a.test/ failed to load: net::ERR_CONNECTION_CLOSED")
    hung = LoadResult(url="https://a.test/hang", timed_out=True)
    assert explain_failure(hung, [], 5) == "https://a.test/hang did not finish loading within 5 s"
    assert "\n" not in explain_failure(hung, errors, 5)


# browser and proxy command lines -------------------------------------------------------


def test_chromium_flags_use_the_proxy_trust_the_spki_and_disable_quic():
    f = flags(8080, "abc=")
    assert "--proxy-server=http://127.0.0.1:8080" in f
    assert "--ignore-certificate-errors-spki-list=abc=" in f
    assert "--disable-quic" in f
    assert not any("no-sandbox" in a for a in f)
    assert any(a.startswith("--host-resolver-rules=MAP * ~NOTFOUND") for a in f)


def test_mitmdump_argv_sets_capture_resolve_and_upstream_ca(tmp_path):
    argv = mitmdump_argv(tmp_path / "conf", tmp_path / "cap", {"b.test": "10.0.0.2",
                                                               "a.test": "10.0.0.1"},
                         tmp_path / "ca.pem")
    joined = " ".join(argv)
    assert f"confdir={tmp_path / 'conf'}" in joined
    assert f"testbed_capture={tmp_path / 'cap'}" in joined
    assert joined.index("testbed_resolve=a.test=10.0.0.1") < joined.index("b.test=10.0.0.2")
    assert f"ssl_verify_upstream_trusted_ca={tmp_path / 'ca.pem'}" in joined
    assert "ssl_insecure" not in joined


def test_spki_of_mitmproxys_ca_matches_every_leaf_it_issues(tmp_path):
    """mitmproxy signs leaves with its CA key: the CA's SPKI hash is the leaves' SPKI hash."""
    from mitmproxy import certs

    store = certs.CertStore.from_store(tmp_path, "mitmproxy", 2048)
    ca_spki = spki_sha256((tmp_path / "mitmproxy-ca.pem").read_bytes())
    for host in ("www.example.org", "cdn.other.test"):
        leaf = store.get_cert(host, []).cert
        assert spki_sha256(leaf.to_pem()) == ca_spki
    other = certs.CertStore.from_store(tmp_path / "other", "mitmproxy", 2048)
    assert spki_sha256(other.default_ca.to_pem()) != ca_spki


# the mitmproxy addon ---------------------------------------------------------------------


@pytest.fixture
def capture(tmp_path):
    a = addon_mod.Capture()
    with taddons.context(a) as tctx:
        tctx.configure(a, testbed_capture=str(tmp_path))
        yield a, tctx, tmp_path


def _flow(host="www.a.test", path="/x?q=1", peer=("10.0.0.7", 443), body=b"hello",
          headers=((b"Content-Type", b"text/plain"),)):
    f = tflow.tflow(resp=True)
    f.request = tutils.treq(host=host, port=443, scheme=b"https", path=path.encode(),
                            headers=[(b"Host", host.encode()), (b"Accept", b"*/*")])
    f.response = tutils.tresp(headers=list(headers), content=b"")
    f.response.raw_content = body
    f.server_conn.peername = peer
    return f


def test_addon_saves_the_exchange_with_the_peer_ip_and_raw_body(capture):
    a, _, d = capture
    gz = gzip.compress(b"x" * 1000, mtime=0)
    f = _flow(body=gz, headers=((b"Content-Encoding", b"gzip"), (b"Transfer-Encoding", b"chunked")))
    f.request.data.host = "10.0.0.7"  # as where testbed_resolve rewrote the address
    a.response(f)
    [x] = [json.loads(line) for line in (d / "exchanges.jsonl").read_text().splitlines()]
    assert x["host"] == "www.a.test" and x["ip"] == "10.0.0.7" and x["port"] == 443
    assert x["target"] == "/x?q=1" and x["method"] == "GET" and x["status"] == 200
    assert ["content-encoding", "gzip"] in x["response_headers"]
    assert ["transfer-encoding", "chunked"] in x["response_headers"]  # the recorder drops it
    assert x["request_headers"][0] == ["host", "www.a.test"]
    assert (d / "bodies" / x["body"]).read_bytes() == gz  # still compressed
    assert x["body_size"] == len(gz)


def test_addon_skips_errors_and_responses_mitmproxy_made(capture):
    a, _, d = capture
    f = _flow()
    f.server_conn.peername = None
    a.response(f)
    g = _flow()
    g.error = tflow.terr()
    a.response(g)
    assert not (d / "exchanges.jsonl").exists()


def test_addon_resolve_map_rewrites_the_address_and_refuses_others(capture):
    a, tctx, d = capture
    tctx.configure(a, testbed_resolve=["www.a.test=10.0.0.1"])
    from mitmproxy.proxy import server_hooks

    known = tflow.tserver_conn()
    known.address = ("WWW.A.test", 443)
    a.server_connect(server_hooks.ServerConnectionHookData(known, tflow.tclient_conn()))
    assert known.address == ("10.0.0.1", 443) and known.error is None
    unknown = tflow.tserver_conn()
    unknown.address = ("elsewhere.test", 443)
    data = server_hooks.ServerConnectionHookData(unknown, tflow.tclient_conn())
    a.server_connect(data)
    assert unknown.error and "not in the resolve map" in unknown.error
    a.server_connect_error(data)
    err = json.loads((d / "errors.jsonl").read_text().splitlines()[0])
    assert err["kind"] == "connect" and err["host"] == "elsewhere.test" and err["port"] == 443


def test_addon_rejects_malformed_resolve_items(capture):
    a, tctx, _ = capture
    with pytest.raises(exceptions.OptionsError):
        tctx.configure(a, testbed_resolve=["no-ip-here"])


def test_recorded_at_is_a_utc_time_or_refused():
    from testbed.record.recorder import check_recorded_at
    assert check_recorded_at(None) is None
    assert check_recorded_at("2026-11-01T00:00:00Z") == "2026-11-01T00:00:00Z"
    for bad in ("2026-11-01", "2026-11-01T00:00:00+01:00", "1970-01-01T00:00:00Z", "now"):
        with pytest.raises(InputError, match="--recorded-at"):
            check_recorded_at(bad)
