"""The recording format: write, load, validation errors."""

from __future__ import annotations

import json

import pytest

from testbed import recording
from testbed.errors import InputError


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
