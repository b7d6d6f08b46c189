"""What a test needs from `make setup`, and what happens without it.

On a developer's machine a missing part skips the test with the reason. In CI
(CI=true) it fails it: a green run that ran no end-to-end test is a defect, not
a pass.
"""

from __future__ import annotations

import os

import pytest

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def need(problem: str | None) -> None:
    """Skip (or in CI fail) the calling test when `problem` says what is missing."""
    if problem:
        if IN_CI:
            pytest.fail(f"{problem} (CI=true: end-to-end tests must run, not skip)",
                        pytrace=False)
        pytest.skip(problem)


def need_root() -> None:
    need(None if os.geteuid() == 0 else "needs root (namespaces, Mahimahi, chown)")


def skip_is_failure(report) -> None:
    """Turn a skipped test report into a failed one (the CI hook in conftest.py), naming
    why it skipped; an expected failure (xfail) stays as it is."""
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = f"skipped under CI=true ({reason}): in CI every test must run"


def need_firefox() -> None:
    """Firefox's parts (Firefox ESR, certutil, geckodriver, Browsertime) and root."""
    from testbed.host import firefox
    from testbed.measure import browsertime
    need(browsertime.missing())
    need(firefox.missing())
    need_root()


def needs_parts() -> None:
    """A campaign's parts: Browsertime installed and the protocol settings loadable."""
    from testbed.campaign.plan import settings
    from testbed.errors import TestbedError
    from testbed.measure import browsertime
    need(browsertime.missing())
    try:
        settings.load("tcp")
    except TestbedError as e:
        need(str(e))
