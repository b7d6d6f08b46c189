"""The uWSGI app, called in-process as a WSGI callable (no sockets)."""

from __future__ import annotations

import json

import pytest

from testbed.formats import recording as rec
from testbed.replay import app as app_mod
from testbed.replay import server_summary
from testbed.replay.app import ReplayApp
from testbed.validate.site import exchange, write

HTML = b"<!doctype html><title>t</title>"


@pytest.fixture
def recording(tmp_path):
    path = write(tmp_path, "site", "https://www.a.test/", [
        exchange("https://www.a.test/", "192.0.2.10", HTML, headers=(
            # hop-by-hop headers a recording may hold; transfer-encoding and alt-svc it
            # may not (testbed.formats.recording_rules refuses them on load)
            ("connection", "keep-alive"), ("keep-alive", "timeout=5"),
            ("set-cookie", "a=1"), ("set-cookie", "b=2"), ("x-kept", "yes"))),
        exchange("https://www.a.test/app.js?v=1", "192.0.2.10", b"v1", "text/javascript"),
        exchange("https://www.a.test/app.js?v=2", "192.0.2.10", b"v2", "text/javascript"),
        exchange("http://www.a.test/plain", "192.0.2.10", b"plain", "text/plain"),
        exchange("https://cdn.b.test/empty", "192.0.2.11", b"", "text/plain", status=204),
        exchange("https://cdn.b.test/odd", "192.0.2.11", b"odd", status=599),
    ])
    return rec.load(path)


def call(app, target, host="www.a.test", scheme="https", method="GET", conn="1"):
    seen = {}

    def start_response(status, headers):
        seen["status"], seen["headers"] = status, headers

    environ = {"REQUEST_METHOD": method, "REQUEST_URI": target, "wsgi.url_scheme": scheme,
               "TESTBED_HOST": host, "TESTBED_CONNECTION": conn}
    body = serve(app, environ, start_response)
    return seen["status"], seen["headers"], body


def serve(app, environ, start_response):
    """What a WSGI server does: iterate the body, then close it."""
    result = app(environ, start_response)
    try:
        return b"".join(result)
    finally:
        if hasattr(result, "close"):
            result.close()


def names(headers):
    return [k.lower() for k, _ in headers]


def test_recorded_response_from_memory(recording, tmp_path):
    app = ReplayApp(recording, tmp_path / "summary.json")
    status, headers, body = call(app, "/")
    assert status == "200 OK"
    assert body == HTML
    assert ("content-length", str(len(HTML))) in headers
    assert names(headers).count("content-length") == 1
    assert not {"connection", "transfer-encoding", "keep-alive", "alt-svc"} & set(names(headers))
    assert [v for k, v in headers if k == "set-cookie"] == ["a=1", "b=2"]
    assert ("x-kept", "yes") in headers


def test_bodies_are_read_once_at_start(recording, tmp_path):
    app = ReplayApp(recording, tmp_path / "summary.json")
    for sha in {x.body for x in recording.exchanges if x.body}:
        recording.body_path(sha).unlink()
    assert call(app, "/app.js?v=2")[2] == b"v2"


def test_longest_prefix_and_query_strings(recording, tmp_path):
    app = ReplayApp(recording, tmp_path / "summary.json")
    assert call(app, "/app.js?v=2&cache=1")[2] == b"v2"
    assert call(app, "/app.js?v=9")[2] == b"v1"


def test_scheme_and_host_come_from_the_front_end(recording, tmp_path):
    app = ReplayApp(recording, tmp_path / "summary.json")
    assert call(app, "/plain", scheme="http")[2] == b"plain"
    assert call(app, "/plain", scheme="https")[0] == "404 Not Found"
    assert call(app, "/empty", host="CDN.B.TEST:443")[0] == "204 No Content"
    assert call(app, "/odd", host="cdn.b.test")[0] == "599 Unknown"


def test_host_header_when_no_front_end_variable(recording, tmp_path):
    app = ReplayApp(recording, None)
    seen = {}
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/app.js", "QUERY_STRING": "v=2",
               "wsgi.url_scheme": "https", "HTTP_HOST": "www.a.test"}
    body = serve(app, environ, lambda s, h: seen.update(status=s))
    assert (seen["status"], body) == ("200 OK", b"v2")


