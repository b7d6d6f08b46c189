"""The per-run JSON summary a replay server keeps current.

    {"server": "uwsgi", "version": "...", "requests": 12, "misses": 1,
     "miss_urls": ["https://a.test/x.js"], "bytes": 48213, "connections": 3,
     "resumed": 3, "early_data": 1,
     "names": {"a.test": [2, 2], "cdn.test": [1, 1]}}

`connections` counts connections that carried a request; `resumed` those of
them that resumed a TLS session (nginx's $ssl_session_reused, quiche's
is_resumed); `early_data` the requests that came in TLS early data / QUIC
0-RTT (nginx's $ssl_early_data, quiche's is_in_early_data). A summary written
before the last two existed reads as zero of them. `names` (the uWSGI app's
only: nginx's $ssl_server_name; h3server does not write it) splits the first
two by the name the client asked for in its TLS handshake (SNI):
name -> [connections, resumed]. A browser that sends a second name's requests
over the first name's connection (HTTP/2 connection coalescing) makes no
connection of the second name: a warm visit's verdict needs to know which names
the warm-up's connections had (testbed.measure.trial).

Both servers (this package's uWSGI app and h3server) write the same keys,
atomically (a temporary file renamed over the old one), so a reader never
sees a half-written file. Neither writes it in a response's path: h3server at
most every 50 ms, the uWSGI app from a writer thread woken by each request
(writing it in the request made nginx wait ~0.5 ms longer for the end of every
response: the server-parity check saw it at 10 KB). Diff two reads a moment
after a page load to count its requests and misses.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections import Counter
from pathlib import Path

KEYS = ("server", "version", "requests", "misses", "miss_urls", "bytes", "connections",
        "resumed", "early_data", "names")


def read(path: Path) -> dict:
    """The summary at path; an empty one (zero counts) if the server has not written it yet.
    A server (the testbed user) wrote it: a symlink or a non-file there is refused
    (testbed.host.safefs.UnsafePath), never read."""
    from testbed.host import safefs

    try:
        return json.loads(safefs.read_user(Path(path)))
    except FileNotFoundError:
        return {"server": None, "version": None, "requests": 0, "misses": 0, "miss_urls": [],
                "bytes": 0, "connections": 0, "resumed": 0, "early_data": 0, "names": {}}


def diff(before: dict, after: dict) -> dict:
    """What happened between two reads: counts subtracted, the new miss URLs."""
    return {
        "requests": after.get("requests", 0) - before.get("requests", 0),
        "misses": after.get("misses", 0) - before.get("misses", 0),
        "miss_urls": _new_items(list(before.get("miss_urls", [])),
                                list(after.get("miss_urls", []))),
        "bytes": after.get("bytes", 0) - before.get("bytes", 0),
        "connections": after.get("connections", 0) - before.get("connections", 0),
        "resumed": after.get("resumed", 0) - before.get("resumed", 0),
        "early_data": after.get("early_data", 0) - before.get("early_data", 0),
        **({"names": names_diff(before.get("names") or {}, after["names"])}
           if isinstance(after.get("names"), dict) else {}),
    }


def _new_items(before: list, after: list) -> list:
    """The items of `after` beyond `before`: its tail when it starts with `before` (one
    server's list only grows), else each item as often as it is more frequent (a merge
    of several servers' lists, see `merge`)."""
    if after[:len(before)] == before:
        return after[len(before):]
    left = Counter(before)
    out = []
    for item in after:
        if left[item] > 0:
            left[item] -= 1
        else:
            out.append(item)
    return out


COUNTS = ("requests", "misses", "bytes", "connections", "resumed", "early_data")


def merge(summaries: list[dict]) -> dict:
    """One summary of several servers' (a `split` layout's QUIC servers, one per
    certificate): counts added, miss URLs and connections (`conns`) one after the
    other, `names` added per name; the other keys the first one's."""
    if len(summaries) == 1:
        return summaries[0]
    out = dict(summaries[0])
    for key in COUNTS:
        out[key] = sum(s.get(key, 0) for s in summaries)
    for key in ("miss_urls", "conns"):
        if any(isinstance(s.get(key), list) for s in summaries):
            out[key] = [x for s in summaries if isinstance(s.get(key), list) for x in s[key]]
    if any(isinstance(s.get("names"), dict) for s in summaries):
        names: dict[str, list[int]] = {}
        for s in summaries:
            for n, v in (s.get("names") or {}).items():
                if isinstance(v, list) and len(v) == 2:
                    was = names.get(n, [0, 0])
                    names[n] = [was[0] + v[0], was[1] + v[1]]
        out["names"] = names
    return out


def names_diff(before: dict, after: dict) -> dict[str, list[int]]:
    """name -> [connections, resumed] between two reads; names with no new connection,
    or whose counts are not two whole numbers, left out."""
    def counts(v: object) -> tuple[int, int] | None:
        ok = (isinstance(v, list) and len(v) == 2
              and all(isinstance(x, int) and not isinstance(x, bool) for x in v))
        return (v[0], v[1]) if ok else None  # type: ignore[index]

    out = {}
    for name, now in after.items():
        now_c, was_c = counts(now), counts(before.get(name, [0, 0]))
        if not isinstance(name, str) or now_c is None or was_c is None:
            continue
        new = [now_c[0] - was_c[0], now_c[1] - was_c[1]]
        if new[0] > 0:
            out[name] = new
    return dict(sorted(out.items()))


class Summary:
    """Counters of a serving process, written to `path` after each change (thread-safe).

    in_background: record() only counts and wakes a writer thread (started with the
    first record, so in the process that serves); flush() writes at once."""

    def __init__(self, path: Path | None, server: str, version: str, *,
                 in_background: bool = False):
        self.path = Path(path) if path else None
        self.server = server
        self.version = version
        self.requests = 0
        self.misses = 0
        self.miss_urls: list[str] = []
        self.bytes = 0
        self._connections: set = set()
        self._resumed: set = set()
        self._names: dict = {}
        self.early_data = 0
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._in_background = in_background
        self._changed = threading.Event()
        self._writer: threading.Thread | None = None
        self.write()

    def record(self, *, url: str, hit: bool, nbytes: int, connection=None,
               resumed: bool = False, early_data: bool = False,
               name: str | None = None) -> None:
        """One request answered: on `connection` (the server's id of it), which `resumed`
        a TLS session or not, with `name` its TLS server name (SNI)."""
        with self._lock:
            if name is not None and connection is not None:
                self._names.setdefault(connection, name)
            if early_data:
                self.early_data += 1
            if resumed and connection is not None:
                self._resumed.add(connection)
            self.requests += 1
            self.bytes += nbytes
            if not hit:
                self.misses += 1
                self.miss_urls.append(url)
            if connection is not None:
                self._connections.add(connection)
        if not self._in_background:
            self.write()
            return
        if self._writer is None:
            self._writer = threading.Thread(target=self._write_loop, name="summary",
                                            daemon=True)
            self._writer.start()
        self._changed.set()

    def as_dict(self) -> dict:
        with self._lock:
            return {"server": self.server, "version": self.version,
                    "requests": self.requests, "misses": self.misses,
                    "miss_urls": list(self.miss_urls), "bytes": self.bytes,
                    "connections": len(self._connections), "resumed": len(self._resumed),
                    "early_data": self.early_data, "names": self._by_name()}

    def _by_name(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for conn, name in self._names.items():
            counts = out.setdefault(name, [0, 0])
            counts[0] += 1
            counts[1] += conn in self._resumed
        return dict(sorted(out.items()))

    def flush(self) -> None:
        """Write the counters now (what the writer thread would write soon)."""
        self.write()

    def _write_loop(self) -> None:
        while True:
            self._changed.wait()
            self._changed.clear()
            self.write()

    def write(self) -> None:
        if self.path is None:
            return
        with self._write_lock:  # the newest counters are written last
            data = self.as_dict()
            fd, tmp = tempfile.mkstemp(prefix=".summary.", dir=self.path.parent)
            with os.fdopen(fd, "w") as f:
                json.dump(data, f)
            os.chmod(tmp, 0o644)
            os.replace(tmp, self.path)
