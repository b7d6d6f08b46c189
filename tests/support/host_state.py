"""The host's network state that the testbed must leave as it found it: net.* sysctls
and qdiscs."""

from __future__ import annotations

import re
import subprocess

# Counters that move with any traffic on the host, whoever makes it.
VOLATILE = re.compile(r"^net\.netfilter\.nf_conntrack_count\b")


def host_state() -> dict[str, str]:
    sysctls = subprocess.run(["sysctl", "-a"], capture_output=True, text=True, check=False).stdout
    net = sorted(line for line in sysctls.splitlines()
                 if line.startswith("net.") and not VOLATILE.match(line))
    qdiscs = subprocess.run(["tc", "qdisc", "show"], capture_output=True, text=True,
                            check=True).stdout
    return {"sysctl": "\n".join(net), "qdisc": qdiscs}


def assert_unchanged(before: dict[str, str], after: dict[str, str]) -> None:
    """The host's qdiscs and net.* sysctls are the same in both states."""
    assert after["qdisc"] == before["qdisc"]
    changed = set(after["sysctl"].splitlines()) ^ set(before["sysctl"].splitlines())
    assert not changed, sorted(changed)

