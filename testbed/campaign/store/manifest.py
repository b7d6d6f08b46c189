"""The campaign manifest: what ran, so results can be traced and reproduced.

results/<campaign>/manifest.json (the model, its versions and the rule its top level
is derived by: results_contract.manifest) holds every session (each `testbed run` of
the campaign, a resume is a new session) in `sessions`, and at the top level what
the whole store holds. This module measures a session: the testbed's own commit
(testbed.host.source) and the versions of the kernel, Chromium, chromedriver,
Browsertime, Node, nginx, uWSGI, the HTTP/3 servers and Mahimahi; the host's
TCP/UDP/core sysctls;
sha256 of the campaign, profile and recording files; the network calibrations;
each network's video frame rate (`video_fps`); what each protocol setting
changed in the server namespace; the file behind every site, network and
protocol label and how the campaign listed it (`file`, `listed_as`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import platform
from pathlib import Path
from typing import Any

from results_contract import manifest as contract
from results_contract.manifest import Manifest, Session
from testbed.errors import CommandFailed, InputError
from testbed.formats import profiles
from testbed.host import proc, safefs, source
from testbed.host.paths import H3QUINN, H3SERVER
from testbed.measure import browsertime
from testbed.replay import deterministic

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
                   calibrations: dict, runs: int, entries: dict | None = None,
                   **more: Any) -> Session:
    """This session's record. entries (testbed.campaign.plan.config.resolve): the file
    behind every label and how the campaign listed it; more: the Session's other
    fields (lanes, mixed_versions, rerun)."""
    entries = entries or {}

    def files(kind: str, label: str) -> dict:
        e = entries.get(kind, {}).get(label)
        return {} if e is None else {"file": str(e.file), "listed_as": list(e.listed)}

    return Session.model_validate({
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
                              **({"script_pin": deterministic.pin_for(r).as_dict()}
                                 if campaign.deterministic_scripts else {}),
                              "origins": len(r.hosts), "addresses": len(r.ips),
                              "requests": len(r.exchanges)}
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
        "profiles_meta": profiles.meta_record(networks, {n: s.setting for n, s in
                                                         settings.items()}),
        "calibration": calibrations,
        **more,
    })


def read(path: Path) -> Manifest:
    """The manifest at path (upgraded; an empty one if there is none); InputError
    naming the file and the key if it is not a manifest."""
    from results_contract.load import ResultsError, load_manifest

    try:
        found = load_manifest(path.parent)
    except ResultsError as e:
        raise InputError(str(e)) from None
    return found if found is not None else contract.empty()


def write(path: Path, session: Session) -> Manifest:
    """Add this session to the manifest at path (created if missing); the manifest."""
    doc = read(path).with_session(session)
    save(path, doc)
    return doc


def save(path: Path, doc: Manifest) -> None:
    tmp = path.with_suffix(".tmp")
    try:
        tmp.write_text(doc.text())
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # no half-written file on a full disk
        raise


def upgrade(folder: Path) -> tuple[int, int]:
    """Rewrite the manifest.json of `folder` in the current version's form (read as any
    manifest: never through a symlink, checked): (version it had, version now)."""
    from results_contract.load import ResultsError
    from results_contract.results_io import Folder

    safefs.check_out_dir(Path(folder), "RESULTS")  # root rewrites a file in it
    path = Path(folder) / "manifest.json"
    try:
        with Folder(Path(folder)) as f:
            data = f.json("manifest.json")
        if data is None:
            raise InputError(f"{path}: no such file")
        found = contract.parse(data, path)
    except ResultsError as e:
        raise InputError(str(e)) from None
    save(path, found)
    was = data.get("schema_version", 1) if isinstance(data, dict) else 1
    return was, found.schema_version
