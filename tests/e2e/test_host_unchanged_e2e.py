"""Everything the network validation changes lives in namespaces it owns: the host's
net.* sysctls and qdiscs are the same before and after it. (`validate protocols` is held
to the same in test_quic_knobs_e2e.py, which runs it anyway.)"""

from __future__ import annotations

import json

import pytest
from support.host_state import assert_unchanged, host_state
from support.paths import run_testbed

pytestmark = pytest.mark.e2e


def test_host_sysctls_and_qdiscs_unchanged():
    before = host_state()
    assert before["sysctl"].count("\n") > 100
    net = run_testbed("validate", "network", "dsl", "--probes", "100", "--starts", "1",
                      "--json", timeout=900)
    # The validation measured every row of the profile through its namespaces (exit 1
    # with every row measured: a row out of tolerance on a busy machine, which does not
    # weaken this test; a run that stopped early has rows without an observed value, or
    # no JSON at all)
    assert net.returncode in (0, 1), net.stdout[-3000:] + net.stderr[-2000:]
    doc = json.loads(net.stdout)
    rows = [r for p in doc["profiles"] for r in p["rows"]]
    assert [p["profile"] for p in doc["profiles"]] == ["dsl"]
    assert any(r["name"].startswith("min RTT") for r in rows), rows
    unmeasured = [r["name"] for r in rows if r["observed"] in ("", None, "-")]
    assert not unmeasured, (unmeasured, net.stderr[-2000:])
    assert net.returncode == 0 or not doc["ok"], doc
    assert_unchanged(before, host_state())
