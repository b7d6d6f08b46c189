"""The per-run JSON summary a replay server keeps current.

    {"server": "uwsgi", "version": "...", "requests": 12, "misses": 1,
     "miss_urls": ["https://a.test/x.js"], "bytes": 48213, "connections": 3}

Both servers (this package's uWSGI app and h3server) write the same keys,
atomically (a temporary file renamed over the old one) after every request,
so a reader never sees a half-written file. Diff two reads to count one page
load's requests and misses.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from pathlib import Path

KEYS = ("server", "version", "requests", "misses", "miss_urls", "bytes", "connections")


def read(path: Path) -> dict:
    """The summary at path; an empty one (zero counts) if the server has not written it yet."""
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        return {"server": None, "version": None, "requests": 0, "misses": 0, "miss_urls": [],
                "bytes": 0, "connections": 0}


def diff(before: dict, after: dict) -> dict:
    """What happened between two reads: counts subtracted, the new miss URLs."""
    return {
        "requests": after.get("requests", 0) - before.get("requests", 0),
        "misses": after.get("misses", 0) - before.get("misses", 0),
        "miss_urls": list(after.get("miss_urls", []))[len(before.get("miss_urls", [])):],
        "bytes": after.get("bytes", 0) - before.get("bytes", 0),
        "connections": after.get("connections", 0) - before.get("connections", 0),
    }


class Summary:
    """Counters of a serving process, written to `path` after each change (thread-safe)."""

    def __init__(self, path: Path | None, server: str, version: str):
        self.path = Path(path) if path else None
        self.server = server
        self.version = version
        self.requests = 0
        self.misses = 0
        self.miss_urls: list[str] = []
        self.bytes = 0
        self._connections: set = set()
        self._lock = threading.Lock()
        self.write()

    def record(self, *, url: str, hit: bool, nbytes: int, connection=None) -> None:
        with self._lock:
            self.requests += 1
            self.bytes += nbytes
            if not hit:
                self.misses += 1
                self.miss_urls.append(url)
            if connection is not None:
                self._connections.add(connection)
            self._write_locked()

    def as_dict(self) -> dict:
        return {"server": self.server, "version": self.version, "requests": self.requests,
                "misses": self.misses, "miss_urls": list(self.miss_urls), "bytes": self.bytes,
                "connections": len(self._connections)}

    def write(self) -> None:
        with self._lock:
            self._write_locked()

    def _write_locked(self) -> None:
        if self.path is None:
            return
        fd, tmp = tempfile.mkstemp(prefix=".summary.", dir=self.path.parent)
        with os.fdopen(fd, "w") as f:
            json.dump(self.as_dict(), f)
        os.chmod(tmp, 0o644)
        os.replace(tmp, self.path)