def test_misses_are_404_and_counted(recording, tmp_path):
    path = tmp_path / "summary.json"
    app = ReplayApp(recording, path)
    before = server_summary.read(path)
    assert before["requests"] == 0 and before["server"] == "uwsgi"
    call(app, "/", conn="7")
    call(app, "/app.js?v=1", conn="7")
    status, headers, body = call(app, "/nope?x=1", conn="8")
    call(app, "/", method="POST", conn="8")
    assert status == "404 Not Found"
    assert ("content-length", str(len(body))) in headers
    after = json.loads(path.read_text())
    assert set(after) == set(server_summary.KEYS)
    assert after["requests"] == 4
    assert after["misses"] == 2
    assert after["miss_urls"] == ["https://www.a.test/nope?x=1", "https://www.a.test/"]
    assert after["bytes"] == len(HTML) + 2 + 2 * len(body)
    assert after["connections"] == 2
    assert server_summary.diff(before, after)["misses"] == 2


def test_counted_once_the_body_is_sent(recording, tmp_path):
    path = tmp_path / "summary.json"
    app = ReplayApp(recording, path)
    environ = {"REQUEST_METHOD": "GET", "REQUEST_URI": "/", "wsgi.url_scheme": "https",
               "TESTBED_HOST": "www.a.test"}
    result = app(environ, lambda s, h: None)
    assert b"".join(result) == HTML
    assert server_summary.read(path)["requests"] == 0
    result.close()
    assert server_summary.read(path)["requests"] == 1


def test_head_sends_no_body(recording, tmp_path):
    app = ReplayApp(recording, tmp_path / "summary.json")
    status, _, body = call(app, "/", method="HEAD")
    assert status == "404 Not Found" and body == b""  # only GET was recorded


def test_raw_non_ascii_target_is_matched_as_utf8(tmp_path):
    path = write(tmp_path, "u", "https://u.test/", [
        exchange("https://u.test/caf\u00e9", "192.0.2.1", b"utf8")])
    app = ReplayApp(rec.load(path), None)
    raw = "/caf\u00e9".encode().decode("latin-1")  # how WSGI hands over raw bytes
    assert call(app, raw, host="u.test")[2] == b"utf8"


def test_from_environ_loads_the_recording_in_the_inherited_folder(recording, tmp_path):
    """Read from the descriptor, not the path: the folder moved away and another put
    in its place, the descriptor's recording is still the one served."""
    import os
    import shutil

    copy = tmp_path / "rec"
    shutil.copytree(recording.path, copy)
    fd = os.open(copy, os.O_RDONLY | os.O_DIRECTORY)
    copy.rename(tmp_path / "moved")
    copy.mkdir()
    app = app_mod.from_environ({"TESTBED_REPLAY_RECORDING_FD": str(fd),
                                "TESTBED_REPLAY_RECORDING": str(copy),
                                "TESTBED_REPLAY_SUMMARY": str(tmp_path / "s.json")})
    assert len(app.responses) == len(recording.exchanges)
    assert (tmp_path / "s.json").exists()
    with pytest.raises(OSError):
        os.fstat(fd)  # closed once the bodies are in memory


def test_summary_written_in_the_background(tmp_path):
    """Under uWSGI the file is written by a thread, soon after each request."""
    import time

    path = tmp_path / "summary.json"
    s = server_summary.Summary(path, "uwsgi", "1", in_background=True)
    assert server_summary.read(path)["requests"] == 0
    for i in range(50):
        s.record(url=f"https://a.test/{i}", hit=i % 10 != 0, nbytes=10, connection=i % 3)
    deadline = time.monotonic() + 5
    while server_summary.read(path)["requests"] != 50 and time.monotonic() < deadline:
        time.sleep(0.01)
    after = server_summary.read(path)
    assert (after["requests"], after["misses"], after["bytes"], after["connections"]) == (
        50, 5, 500, 3)
    s.record(url="https://a.test/x", hit=True, nbytes=1)
    s.flush()
    assert server_summary.read(path)["requests"] == 51
