"""A change to an HTTP/3 replay server's sources comes with a new version
(tests/support/server_sources.py): h3server/VERSIONS's latest line per server has the version
Cargo builds and the digest of the sources as they are, and no version is listed with
two digests. A resume compares the manifest's versions (testbed.campaign.store.versions), so
this is what makes "one server throughout" checkable."""

from __future__ import annotations

import shutil

import pytest
from support import server_sources as src


@pytest.mark.parametrize("package", ["h3server", "h3quinn"])
def test_the_latest_version_names_the_sources(package):
    lines = [(v, d) for p, v, d in src.recorded() if p == package]
    assert lines, f"{src.VERSIONS}: no line for {package}"
    version, sha = lines[-1]
    now = src.digest(package)
    assert (version, sha) == (src.cargo_version(package), now), (
        f"{package}'s sources changed: give it a new version in its Cargo.toml and add "
        f"the line `python tests/support/server_sources.py` prints for it to {src.VERSIONS} "
        f"(latest recorded: {version} {sha[:12]}..., now: {src.cargo_version(package)} "
        f"{now[:12]}...)")
    versions = [v for v, _ in lines]
    assert len(versions) == len(set(versions)), f"a version of {package} with two digests"


def test_a_changed_source_changes_the_digest(tmp_path, monkeypatch):
    """The digest reads what the server is built from: one byte more in a shared
    module moves both servers; one in the vendored quiche moves h3server only."""
    h3 = tmp_path / "h3server"
    shutil.copytree(src.H3, h3, ignore=shutil.ignore_patterns("target"))
    monkeypatch.setattr(src, "H3", h3)
    before = {p: src.digest(p) for p in ("h3server", "h3quinn")}
    assert before == {p: src.digest(p) for p in before}  # deterministic
    with (h3 / src.SHARED / "src/matching.rs").open("a") as f:
        f.write("\n")
    shared = {p: src.digest(p) for p in before}
    assert all(shared[p] != before[p] for p in before)
    quiche = next((h3 / "vendor").iterdir()) / "Cargo.toml"
    quiche.write_text(quiche.read_text() + "\n")
    assert src.digest("h3server") != shared["h3server"]
    assert src.digest("h3quinn") == shared["h3quinn"]
    # the recording schema is compiled into both: a change to it moves both
    schema = tmp_path / "recording.schema.json"
    schema.write_text(src.SCHEMA.read_text() + "\n")
    monkeypatch.setattr(src, "SCHEMA", schema)
    assert src.digest("h3server") != shared["h3server"] and \
        src.digest("h3quinn") != shared["h3quinn"]
