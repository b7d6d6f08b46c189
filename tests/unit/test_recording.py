"""The recording format: write, load, validation errors."""

from __future__ import annotations

import json
import os

import pytest

from testbed.errors import InputError
from testbed.formats import recording


def _exchange(host="www.a.test", target="/", ip="10.0.0.1", headers=None):
    return {
        "scheme": "https", "host": host, "port": 443, "ip": ip, "method": "GET", "target": target,
        "request_headers": [["user-agent", "x"]], "status": 200,
        "response_headers": headers or [["content-type", "text/html"]],
    }


def _write(tmp_path, name="site"):
    meta = {"name": name, "url": "https://www.a.test/", "recorded_at": "2026-01-01T00:00:00Z",
            "loads": 3}
    return recording.write(tmp_path, meta, [
        (_exchange(), b"<html>hi</html>"),
        (_exchange(target="/app.js", host="static.a.test", ip="10.0.0.2"), b"var a;"),
        (_exchange(target="/app.js", host="static.a.test", ip="10.0.0.2"), b"var a;"),  # duplicate
        (_exchange(target="/empty"), b""),
    ])


def test_write_then_load_round_trip(tmp_path):
    path = _write(tmp_path)
    rec = recording.load(path)
    assert rec.name == "site"
    assert len(rec.exchanges) == 3  # the duplicate is kept once
    assert rec.ips == ["10.0.0.1", "10.0.0.2"]
    assert rec.hosts == ["static.a.test", "www.a.test"]
    js = next(e for e in rec.exchanges if e.target == "/app.js")
    assert rec.body(js) == b"var a;"
    assert next(e for e in rec.exchanges if e.target == "/empty").body is None
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp folder left


def test_write_is_deterministic(tmp_path):
    a = (_write(tmp_path / "1") / "manifest.json").read_text()
    b = (_write(tmp_path / "2") / "manifest.json").read_text()
    assert a == b


def test_write_refuses_to_overwrite(tmp_path):
    _write(tmp_path)
    with pytest.raises(InputError, match="already exists"):
        _write(tmp_path)


def test_missing_body_names_the_key(tmp_path):
    path = _write(tmp_path)
    rec = recording.load(path)
    sha = next(e.body for e in rec.exchanges if e.body)
    (path / "bodies" / sha).unlink()
    with pytest.raises(InputError, match=r"manifest.json: key exchanges/\d+/body: bodies/.* is missing"):
        recording.load(path)


def test_broken_manifest_is_one_line(tmp_path):
    path = _write(tmp_path)
    (path / "manifest.json").write_text("{not json")
    with pytest.raises(InputError) as e:
        recording.load(path)
    assert "\n" not in str(e.value) and "not valid JSON" in str(e.value)


def test_schema_violation_names_file_and_key(tmp_path):
    path = _write(tmp_path)
    data = json.loads((path / "manifest.json").read_text())
    data["exchanges"][0]["status"] = "200"
    (path / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"manifest.json: key exchanges/0/status: '200' is not of type"):
        recording.load(path)


def test_unknown_recording_name():
    with pytest.raises(InputError, match="no such recording"):
        recording.load("no-such-recording-anywhere")


# --- a recording from someone else: every rule of the loader -------------------------------

def _edited(tmp_path, change):
    """The small recording of _write, its manifest edited by change(data) (its totals
    following the exchanges, which the rules check)."""
    path = _write(tmp_path)
    data = json.loads((path / "manifest.json").read_text())
    change(data)
    data["requests"] = len(data["exchanges"])
    data["bytes"] = sum(x.get("body_size") or 0 for x in data["exchanges"])
    (path / "manifest.json").write_text(json.dumps(data))
    return path


def _all_rows(**values):
    """Set values on every origin and exchange, the two origins made one first."""
    def change(data):
        data["origins"] = data["origins"][:1]
        first = data["origins"][0]
        for row in [*data["origins"], *data["exchanges"]]:
            row.update({"host": first["host"], "ip": first["ip"], **values})
    return change


