"""Deterministic scripts in a replay: every replayed HTML document runs the pinned
script (testbed.record.pinned_script) first, so the page's own scripts draw the same
random numbers and read the same clock in every visit, and request the same URLs.

    pin = pin_for(recording)            # the recording's time, the fixed seed
    served, report = served_recording(recording, folder, pin)

`served_recording` writes a copy of the recording whose HTML responses carry the
script: both replay servers (uWSGI and h3server/h3quinn) then serve the same bytes, and
the recording format stays theirs to check. Responses the script cannot go into are
served as recorded and counted in the report. The clock starts at the recording's
`recorded_at`, as WPR starts it at the archive's time, and the recorder pins the pages it
records to that same time (testbed.record.addon), so a recording made with the script
holds exactly the URLs its replays ask for.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from testbed.formats import recording as rec
from testbed.record.pinned_script import NotInjected, Pin, is_html, pin_at, rewrite, script

log = logging.getLogger(__name__)


def pin_for(recording: rec.Recording) -> Pin:
    """The recording's time (`recorded_at`) and the seed."""
    return pin_at(recording.recorded_at)


@dataclass
class Report:
    """What `served_recording` did: the pin, how many HTML responses carry the script,
    and those served as recorded, with why."""

    pin: Pin
    injected: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {**self.pin.as_dict(), "injected": self.injected,
                "skipped": [list(s) for s in self.skipped]}


def _candidate(x: rec.Exchange) -> bool:
    """An HTML response with a body (not to HEAD, not a 206 part)."""
    return (x.body is not None and x.method != "HEAD" and x.status != 206
            and is_html(x.response_headers))


def served_recording(recording: rec.Recording, dest: Path, pin: Pin,
                     folder: int | None = None) -> tuple[rec.Recording, Report]:
    """The recording to serve: a copy in `dest` (a new folder) whose HTML responses
    carry the script; `recording` itself if it has no HTML. Bodies are read through the
    recording's folder (`folder`, its descriptor, if given), each checked against its
    hash, one at a time (the largest body in memory, not the recording). The copy is not
    loaded again here: the replay checks it as it checks any recording before a server
    reads it (testbed.replay.env), and so do the servers."""
    report = Report(pin)
    if not any(_candidate(x) for x in recording.exchanges):
        return recording, report
    text = script(pin)
    dest.mkdir(mode=0o755)
    (dest / "bodies").mkdir(mode=0o755)
    rows: list[dict] = []
    copied: dict[str, tuple[str, int]] = {}
    """A body's hash -> its hash and size in the copy, once written."""
    for x in recording.exchanges:
        row = {k: v for k, v in asdict(x).items() if v is not None or k == "body"}
        if x.body is not None and _candidate(x):
            body = recording.body(x, folder)
            try:
                headers, body = rewrite(x.response_headers, body, text)
                row["response_headers"] = [list(h) for h in headers]
                report.injected += 1
            except NotInjected as e:
                report.skipped.append((f"{x.scheme}://{x.host}{x.target}", str(e)))
            row["body"], row["body_size"] = _put(dest, body)
        elif x.body is not None:
            if x.body not in copied:
                copied[x.body] = _put(dest, recording.body(x, folder))
            row["body"], row["body_size"] = copied[x.body]
        rows.append(row)
    for url, why in report.skipped:
        log.warning("deterministic scripts: %s served as recorded (%s)", url, why)
    manifest = _write(dest, recording, rows)
    served = rec.Recording(
        path=dest, name=recording.name, url=recording.url, recorded_at=recording.recorded_at,
        loads=recording.loads, origins=recording.origins,
        exchanges=tuple(rec.Exchange(**{**r, "request_headers": _pairs(r["request_headers"]),
                                         "response_headers": _pairs(r["response_headers"])})
                        for r in rows),
        chromium_version=recording.chromium_version,
        mitmproxy_version=recording.mitmproxy_version,
        content_sha256=rec.content_digest(manifest))
    return served, report


def _put(dest: Path, body: bytes) -> tuple[str, int]:
    """`body` in the copy's bodies/ (once); its hash and size."""
    sha = rec.sha256(body)
    path = dest / "bodies" / sha
    if not path.exists():
        path.write_bytes(body)
        os.chmod(path, 0o644)
    return sha, len(body)


def _pairs(headers: Sequence[Sequence[str]]) -> rec.Headers:
    return tuple((k, v) for k, v in headers)


def _write(dest: Path, recording: rec.Recording, rows: Sequence[dict]) -> dict:
    """The copy's manifest.json written; the manifest."""
    manifest = {
        "format": rec.FORMAT, "name": recording.name, "url": recording.url,
        "recorded_at": recording.recorded_at, "loads": recording.loads,
        **({"chromium_version": recording.chromium_version}
           if recording.chromium_version else {}),
        **({"mitmproxy_version": recording.mitmproxy_version}
           if recording.mitmproxy_version else {}),
        "origins": [asdict(o) for o in recording.origins],
        "exchanges": list(rows),
        "requests": len(rows),
        "bytes": sum(r["body_size"] or 0 for r in rows),
    }
    path = dest / "manifest.json"
    path.write_text(json.dumps(manifest, indent=1) + "\n")
    os.chmod(path, 0o644)
    return manifest
