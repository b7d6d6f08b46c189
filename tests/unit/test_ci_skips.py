"""Under CI=true a skipped test fails the run (conftest.py's hook,
support.needs.skip_is_failure)."""

from __future__ import annotations

import shutil

from support.paths import SUPPORT, TESTS

pytest_plugins = ["pytester"]

CASES = '''
import pytest

def test_runs():
    assert True

def test_skips():
    pytest.skip("a part is missing")

@pytest.mark.skipif(True, reason="not root")
def test_marked():
    pass

@pytest.mark.xfail(reason="known")
def test_expected_failure():
    assert False
'''


def _run(pytester, monkeypatch, ci: str | None):
    shutil.copy(TESTS / "conftest.py", pytester.path)
    shutil.copytree(SUPPORT, pytester.path / "support",  # what conftest.py imports
                    ignore=shutil.ignore_patterns("__pycache__"))
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    pytester.makepyfile(test_cases=CASES)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rA")


def test_under_ci_a_skip_fails_and_names_why(pytester, monkeypatch):
    result = _run(pytester, monkeypatch, "true")
    # a skip in the test's body fails the test; a skip mark fails its setup (an error)
    result.assert_outcomes(passed=1, failed=1, errors=1, xfailed=1)
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*skipped under CI=true*a part is missing*",
                                 "*skipped under CI=true*not root*"])


def test_outside_ci_a_skip_stays_a_skip(pytester, monkeypatch):
    result = _run(pytester, monkeypatch, None)
    result.assert_outcomes(passed=1, skipped=2, xfailed=1)