def _first_exchange(**values):
    def change(data):
        data["exchanges"][0].update(values)
    return change


def _body_of(path, target):
    data = json.loads((path / "manifest.json").read_text())
    return path / "bodies" / next(x["body"] for x in data["exchanges"] if x["target"] == target)


def test_bundled_recording_loads():
    rec = recording.load("local-news")
    assert len(rec.exchanges) == 31 and rec.ips == ["10.78.0.1", "10.78.0.2", "10.78.0.3"]


@pytest.mark.parametrize("host", ["www.a.test", "a-b.c_d.test", "xn--bcher-kva.test", "intranet",
                                  "192.0.2.1", "x" * 63 + ".test"])
def test_good_host_names(tmp_path, host):
    recording.load(_edited(tmp_path, _all_rows(host=host)))


@pytest.mark.parametrize("host,why", [
    ("www..a.test", "DNS name"), ("-a.test", "DNS name"), ("a-.test", "DNS name"),
    ("x" * 64 + ".test", "DNS name"), ("a." * 127 + "test", "DNS name"),
    ("xn--zz.test", "A-label"), ("a.test.123", "last label"),
    ("WWW.a.test", "host name"), ("bücher.test", "host name"), ("a.test:443", "host name"),
    ("a.test,map", "host name"), ("a.test\n", "DNS name"), ("127.0.0.1", "loopback"),
])
def test_bad_host_names(tmp_path, host, why):
    with pytest.raises(InputError, match=rf"manifest.json: key origins/0/host: .*{why}"):
        recording.load(_edited(tmp_path, _all_rows(host=host)))


@pytest.mark.parametrize("ip,why", [
    ("100.64.0.1", "100.64.0.0/10"), ("100.127.255.254", "100.64.0.0/10"),
    ("198.18.0.1", "198.18.0.0/15"), ("198.19.3.4", "198.18.0.0/15"),
    ("127.0.0.1", "loopback"), ("127.1.2.3", "loopback"), ("0.0.0.0", "this network"),
    ("169.254.1.1", "link-local"), ("224.0.0.1", "multicast"), ("239.1.1.1", "multicast"),
    ("255.255.255.255", "reserved"), ("240.0.0.1", "reserved"),
    ("::1", "IPv4"), ("10.0.0.01", "IPv4"), ("10.0.0.1\n", "IPv4"), ("a.b.c.d", "IPv4"),
])
def test_unservable_ips(tmp_path, ip, why):
    with pytest.raises(InputError, match=rf"manifest.json: key origins/0/ip: .*{why}"):
        recording.load(_edited(tmp_path, _all_rows(ip=ip)))


def test_private_and_public_ips_load(tmp_path):
    for i, ip in enumerate(["10.1.2.3", "172.16.0.1", "192.168.1.1", "203.0.113.9", "8.8.8.8"]):
        recording.load(_edited(tmp_path / str(i), _all_rows(ip=ip)))


def test_origin_listed_twice(tmp_path):
    def change(data):
        data["origins"].append({**data["origins"][0], "ip": "10.0.0.9"})
    with pytest.raises(InputError, match=r"key origins/2/host: https://static.a.test:443 is listed twice"):
        recording.load(_edited(tmp_path, change))


def test_exchange_must_match_its_origin(tmp_path):
    with pytest.raises(InputError, match=r"key exchanges/0/ip: expected 10.0.0.2"):
        recording.load(_edited(tmp_path, _first_exchange(ip="10.0.0.7")))
    with pytest.raises(InputError, match=r"key exchanges/0/host: https://other.test:443 is not"):
        recording.load(_edited(tmp_path / "2", _first_exchange(host="other.test")))


