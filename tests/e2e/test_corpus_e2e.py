"""End to end: a small corpus built by the real generator, recorded by the real
`testbed record` in a namespace, built again (nothing to do, then from scratch:
the same bodies and manifests, byte for byte), and replayed under both stacks with no replay miss.

The packages are fake tarballs served by a registry on loopback, so this needs
nothing `make setup` does not fetch; `make corpus` does the same with the real
ones (docs/recording-and-corpus.md, "The corpus").
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path

import pytest
from support import corpus_fake
from support.needs import need, need_root
from support.paths import ROOT

from corpus import npm

PY = str(ROOT / ".venv/bin/python")
SITES = ["garden33", "shop02"]  # a small multi-origin page and a single-origin one
SET = "today"  # their set: recorded into OUT/today/NAME

pytestmark = pytest.mark.e2e


def bodies(rec: Path) -> list[tuple[str, str, str]]:
    m = json.loads((rec / "manifest.json").read_text())
    return sorted((e["host"], e["target"], e["body"]) for e in m["exchanges"])


def test_small_corpus_builds_once_deterministically_and_replays_without_misses(tmp_path):
    need_root()
    from testbed.measure import browsertime
    need(browsertime.missing())
    packages = corpus_fake.tarballs()
    lock = tmp_path / "lock.json"
    npm.write_lock({n: locked for n, (locked, _) in packages.items()}, lock)
    # World-readable: the replay servers run as the testbed user.
    shared = Path(tempfile.mkdtemp(prefix="tb-corpus-"))
    shared.chmod(0o755)
    try:
        check(tmp_path, shared / "corpus", lock, packages)
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def check(tmp_path: Path, out: Path, lock: Path, packages) -> None:
    with corpus_fake.registry(packages) as (url, _handler):
        def build(*extra):
            return subprocess.run([PY, "-m", "corpus", "build", "--only", *SITES,
                                   "--out", str(out), "--cache", str(tmp_path / "cache"),
                                   "--registry", url, "--lock", str(lock), *extra],
                                  cwd=ROOT, capture_output=True, text=True, timeout=600,
                                  check=False)
        first = build()
        assert first.returncode == 0, first.stderr[-3000:]
        made = {s: bodies(out / SET / s) for s in SITES}
        manifests = {s: (out / SET / s / "manifest.json").read_bytes() for s in SITES}
        stamps = {s: (out / SET / s / "manifest.json").stat().st_mtime_ns for s in SITES}
        again = build()
        assert again.returncode == 0 and "up to date" in again.stdout, again.stdout
        assert {s: (out / SET / s / "manifest.json").stat().st_mtime_ns for s in SITES} == stamps
        forced = build("--force")
        assert forced.returncode == 0, forced.stderr[-3000:]
    assert {s: bodies(out / SET / s) for s in SITES} == made  # the same bodies, byte for byte
    # and the same manifests: the recording's time and the Date headers are the corpus's
    assert {s: (out / SET / s / "manifest.json").read_bytes() for s in SITES} == manifests
    shop = json.loads((out / SET / "shop02" / "manifest.json").read_text())
    assert len({o["host"] for o in shop["origins"]}) == 1

    campaign = tmp_path / "check.toml"
    campaign.write_text(f'sites = {json.dumps([str(out / SET / s) for s in SITES])}\n'
                        'networks = ["none"]\nprotocols = ["tcp", "quic"]\nruns = 1\n'
                        'retries = 0\ntimeout_s = 60\n')
    cp = subprocess.run([str(ROOT / ".venv/bin/testbed"), "run", str(campaign), "--out",
                         str(tmp_path / "res")], cwd=ROOT, capture_output=True, text=True,
                        timeout=900, check=False)
    assert cp.returncode == 0, cp.stderr[-3000:]
    db = sqlite3.connect(tmp_path / "res" / "trials.sqlite")
    rows = db.execute("SELECT site, setting, status, reason, misses, requests "
                      "FROM trials").fetchall()
    db.close()
    assert len(rows) == 2 * len(SITES)
    for site, protocol, status, reason, misses, requests in rows:
        assert (status, misses) == ("ok", 0), (site, protocol, status, reason, misses)
        assert requests > 10
