"""The HTTP/3 replay servers' versions name their sources.

The manifest records each session's `h3server --version` and `h3quinn --version`,
and a resume refuses stored trials measured with another version
(testbed.campaign.store.versions). That only works if a change to what a server does also
changes its version. h3server/VERSIONS lists, per server, every version released
with the sha256 of its sources; tests/unit/test_server_sources.py recomputes the digests
and fails when the sources changed without a new version.

    python tests/support/server_sources.py      # the lines of the sources as they are now

A server's sources: its crate's folder (h3server/h3server/ or h3server/h3quinn/),
the shared library's (h3server/h3replay/), the workspace manifest
(h3server/Cargo.toml: dependency features, the release profile, the quiche patch)
and the recording format's schema, which the shared loader compiles in (its limits
on body sizes are the servers'); h3server's also the vendored quiche. Both add the
registry packages Cargo.lock pins (name, version, checksum), not the workspace's own
entries, so that one server's version does not move the other's.
"""

from __future__ import annotations

import hashlib
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # run as a script too: no support.paths
H3 = ROOT / "h3server"
VERSIONS = H3 / "VERSIONS"
SCHEMA = ROOT / "schemas/recording.schema.json"
"""Compiled into both servers (h3server/h3replay/src/recording.rs: include_str!)."""
SHARED = "h3replay"
"""The workspace's library crate both servers build on (a folder of h3server/)."""


def _files(package: str) -> list[Path]:
    if package not in ("h3server", "h3quinn"):
        raise ValueError(package)
    roots = [H3 / "Cargo.toml", H3 / package, H3 / SHARED]
    if package == "h3server":
        roots += sorted((H3 / "vendor").iterdir())
    out: list[Path] = []
    for r in roots:
        out += sorted(p for p in r.rglob("*") if p.is_file()) if r.is_dir() else [r]
    return [*out, SCHEMA]


def _registry_packages() -> bytes:
    lock = tomllib.loads((H3 / "Cargo.lock").read_text())
    pins = sorted(f"{p['name']} {p['version']} {p.get('checksum', '')}"
                  for p in lock.get("package", []) if "source" in p)
    return "\n".join(pins).encode()


def digest(package: str) -> str:
    """sha256 over the package's source files (path and bytes) and the registry
    packages Cargo.lock pins."""
    h = hashlib.sha256()
    for p in _files(package):
        rel = (p.relative_to(H3).as_posix() if p.is_relative_to(H3)
               else f"../schemas/{p.name}").encode()  # the schema, wherever a test put it
        data = p.read_bytes()
        h.update(b"%d %s %d\n" % (len(rel), rel, len(data)))
        h.update(rel + data)
    h.update(_registry_packages())
    return h.hexdigest()


def cargo_version(package: str) -> str:
    toml = H3 / package / "Cargo.toml"
    return tomllib.loads(toml.read_text())["package"]["version"]


def recorded() -> list[tuple[str, str, str]]:
    """h3server/VERSIONS: (package, version, digest) per line, comments left out."""
    out = []
    for line in VERSIONS.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            package, version, sha = line.split()
            out.append((package, version, sha))
    return out


def main() -> None:
    for package in ("h3server", "h3quinn"):
        print(package, cargo_version(package), digest(package))


if __name__ == "__main__":
    sys.exit(main())