@pytest.mark.parametrize("scheme,port", [("http", 443), ("https", 80), ("http", 8443)])
def test_one_scheme_per_ip_and_port(tmp_path, scheme, port):
    def change(data):
        for o in data["origins"]:
            o["port"] = 8443 if port == 8443 else o["port"]
        data["origins"].append({"scheme": scheme, "host": "c.a.test", "port": port,
                                "ip": data["origins"][0]["ip"]})
        if port == 8443:
            for x in data["exchanges"]:
                x["port"] = 8443
    with pytest.raises(InputError, match=rf"key origins/\d/scheme: .*:{port} is recorded as "
                                         r".*expected one scheme per IP:port"):
        recording.load(_edited(tmp_path, change))


def test_http_and_https_on_their_own_ports_load(tmp_path):
    def change(data):
        data["origins"].append({"scheme": "http", "host": "www.a.test", "port": 80,
                                "ip": data["origins"][1]["ip"]})
    recording.load(_edited(tmp_path, change))


@pytest.mark.parametrize("part,header,key", [
    ("response_headers", ["x-a\r\nset-cookie", "1"], "0"),
    ("response_headers", ["x a", "1"], "0"),
    ("response_headers", ["x-a:", "1"], "0"),
    ("response_headers", ["x-a\n", "1"], "0"),
    ("response_headers", ["", "1"], "0"),
    ("response_headers", ["X-A", "1"], "0"),
    ("response_headers", ["x-a", "1\r\nset-cookie: a=b"], "1"),
    ("response_headers", ["x-a", "1\r"], "1"),
    ("response_headers", ["x-a", "1\n"], "1"),
    ("request_headers", ["x-a", "a\x00b"], "1"),
])
def test_header_names_and_values(tmp_path, part, header, key):
    with pytest.raises(InputError, match=rf"key exchanges/0/{part}/0/{key}: expected a header"):
        recording.load(_edited(tmp_path, _first_exchange(**{part: [header]})))


@pytest.mark.parametrize("values,key", [
    ({"method": "GET\r\n"}, "method"), ({"method": "G T"}, "method"),
    ({"target": "/a\r\nHost: b"}, "target"), ({"target": "/a\n"}, "target"),
    ({"target": "/\x00"}, "target"),
])
def test_method_and_target(tmp_path, values, key):
    with pytest.raises(InputError, match=rf"key exchanges/0/{key}: expected"):
        recording.load(_edited(tmp_path, _first_exchange(**values)))


@pytest.mark.parametrize("status", [99, 600, 0, -1])
def test_status_out_of_range(tmp_path, status):
    with pytest.raises(InputError, match=r"key exchanges/0/status: "):
        recording.load(_edited(tmp_path, _first_exchange(status=status)))


@pytest.mark.parametrize("values,why", [
    ({"status": 204}, "204 response has no body"), ({"status": 304}, "304 response has no body"),
    ({"status": 101}, "101 response has no body"), ({"status": 100}, "100 response"),
    ({"method": "HEAD"}, "HEAD has no body"),
])
def test_no_body_where_http_has_none(tmp_path, values, why):
    with pytest.raises(InputError, match=rf"key exchanges/0/body: a .*{why}"):
        recording.load(_edited(tmp_path, _first_exchange(**values)))


def test_bodiless_statuses_without_a_body_load(tmp_path):
    def change(data):
        x = next(x for x in data["exchanges"] if x["target"] == "/empty")
        x["status"] = 304
        data["exchanges"].append({**x, "target": "/head", "method": "HEAD", "status": 200})
        data["exchanges"].append({**x, "target": "/nc", "status": 204})
    recording.load(_edited(tmp_path, change))


def test_body_size_agrees_with_a_null_body(tmp_path):
    def change(data):
        next(x for x in data["exchanges"] if x["body"] is None)["body_size"] = 3
    with pytest.raises(InputError, match=r"body_size: 3, but the exchange has no body"):
        recording.load(_edited(tmp_path, change))


