"""End to end: a real trial (the shared smoke campaign's QUIC trial in Chromium: the
bundled site, DSL, one run, video kept), its page
written by `testbed trial`, opened by a headless Chromium in a network namespace with
nothing in it but loopback: one waterfall row per request of the trial's HAR, and the
filmstrip's frames shown, with no network to load anything from."""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
import subprocess

import pytest
from support.paths import ROOT, TESTBED

pytestmark = pytest.mark.e2e


def test_trial_page_has_one_waterfall_row_per_request(smoke_campaign, tmp_path):
    out = smoke_campaign
    with sqlite3.connect(out / "trials.sqlite") as db:
        trial_id, requests = db.execute(
            "SELECT trial_id, requests FROM trials WHERE client = 'chromium' AND "
            "setting = 'quic'").fetchone()
    db.close()
    har = json.loads(gzip.decompress((out / "trials" / trial_id / "browsertime.har.gz")
                                     .read_bytes()))
    entries = len(har["log"]["entries"])
    assert entries >= requests > 0

    page = tmp_path / "pages" / "trial.html"
    cp = subprocess.run([TESTBED, "trial", str(out), trial_id, "--output", str(page)], cwd=ROOT,
                        capture_output=True, text=True, timeout=300, check=False)
    assert cp.returncode == 0, cp.stderr[-3000:]
    assert f"HAR: {entries} requests" in cp.stdout

    from testbed.host import chromium, safefs
    from testbed.host.chromium import Chromium
    from testbed.host.netns import NetNS

    shown = chromium.make_profile(prefix="page-")  # the testbed user reads it there
    try:
        shutil.copy(page, shown / "trial.html")
        (shown / "trial.html").chmod(0o644)
        with NetNS("page") as ns, Chromium(ns.name) as browser:
            tab = browser.new_page()
            tab.navigate((shown / "trial.html").as_uri())
            rows = tab.evaluate("document.querySelectorAll('#waterfall tr[data-request]')"
                                ".length")
            frames = tab.evaluate("Array.from(document.querySelectorAll('#filmstrip img'))"
                                  ".filter(i => i.complete && i.naturalWidth > 0).length")
            loaded = tab.evaluate("performance.getEntriesByType('resource').length")
    finally:
        safefs.rmtree(shown)
    assert rows == entries
    assert frames >= 1  # the video was kept: its frames are inline images that decode
    assert loaded == 0  # nothing fetched: the page is self-contained

