"""A good recording for hostile cases to break, the commands that read one, and the ways
to break its manifest."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from support.hostile_harness import Host
from testbed.formats import recording

BODY = b"<html>hello</html>"
GOOD = {"scheme": "https", "host": "www.a.test", "port": 443, "ip": "203.0.113.5",
        "method": "GET", "target": "/", "request_headers": [["user-agent", "x"]],
        "status": 200, "response_headers": [["content-type", "text/html"]]}
META = {"name": "rec", "url": "https://www.a.test/", "recorded_at": "2026-01-01T00:00:00Z",
        "loads": 1}

SHOW = ["recording", "show", "{dir}/rec"]
HAR = ["recording", "har", "{dir}/rec"]
REPLAY = ["replay", "{dir}/rec", "--stack", "tcp", "--", "true"]
REPLAY_QUIC = ["replay", "{dir}/rec", "--stack", "quic", "--", "true"]


def write_good(d: Path, exchanges=None) -> Path:
    """A good recording written into d (one exchange, GOOD, unless `exchanges`): its path."""
    return recording.write(d, META, exchanges or [(dict(GOOD), BODY)])


def body_file(rec: Path) -> Path:
    """The recording's (first) body file."""
    return next((rec / "bodies").iterdir())


def edit(change: Callable[[dict], None], exchanges=None) -> Callable[[Path, Host], None]:
    """A good recording whose manifest `change` then edits in place."""
    def prepare(d: Path, host: Host) -> None:
        rec = write_good(d, exchanges)
        data = json.loads((rec / "manifest.json").read_text())
        change(data)
        (rec / "manifest.json").write_text(json.dumps(data))
    return prepare


def everywhere(**values) -> Callable[[dict], None]:
    """Set keys of the origin and of every exchange alike (host, ip, ...)."""
    def change(data: dict) -> None:
        for row in [*data["origins"], *data["exchanges"]]:
            row.update(values)
    return change


def exchange0(**values) -> Callable[[dict], None]:
    """Set keys of the first exchange."""
    def change(data: dict) -> None:
        data["exchanges"][0].update(values)
    return change