def test_body_size_required_with_a_body(tmp_path):
    with pytest.raises(InputError, match=r"key exchanges/0/body_size: missing"):
        recording.load(_edited(tmp_path, lambda d: d["exchanges"][0].pop("body_size")))


@pytest.mark.parametrize("name", ["../../etc/passwd", "A" * 64, "a" * 63, "a" * 64 + "\n"])
def test_body_names_are_hashes(tmp_path, name):
    with pytest.raises(InputError, match=r"key exchanges/0/body: expected null or"):
        recording.load(_edited(tmp_path, _first_exchange(body=name)))


def test_symlinked_body_is_refused(tmp_path):
    path = _write(tmp_path / "r")
    body = _body_of(path, "/app.js")
    outside = tmp_path / "outside"
    outside.write_bytes(body.read_bytes())  # even the right bytes: a link is not followed
    body.unlink()
    body.symlink_to(outside)
    with pytest.raises(InputError, match=r"key exchanges/\d/body: bodies/[0-9a-f]{64} is a "
                                         r"symbolic link, expected a regular file"):
        recording.load(path)


def test_tampered_body_is_refused(tmp_path):
    path = _write(tmp_path)
    _body_of(path, "/app.js").write_bytes(b"var b;")
    with pytest.raises(InputError, match=r"key exchanges/\d/body: bodies/.* does not hash"):
        recording.load(path)


def test_body_of_another_size_is_refused(tmp_path):
    path = _write(tmp_path)
    _body_of(path, "/app.js").write_bytes(b"var a; evil();")
    with pytest.raises(InputError, match=r"key exchanges/\d/body_size: 6, but bodies/.* has 14"):
        recording.load(path)


def test_body_that_is_not_a_regular_file(tmp_path):
    import os
    path = _write(tmp_path)
    body = _body_of(path, "/app.js")
    body.unlink()
    os.mkfifo(body)  # opening it for reading would wait for a writer
    with pytest.raises(InputError, match=r"is not a regular file"):
        recording.load(path)


def test_bodies_folder_and_manifest_are_not_followed(tmp_path):
    path = _write(tmp_path / "a")
    (path / "bodies").rename(tmp_path / "real-bodies")
    (path / "bodies").symlink_to(tmp_path / "real-bodies")
    with pytest.raises(InputError, match=r"key exchanges: bodies/ is a symbolic link"):
        recording.load(path)
    other = _write(tmp_path / "b")
    (other / "manifest.json").rename(tmp_path / "m.json")
    (other / "manifest.json").symlink_to(tmp_path / "m.json")
    with pytest.raises(InputError, match=r"manifest.json: the manifest is a symbolic link"):
        recording.load(other)


def test_body_changed_after_load_is_refused_when_read(tmp_path):
    path = _write(tmp_path)
    rec = recording.load(path)
    js = next(x for x in rec.exchanges if x.target == "/app.js")
    _body_of(path, "/app.js").write_bytes(b"var b;")
    with pytest.raises(InputError, match=r"does not hash"):
        rec.body(js)


def test_exchanges_sharing_a_body_share_its_size(tmp_path):
    def change(data):
        data["exchanges"].append({**data["exchanges"][0], "target": "/copy", "body_size": 99})
    with pytest.raises(InputError, match=r"key exchanges/3/body_size: 99, but exchanges/0 has"):
        recording.load(_edited(tmp_path, change))


def test_write_keeps_one_ip_per_origin(tmp_path):
    meta = {"name": "rr", "url": "https://www.a.test/", "recorded_at": "2026-01-01T00:00:00Z",
            "loads": 2}
    path = recording.write(tmp_path, meta, [
        (_exchange(ip="10.0.0.1"), b"a"), (_exchange(target="/2", ip="10.0.0.5"), b"b")])
    rec = recording.load(path)
    assert [o.ip for o in rec.origins] == ["10.0.0.1"]
    assert {x.ip for x in rec.exchanges} == {"10.0.0.1"}


