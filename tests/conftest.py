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
