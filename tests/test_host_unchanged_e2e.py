"""Everything the network and protocol validations change lives in namespaces they own:
the host's net.* sysctls and qdiscs are the same before and after both commands."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_quic_knobs_e2e import rows
from test_validate_judge import ALT_SVC

pytestmark = pytest.mark.e2e

# Counters that move with any traffic on the host, whoever makes it.
VOLATILE = re.compile(r"^net\.netfilter\.nf_conntrack_count\b")


def host_state() -> dict[str, str]:
    sysctls = subprocess.run(["sysctl", "-a"], capture_output=True, text=True, check=False).stdout
    net = sorted(line for line in sysctls.splitlines()
                 if line.startswith("net.") and not VOLATILE.match(line))
    qdiscs = subprocess.run(["tc", "qdisc", "show"], capture_output=True, text=True,
                            check=True).stdout
    return {"sysctl": "\n".join(net), "qdisc": qdiscs}


def run_testbed(*args: str, timeout: float) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).parent / "testbed"
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=timeout,
                          check=False, env={**os.environ, "COLUMNS": "200"})


def test_host_sysctls_and_qdiscs_unchanged():
    before = host_state()
    assert before["sysctl"].count("\n") > 100
    net = run_testbed("validate", "network", "none", "dsl", "--probes", "100", "--starts", "1",
                  timeout=900)
    assert net.returncode in (0, 1), net.stderr[-2000:]
    assert "min RTT" in net.stdout
    proto = run_testbed("validate", "protocols", "tcp-plus", "quic", "--network", "dsl",
                    timeout=900)
    assert proto.returncode in (0, 1), proto.stderr[-2000:]
    assert "initial window" in proto.stdout
    # what the page heard of HTTP/3: nothing over TCP, h3 on its origin over QUIC
    tcp, quic = rows(proto.stdout, "tcp-plus"), rows(proto.stdout, "quic")
    assert tcp[ALT_SVC] == ("none", "yes"), tcp[ALT_SVC]
    assert quic[ALT_SVC][1] == "yes", quic[ALT_SVC]
    after = host_state()
    assert after["qdisc"] == before["qdisc"]
    changed = set(after["sysctl"].splitlines()) ^ set(before["sysctl"].splitlines())
    assert not changed, sorted(changed)
