"""`testbed record --list` for real: three pages of the local test site (served in a
namespace this test makes, as tests/e2e/test_record_e2e.py does), one malformed line and
one unreachable host; a rerun skips what is recorded; --force records again."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import SITE, TESTBED

from testbed.formats import recording

sys.path.insert(0, str(SITE))  # the site's modules are scripts too
import sitegen
from harness import LocalSite

pytestmark = pytest.mark.e2e

SPEC = sitegen.TEST_SITE
DEAD_IP = "10.77.0.9"  # exists in the namespace, nothing listens on it

LIST = f"""# three pages of the test site, one bad line, one host nobody answers on
https://{SPEC.www}/ news
https://{SPEC.static}/css/site.css css
htp:/not-a-url
https://{SPEC.www}/favicon.ico icon
https://dead.site.test/ dead
"""


def run_list(site: LocalSite, listing: Path, out: Path, *extra: str):
    argv = [str(TESTBED), "record", "--list", str(listing), "--out", str(out), "--loads", "1",
            "--timeout", "20", *site.record_args(), "--resolve", f"dead.site.test={DEAD_IP}",
            *extra]
    cp = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=600)
    print(cp.stdout, cp.stderr)
    table = [dict(kv.split(": ", 1) for kv in line.split("\t"))
             for line in cp.stdout.splitlines() if line.startswith("line: ")]
    reported = [line for line in cp.stderr.splitlines()
                if line.startswith(f"{listing}:") and line.split(":")[1].isdigit()]
    return cp, {r["line"]: r for r in table}, reported


def test_a_list_records_each_site_reports_each_failure_and_a_rerun_skips(tmp_path):
    listing, out = tmp_path / "sites.txt", tmp_path / "recs"
    listing.write_text(LIST)
    with LocalSite(SPEC, promo="rotate") as site:
        site.ns.add_address(DEAD_IP)
        cp, table, reported = run_list(site, listing, out)
        assert cp.returncode == 1, cp.stderr
        assert [line.split(":")[1] for line in reported] == ["4", "6"], reported
        assert "htp:/not-a-url" in reported[0] and "http:// or https://" in reported[0]
        assert "dead.site.test" in reported[1] and "10.77.0.9" in reported[1], reported[1]
        assert f"{listing}: 2 of 5 lines failed (lines 4, 6)" in cp.stderr
        assert {k: r["status"] for k, r in table.items()} == {
            "2": "recorded", "3": "recorded", "4": "bad line", "5": "recorded", "6": "failed"}
        assert [line for line in cp.stdout.splitlines() if line.startswith("site ")] == [
            line for line in cp.stdout.splitlines() if " ETA " in line]
        assert sorted(p.name for p in out.iterdir()) == ["css", "icon", "news"]
        news = recording.load(out / "news")
        assert news.url == f"https://{SPEC.www}/" and news.loads == 1
        assert table["2"]["requests"] == str(len(news.exchanges))
        assert table["2"]["origins"] == str(len(news.origins))
        stamps = {p.name: (p / "manifest.json").stat().st_mtime_ns for p in out.iterdir()}

        cp, table, reported = run_list(site, listing, out)
        assert cp.returncode == 1, cp.stderr
        assert [line.split(":")[1] for line in reported] == ["4", "6"]
        assert {k: r["status"] for k, r in table.items() if k in "235"} == {
            "2": "skipped", "3": "skipped", "5": "skipped"}
        assert {p.name: (p / "manifest.json").stat().st_mtime_ns for p in out.iterdir()} \
            == stamps

        one = tmp_path / "one.txt"
        one.write_text(f"https://{SPEC.www}/favicon.ico icon\n")
        cp, table, reported = run_list(site, one, out, "--force")
        assert cp.returncode == 0 and reported == [], cp.stderr
        assert table["1"]["status"] == "recorded"
        assert (out / "icon/manifest.json").stat().st_mtime_ns != stamps["icon"]
        assert sorted(p.name for p in out.iterdir()) == ["css", "icon", "news"]  # no staging
