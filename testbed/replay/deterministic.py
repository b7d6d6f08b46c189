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


def served_recording(recording: rec.Recording, dest: Path, pin: Pin,
                     folder: int | None = None) -> tuple[rec.Recording, Report]:
    """The recording to serve: a copy in `dest` (a new folder) whose HTML responses
    carry the script; `recording` itself if none does. Bodies are read through the
    recording's folder (`folder`, its descriptor, if given), each checked against its
    hash. The copy is not loaded again here: the replay checks it as it checks any
    recording before a server reads it (testbed.replay.env), and so do the servers."""
    text = script(pin)
    report = Report(pin)
    rows: list[dict] = []
    bodies: dict[str, bytes] = {}
    changed = False
    for x in recording.exchanges:
        row = {k: v for k, v in asdict(x).items() if v is not None or k == "body"}
        body = b"" if x.body is None else recording.body(x, folder)
        if body and is_html(x.response_headers) and x.method != "HEAD" and x.status != 206:
            try:
                headers, body = rewrite(x.response_headers, body, text)
                row["response_headers"] = [list(h) for h in headers]
                report.injected += 1
                changed = True
            except NotInjected as e:
                report.skipped.append((f"{x.scheme}://{x.host}{x.target}", str(e)))
        if x.body is not None:
            row["body"] = rec.sha256(body)
            row["body_size"] = len(body)
            bodies[row["body"]] = body
        rows.append(row)
    for url, why in report.skipped:
        log.warning("deterministic scripts: %s served as recorded (%s)", url, why)
    if not changed:
        return recording, report
    manifest = _write(dest, recording, rows, bodies)
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


def _pairs(headers: Sequence[Sequence[str]]) -> rec.Headers:
    return tuple((k, v) for k, v in headers)


def _write(dest: Path, recording: rec.Recording, rows: Sequence[dict],
           bodies: dict[str, bytes]) -> dict:
    """The copy's folder written; its manifest."""
    dest.mkdir(mode=0o755)
    (dest / "bodies").mkdir(mode=0o755)
    for sha, body in bodies.items():
        (dest / "bodies" / sha).write_bytes(body)
        os.chmod(dest / "bodies" / sha, 0o644)
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
