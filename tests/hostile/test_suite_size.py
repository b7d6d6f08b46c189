"""The hostile-input suite covers every family with enough cases: counted as pytest
collects them (each a `case` parameter of a test in this folder), no module imported
by hand."""

import subprocess
import sys

from support.paths import ROOT

COUNT = """
import sys

import pytest


class Count:
    cases = 0

    def pytest_collection_finish(self, session):
        Count.cases = sum(type(getattr(item, "callspec", None) and item.callspec.params.get(
            "case")).__name__ == "Case" for item in session.items)


status = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", sys.argv[1]],
                     plugins=[Count()])
print(f"cases={Count.cases}")
sys.exit(status)
"""


def test_at_least_forty_hostile_cases():
    cp = subprocess.run([sys.executable, "-c", COUNT, "tests/hostile"], cwd=ROOT,
                        capture_output=True, text=True, timeout=300, check=False)
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-2000:]
    cases = int(cp.stdout.strip().splitlines()[-1].removeprefix("cases="))
    assert cases >= 40, cases
