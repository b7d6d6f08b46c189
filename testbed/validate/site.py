"""Recordings made from scratch (for the validations and tests)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from urllib.parse import urlsplit

from testbed import recording as rec


def exchange(url: str, ip: str, body: bytes, content_type: str = "text/html", *,
             status: int = 200, method: str = "GET",
             headers: tuple[tuple[str, str], ...] = ()) -> tuple[dict, bytes]:
    """One (exchange dict, body) pair for testbed.recording.write."""
    u = urlsplit(url)
    target = (u.path or "/") + (f"?{u.query}" if u.query else "")
    port = u.port or (443 if u.scheme == "https" else 80)
    return ({
        "scheme": u.scheme, "host": u.hostname, "port": port, "ip": ip, "method": method,
        "target": target,
        "request_headers": [["user-agent", "testbed-synthetic"]],
        "status": status,
        "response_headers": [["content-type", content_type],
                             ["content-length", str(len(body))],
                             *[[k, v] for k, v in headers]],
    }, body)


def write(out_dir: Path, name: str, url: str, exchanges: list[tuple[dict, bytes]]) -> Path:
    meta = {"name": name, "url": url, "loads": 1,
            "recorded_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
    return rec.write(Path(out_dir), meta, exchanges)