def test_write_refuses_what_load_would_refuse(tmp_path):
    meta = {"name": "lo", "url": "https://www.a.test/", "recorded_at": "2026-01-01T00:00:00Z",
            "loads": 1}
    with pytest.raises(InputError, match=r"lo/manifest.json: key origins/0/ip: .*loopback"):
        recording.write(tmp_path, meta, [(_exchange(ip="127.0.0.1"), b"a")])
    with pytest.raises(InputError, match=r"response_headers/0/1: expected a header value"):
        recording.write(tmp_path, meta, [(_exchange(headers=[["x", "a\r\nb"]]), b"a")])
    assert list(tmp_path.iterdir()) == []


# --- the recording folder is opened once: a folder swapped after the lookup is not read -----

def _swappable(tmp_path):
    """recs/site (recs the testbed user's: it may rename and replace what is in it) and
    another recording, root's, whose URL no load of recs/site may return."""
    from testbed.host import paths

    recs = tmp_path / "recs"
    recs.mkdir()
    site = _write(recs)
    other = tmp_path / "host"
    other.mkdir(mode=0o700)
    recording.write(other, {"name": "site", "url": "https://www.a.test/ROOT-ONLY",
                            "recorded_at": "2026-01-01T00:00:00Z", "loads": 1},
                    [(_exchange(), b"<html>secret</html>")])
    pw = paths.user()
    os.chown(recs, pw.pw_uid, pw.pw_gid)
    return site, other / "site"


def test_a_symlink_swapped_in_after_the_lookup_is_not_followed(tmp_path, monkeypatch):
    """The folder renamed and a symbolic link to another recording put in its place
    between the lookup (resolve) and the reads: the load refuses, never reads the
    other recording."""
    site, other = _swappable(tmp_path)
    found = recording.resolve

    def then_swap(*args, **kwargs):
        root = found(*args, **kwargs)
        root.rename(root.with_name("moved"))
        root.symlink_to(other)
        return root

    monkeypatch.setattr(recording, "resolve", then_swap)
    try:
        rec = recording.load(site)
    except InputError as e:
        assert "ROOT-ONLY" not in str(e)
        assert "symbolic link" in str(e) and "not followed" in str(e)
    else:
        pytest.fail(f"loaded {rec.url} through a symbolic link swapped in after the lookup")


def test_a_folder_swapped_in_after_the_manifest_is_read_is_not_read(tmp_path, monkeypatch):
    """The folder renamed and another put in its place after the manifest was read (the
    first read): the bodies are read from the folder the manifest came from."""
    site, _ = _swappable(tmp_path)
    checked = recording.recording_rules.check

    def check_then_swap(data):
        checked(data)
        site.rename(site.with_name("moved"))
        (site / "bodies").mkdir(parents=True)
        for x in data["exchanges"]:
            if x["body"]:
                (site / "bodies" / x["body"]).write_bytes(b"\0" * x["body_size"])

    monkeypatch.setattr(recording.recording_rules, "check", check_then_swap)
    rec = recording.load(site)
    assert rec.url == "https://www.a.test/"
    assert rec.path == site


def test_a_manifest_nested_thousands_deep_is_one_line(tmp_path):
    folder = tmp_path / "deep"
    folder.mkdir()
    (folder / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InputError, match="manifest.json: not valid JSON: nested too deep"):
        recording.load(folder)


# --- content digest: what the replay serves, not when or in which order it was recorded ---

def _manifest(tmp_path, exchanges, name="site", recorded_at="2026-01-01T00:00:00Z"):
    meta = {"name": name, "url": "https://www.a.test/", "recorded_at": recorded_at, "loads": 1}
    return json.loads((recording.write(tmp_path, meta, exchanges) / "manifest.json").read_text())


