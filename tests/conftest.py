"""Shared test setup: e2e tests need root and the installed parts."""

from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(config, items):
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="end-to-end tests need root (namespaces, Mahimahi)")
    for item in items:
        if "e2e" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _release_run_state():
    """Each test gets its own run state folder, removed afterwards."""
    yield
    from testbed import runstate

    runstate.release()


@pytest.fixture(scope="session", autouse=True)
def _nothing_left_behind():
    """After the whole session: no namespace, process, rule or file the testbed made."""
    yield
    if os.geteuid() != 0:
        return
    import time

    from testbed import leftovers, runstate

    runstate.release()
    found = leftovers.find()
    for _ in range(20):  # processes may still be exiting
        if not found:
            break
        time.sleep(0.25)
        found = leftovers.find()
    assert not found, f"the tests left behind: {found}"
