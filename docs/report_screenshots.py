"""Screenshots of a campaign's report for the docs (issue 53), taken by a headless Chromium
in a network namespace with nothing in it but loopback (root: the testbed's browser).

    sudo .venv/bin/python docs/report_screenshots.py                   # the bundled fixture
    sudo .venv/bin/python docs/report_screenshots.py reference         # the committed reference

Writes docs/img/report-scorecard.png (the report's top: the scorecard) and
docs/img/report-site.png (the first site's page). A side-by-side filmstrip needs a
campaign that kept its videos; neither the fixture nor the reference does, so there is
none to take.
"""

from __future__ import annotations

import base64
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMG = ROOT / "docs" / "img"
WIDTH, HEIGHT = 1320, 1000


def shoot(folder: Path) -> list[Path]:
    """The screenshots of the report in `folder` (index.html, sites/): their paths."""
    from testbed.host import chromium, safefs
    from testbed.host.chromium import Chromium
    from testbed.host.netns import NetNS

    shown = chromium.make_profile(prefix="shots-")  # the testbed user reads it there
    written = []
    try:
        copy = Path(shutil.copytree(folder, shown / "report"))
        for p in [copy, *copy.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
        site = min((copy / "sites").glob("*.html"))
        with NetNS("shots") as ns, Chromium(ns.name) as browser:
            tab = browser.new_page()
            tab.call("Emulation.setDeviceMetricsOverride",
                     {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False})
            for page, anchor, name in ((copy / "index.html", "scorecard", "report-scorecard.png"),
                                       (site, "", "report-site.png")):
                tab.navigate(page.as_uri())
                if anchor:
                    tab.evaluate(f"document.getElementById('{anchor}').scrollIntoView()")
                shot = tab.call("Page.captureScreenshot", {"format": "png"})["data"]
                out = IMG / name
                out.write_bytes(base64.b64decode(shot))
                written.append(out)
    finally:
        safefs.rmtree(shown)
    return written


def main(argv: list[str]) -> int:
    source = ROOT / (argv[0] if argv else "tests/fixtures/results")
    with tempfile.TemporaryDirectory(prefix="report-shots-") as tmp:
        out = Path(tmp) / "report"
        out.mkdir()
        subprocess.run([str(ROOT / ".venv" / "bin" / "testbed"), "report", str(source),
                        "--out", str(out)], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        for path in shoot(out):
            print(path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