def _dated(date, **values):
    return _exchange(headers=[["date", date], ["content-type", "text/html"]], **values)


def _two_builds(tmp_path):
    """Two manifests of one site: other recording time, Date headers and order."""
    a = _manifest(tmp_path / "a", [
        (_dated("Thu, 26 Nov 2026 06:57:31 GMT"), b"<html>hi</html>"),
        (_dated("Thu, 26 Nov 2026 06:57:32 GMT", target="/a.js"), b"var a;"),
    ])
    b = _manifest(tmp_path / "b", [
        (_dated("Fri, 27 Nov 2026 10:00:05 GMT", target="/a.js"), b"var a;"),
        (_dated("Fri, 27 Nov 2026 10:00:04 GMT"), b"<html>hi</html>"),
    ], recorded_at="2026-11-27T10:00:00Z")
    return a, b


def test_content_digest_leaves_out_time_and_order(tmp_path):
    a, b = _two_builds(tmp_path)
    assert a != b
    b["exchanges"].reverse()  # a concurrent load's order
    assert recording.content_digest(a) == recording.content_digest(b)
    assert recording.load(tmp_path / "a" / "site").content_sha256 == recording.content_digest(a)
    assert (recording.load(tmp_path / "a" / "site").content_sha256
            == recording.load(tmp_path / "b" / "site").content_sha256)


@pytest.mark.parametrize("change", [
    lambda x: x.update(body="0" * 64),                                  # another body
    lambda x: x.update(body_size=x["body_size"] + 1),
    lambda x: x.update(status=404),
    lambda x: x["response_headers"].append(["cache-control", "no-store"]),  # a served header
    lambda x: x["response_headers"][1].__setitem__(1, "text/plain"),
    lambda x: x["request_headers"].append(["cookie", "a=1"]),
    lambda x: x.update(ip="10.0.0.9"),
    lambda x: x.update(target="/other"),
    lambda x: x.update(host="www.b.test"),
    lambda x: x.update(port=8443),
])
def test_content_digest_keeps_what_is_served(tmp_path, change):
    a, _ = _two_builds(tmp_path)
    b = json.loads(json.dumps(a))
    change(b["exchanges"][0])
    assert recording.content_digest(b) != recording.content_digest(a)


@pytest.mark.parametrize("key,value", [("url", "https://www.b.test/"), ("name", "other"),
                                        ("loads", 3), ("chromium_version", "1.2.3")])
def test_content_digest_keeps_the_top_level(tmp_path, key, value):
    a, _ = _two_builds(tmp_path)
    assert recording.content_digest({**a, key: value}) != recording.content_digest(a)


def test_content_digest_keeps_the_origins_ips(tmp_path):
    a, _ = _two_builds(tmp_path)
    b = json.loads(json.dumps(a))
    b["origins"][0]["ip"] = "10.0.0.9"
    assert recording.content_digest(b) != recording.content_digest(a)


def test_which_of_one_target_is_served_first_is_kept(tmp_path):
    """The replay answers with the earliest exchange of a host and target, on any port:
    two orders that serve other content are other content."""
    a = _manifest(tmp_path, [
        (_exchange(), b"<html>443</html>"),
        ({**_exchange(), "port": 8443}, b"<html>8443</html>"),
    ])
    b = json.loads(json.dumps(a))
    b["exchanges"].reverse()
    assert recording.content_digest(b) != recording.content_digest(a)


def test_content_digest_keeps_the_order_of_served_headers(tmp_path):
    a, _ = _two_builds(tmp_path)
    a["exchanges"][0]["response_headers"].append(["cache-control", "no-store"])
    b = json.loads(json.dumps(a))
    b["exchanges"][0]["response_headers"][1:] = b["exchanges"][0]["response_headers"][:0:-1]
    assert b["exchanges"][0]["response_headers"] != a["exchanges"][0]["response_headers"]
    assert recording.content_digest(b) != recording.content_digest(a)
