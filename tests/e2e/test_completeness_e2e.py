"""End to end: the measurement window waits for the page's own post-load work, and the
judge of completeness counts it (docs/completeness.md, issue 52).

A one-load recording made here: a page whose script, 800 ms after the load event,
asks for four more images (as the corpus's `more()` does), one of them with a query
string it makes anew each visit. The old window (the load event plus 300 ms without a
response ending) closed before they were asked for, so their HAR entries were missing
and the two stacks' trials described different amounts of the page. The campaign
(TCP+ and QUIC, Chromium and Firefox, no emulated network) must keep every trial,
each with every needed URL obtained (missing_resources 0), the four late images
among what it obtained after its load event, and the same request count under both
stacks.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path

import pytest
from support.needs import need_firefox, needs_parts
from support.paths import ROOT, TESTBED
from support.replay_site import image

from testbed.validate.site import exchange, write

pytestmark = pytest.mark.e2e

WWW, IMG = "www.late.test", "img.late.test"
IP_WWW, IP_IMG = "198.51.100.21", "198.51.100.22"
LATE = [f"https://{IMG}/more/{i}.png" for i in range(3)] + [f"https://{IMG}/more/t.png"]

HTML = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>late content</title>
<link rel="icon" href="data:,">
</head><body><h1>Late content</h1>
<img src="https://{IMG}/hero.png" width="320" height="200">
<div id="more"></div>
<script src="/app.js"></script>
</body></html>
""".encode()

APP = f"""addEventListener('load', function () {{
  setTimeout(function () {{
    var box = document.getElementById('more');
    for (var i = 0; i < 3; i++) {{
      var img = new Image(); img.src = 'https://{IMG}/more/' + i + '.png'; box.appendChild(img);
    }}
    var t = new Image(); t.src = 'https://{IMG}/more/t.png?v=' + Date.now(); box.appendChild(t);
  }}, 800);
}});""".encode()


def make_recording() -> Path:
    d = Path(tempfile.mkdtemp(prefix="tb-late-site-"))
    d.chmod(0o755)
    tao = (("timing-allow-origin", "*"), ("cache-control", "max-age=3600"))
    xs = [exchange(f"https://{WWW}/", IP_WWW, HTML, "text/html; charset=utf-8", headers=tao),
          exchange(f"https://{WWW}/app.js", IP_WWW, APP, "text/javascript", headers=tao),
          exchange(f"https://{IMG}/hero.png", IP_IMG, image("PNG", (320, 200), "navy"),
                   "image/png", headers=tao)]
    xs += [exchange(u, IP_IMG, image("PNG", (160, 100), c), "image/png", headers=tao)
           for u, c in zip(LATE[:3], ("olive", "teal", "maroon"), strict=True)]
    xs.append(exchange(LATE[3] + "?v=1700000000000", IP_IMG, image("PNG", (160, 100), "gray"),
                       "image/png", headers=tao))
    return write(d, "late-site", f"https://{WWW}/", xs)


def test_the_window_waits_for_post_load_content_on_both_stacks(tmp_path):
    needs_parts()
    need_firefox()
    site = make_recording()
    try:
        camp = tmp_path / "late.toml"
        camp.write_text("\n".join([
            f"sites = [{json.dumps(str(site))}]", 'networks = ["none"]',
            'protocols = ["tcp-plus", "quic"]', 'client = ["chromium", "firefox"]',
            "runs = 1", "timeout_s = 60", "retries = 0", "keep_video = false", "seed = 1",
            ""]))
        out = tmp_path / "out"
        cp = subprocess.run([TESTBED, "run", str(camp), "--out", str(out)], cwd=ROOT,
                            capture_output=True, text=True, timeout=900, check=False)
        assert cp.returncode == 0, cp.stderr[-3000:]
        db = sqlite3.connect(out / "trials.sqlite")
        db.row_factory = sqlite3.Row
        try:
            trials = [dict(r) for r in db.execute("SELECT * FROM trials")]
        finally:
            db.close()
        assert len(trials) == 4
        for t in trials:
            assert t["status"] == "ok", (t["trial_id"], t["reason"])
            assert t["missing_resources"] == 0, t
            assert t["after_onload_resources"] >= 4, t
            evidence = json.loads((out / "trials" / t["trial_id"] / "trial.json").read_text())
            after = evidence["evidence"]["completeness"]["after_onload"]
            assert {u.split("?")[0] for u in after} >= set(LATE), (t["trial_id"], after)
        for client in ("chromium", "firefox"):
            counts = {t["setting"]: t["requests"] for t in trials if t["client"] == client}
            assert counts["tcp-plus"] == counts["quic"], (client, counts)
    finally:
        shutil.rmtree(site.parent, ignore_errors=True)
