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
