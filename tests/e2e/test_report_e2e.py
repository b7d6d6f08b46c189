"""End to end: the report of the bundled fixture and of the committed reference, opened
by a headless Chromium in a network namespace with nothing in it but loopback, as a
reader sees them (issue 53): no None, nan or inf in the text, no table wider than its
box (a wide one scrolls inside its own), a header click sorts a table, and every link
and image resolves to a file inside the report folder."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from support.paths import FIXTURES, ROOT, TESTBED

pytestmark = pytest.mark.e2e

BAD = re.compile(r"(?<![A-Za-z])(None|nan|NaN|inf|Infinity)(?![A-Za-z])")

READ = """(() => {
  const wide = [];
  for (const t of document.querySelectorAll('table')) {
    let box = t.parentElement, scrolls = false;
    for (let e = box; e && e !== document.body; e = e.parentElement) {
      if (getComputedStyle(e).overflowX === 'auto') { scrolls = true; break; }
    }
    const room = scrolls ? document.body.clientWidth : box.clientWidth;
    if (!scrolls && t.getBoundingClientRect().width > room + 1) wide.push(t.id || t.className);
  }
  return {text: document.body.innerText, wide: wide,
          page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
          links: Array.from(document.querySelectorAll('a[href], img[src]'))
                      .map(e => e.getAttribute('href') || e.getAttribute('src'))};
})()"""

SORT = """(() => {
  const t = document.querySelector('%s');
  const th = t.tHead.rows[t.tHead.rows.length - 1].cells[%d];
  const read = () => Array.from(t.tBodies[0].rows).map(r => r.cells[%d].textContent.trim());
  th.click(); const up = read(); th.click(); const down = read();
  return {up: up, down: down};
})()"""


def number(cell: str) -> float:
    return float(cell.replace("−", "-").replace("%", "").replace(",", "").split()[0])


def report_of(source: Path, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    cp = subprocess.run([TESTBED, "report", str(source), "--out", str(out)], cwd=ROOT,
                        capture_output=True, text=True, timeout=600, check=False)
    assert cp.returncode == 0, cp.stderr[-3000:]
    return out


# The reference's report (3,800 trials, 33 s) is make test-long's: it strengthens the
# fixture's, which make test runs.
LONG = pytest.mark.long(strengthens="tests/e2e/test_report_e2e.py::test_a_reader_sees_no_none_"
                                    "no_overflow_a_working_sort_and_links_inside[fixture]")


@pytest.mark.parametrize("source", [FIXTURES / "results",
                                    pytest.param(ROOT / "reference", marks=LONG)],
                         ids=["fixture", "reference"])
def test_a_reader_sees_no_none_no_overflow_a_working_sort_and_links_inside(source, tmp_path):
    from testbed.host import chromium, safefs
    from testbed.host.chromium import Chromium
    from testbed.host.netns import NetNS

    written = report_of(source, tmp_path / "report")
    shown = chromium.make_profile(prefix="report-")  # the testbed user reads it there
    try:
        folder = Path(shutil.copytree(written, shown / "report"))
        for p in [folder, *folder.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
        site_page = min((folder / "sites").glob("*.html"))
        seen = {}
        with NetNS("report") as ns, Chromium(ns.name) as browser:
            tab = browser.new_page()
            for page in (folder / "index.html", site_page):
                tab.navigate(page.as_uri())
                seen[page] = tab.evaluate(READ)
            tab.navigate((folder / "index.html").as_uri())
            # the scorecard's first setting column: numbers (a dash last)
            sort = tab.evaluate(SORT % ("table.scorecard", 1, 1))
        for page, view in seen.items():
            found = BAD.search(view["text"])
            assert not found, (page.name,
                               view["text"][max(0, found.start() - 80):found.end() + 40])
            assert view["wide"] == [], (page.name, view["wide"])  # wide tables scroll in a box
            assert view["page"] <= 1, page.name  # the page itself never scrolls sideways
            for link in view["links"]:
                if link.startswith("#"):
                    continue
                assert not urlsplit(link).scheme and not link.startswith("/"), (page.name, link)
                target = (page.parent / unquote(link.split("#")[0])).resolve()
                assert target.is_relative_to(folder.resolve()), (page.name, link)
                assert target.is_file(), (page.name, link)
    finally:
        safefs.rmtree(shown)
    up = [number(c) for c in sort["up"] if c[0] != "–"]
    down = [number(c) for c in sort["down"] if c[0] != "–"]
    assert up == sorted(up) and down == sorted(down, reverse=True) and len(up) >= 4
