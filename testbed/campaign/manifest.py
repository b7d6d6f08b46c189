"""The campaign manifest: what ran, so results can be traced and reproduced.

results/<campaign>/manifest.json holds the latest session's record at the top
level and every session (each `testbed run` of the campaign, a resume is a
new session) in `sessions`: the testbed's own commit (testbed.host.source) and
the versions of the kernel, Chromium, chromedriver, Browsertime, Node, nginx,
uWSGI, the HTTP/3 servers and Mahimahi; the host's TCP/UDP/core sysctls;
sha256 of the campaign, profile and recording files; the network calibrations;
each network's video frame rate (`video_fps`); what each protocol setting
changed in the server namespace; the file behind every site, network and
protocol label and how the campaign listed it (`file`, `listed_as`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import platform
from pathlib import Path

from testbed.errors import CommandFailed
from testbed.host import proc, source
from testbed.host.paths import H3QUINN, H3SERVER
from testbed.measure import browsertime

SYSCTL_PATTERN = r"^net\.(ipv4\.(tcp|udp)|core)"


def _first_line(argv: list[str]) -> str:
    """A tool's version line ("" when it cannot say: testbed.host.proc.version)."""
    return proc.version(argv) or ""


def versions() -> dict[str, str]:
    return {
        "testbed": source.version(),
        "kernel": platform.release(),
        "chromium": _first_line(["/usr/bin/chromium", "--version"]),
        "chromedriver": _first_line([browsertime.CHROMEDRIVER, "--version"]),
        "browsertime": browsertime.version(),
        "node": _first_line([str(browsertime.NODE), "--version"]),
        "nginx": _first_line(["nginx", "-v"]),
        "uwsgi": _first_line(["uwsgi", "--version"]),
        "h3server": _first_line([str(H3SERVER), "--version"]),
        "h3quinn": _first_line([str(H3QUINN), "--version"]),
        "mahimahi": _first_line(["dpkg-query", "-W", "-f", "${Version}", "mahimahi"]),
        "python": platform.python_version(),
    }


def sysctls(netns_exec: list[str] | None = None) -> dict[str, str]:
    """TCP, UDP and core sysctls (of the host, or of a namespace via its exec prefix)."""
    argv = [*(netns_exec or []), "sysctl", "-a", "--pattern", SYSCTL_PATTERN]
    try:
        cp = proc.run(argv, check=False, timeout=30)
    except CommandFailed:
        return {}
    out = {}
    for line in cp.stdout.splitlines():
        key, sep, value = line.partition(" = ")
        if sep:
            out[key.strip()] = " ".join(value.split())
    return out


def file_hash(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def session_record(campaign, recordings: dict, networks: dict, settings: dict,
                   calibrations: dict, runs: int, entries: dict | None = None) -> dict:
    """This session's record. entries (testbed.campaign.config.resolve): the file
    behind every label and how the campaign listed it."""
    entries = entries or {}

    def files(kind: str, label: str) -> dict:
        e = entries.get(kind, {}).get(label)
        return {} if e is None else {"file": str(e.file), "listed_as": list(e.listed)}

    return {
        "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
        "host": platform.node(),
        "campaign": {"name": campaign.name, "source": campaign.source,
                     "sha256": campaign.digest, "runs": runs,
                     "settings": campaign.model_dump(mode="json")},
        "versions": versions(),
        "sysctls": sysctls(),
        "recordings": {name: {"path": str(r.path), **files("sites", name), "url": r.url,
                              "manifest_sha256": file_hash(r.path / "manifest.json"),
                              "content_sha256": r.content_sha256,
                              "origins": len(r.hosts), "requests": len(r.exchanges)}
                       for name, r in recordings.items()},
        "networks": {name: {"source": p.source, **files("networks", name), "sha256": p.digest,
                            "profile": p.model_dump(mode="json"),
                            "video_fps": campaign.fps_of(p)}
                     for name, p in networks.items()},
        "protocols": {name: {"source": s.source, **files("protocols", name),
                             "sha256": s.digest, "stack": s.stack,
                             "profile": s.setting.model_dump(mode="json"),
                             "h3server_args": list(s.h3server_args),
                             "nginx_env": dict(s.nginx_env),
                             "chromium_flags": list(s.chromium_flags)}
                      for name, s in settings.items()},
        "calibration": calibrations,
        "server_sysctls": {},
    }


def write(path: Path, record: dict) -> dict:
    """Add this session to the manifest at path (created if missing); the document."""
    try:
        doc = json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        doc = {"sessions": []}
    sessions = [*doc.get("sessions", []), record]
    doc = {**record, "sessions": sessions}
    save(path, doc)
    return doc


def save(path: Path, doc: dict) -> None:
    tmp = path.with_suffix(".tmp")
    try:
        tmp.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # no half-written file on a full disk
        raise
