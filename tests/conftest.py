"""Shared test setup: e2e tests need root and the installed parts."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from support.needs import IN_CI, skip_is_failure

pytest_plugins = ["support.http3", "support.smoke"]
"""Fixtures several test files share, defined once in the helpers package and found by
name like conftest's own: the HTTP/3 servers' `site` and `tls`; `smoke_campaign`, the
one real campaign several end-to-end tests read."""


def pytest_runtest_setup(item):
    """End-to-end tests need root: skipped without it, failed in CI (see support/needs.py)."""
    if "e2e" in item.keywords and os.geteuid() != 0:
        from support.needs import need

        need("end-to-end tests need root (namespaces, Mahimahi)")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """With CI=true a skipped test fails the run: a green CI has run every test."""
    report = yield
    if IN_CI:
        skip_is_failure(report)
    return report


@pytest.fixture(autouse=True)
def _release_run_state():
    """Each test gets its own run state folder, removed afterwards."""
    yield
    from testbed.host import runstate

    runstate.release()


@pytest.fixture(scope="session", autouse=True)
def _nothing_left_behind():
    """After the whole session: no namespace, process, rule or file the testbed made."""
    yield
    if os.geteuid() != 0:
        return
    import time

    from testbed.host import runstate
    from testbed.host.cleanup import leftovers

    runstate.release()
    found = leftovers()
    for _ in range(20):  # processes may still be exiting
        if not found:
            break
        time.sleep(0.25)
        found = leftovers()
    assert not found, f"the tests left behind: {found}"


@pytest.fixture
def bundled_only(tmp_path, monkeypatch):
    """The checkout's place in the recordings search path holds the bundled recordings
    only, whatever the checkout holds besides (`make corpus` adds recordings/corpus/):
    a copy of them in a folder of the test's own. Yields that folder."""
    import shutil

    from testbed.formats import recording_search
    from testbed.host import paths

    folder = tmp_path / "checkout-recordings"
    for name in ("local-news", "gallery"):
        shutil.copytree(paths.RECORDINGS_DIR / name, folder / name)
    monkeypatch.setattr(recording_search, "RECORDINGS_DIR", folder)
    return folder


@pytest.fixture
def readable_tmp():
    """A temporary folder the testbed user can read (pytest's tmp_path is root's alone):
    for what the servers, shells and browsers read as that user."""
    d = Path(tempfile.mkdtemp(prefix="tb-test-"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)
