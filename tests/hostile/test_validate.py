"""Hostile input to `testbed validate network|protocols|servers`.

Every value a check cannot run with is refused in one line naming the option,
before a namespace, a server or a browser starts: counts below their minimum,
sizes the servers could not hold, more file hosts than the parity check has
IPs for, a gap that is not a number, settings and profiles that do not exist,
a setting file that is the host's secret, and a --keep folder the testbed user
owns.
"""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest
from support.hostile_harness import Case, Host, run_case

USER = os.environ.get("TESTBED_USER", "testbed")
NETWORK = ["validate", "network", "dsl"]
PROTOCOLS = ["validate", "protocols"]
SERVERS = ["validate", "servers"]


def their_folder(d: Path, host: Host) -> None:
    (d / "tb").mkdir()
    pw = pwd.getpwnam(USER)
    os.chown(d / "tb", pw.pw_uid, pw.pw_gid)


def setting_linked_to_secret(d: Path, host: Host) -> None:
    (d / "p.toml").symlink_to(host.secret)


CASES = [
    Case("validate network: too few probes", [*NETWORK, "--probes", "99"],
         ["--probes", "expected at least 100, got 99"]),
    Case("validate network: no shell start", [*NETWORK, "--starts", "0"],
         ["--starts", "expected at least 1, got 0"]),
    Case("validate protocols: unknown setting", [*PROTOCOLS, "tcp", "http3"],
         ["http3", "no such profile", "profiles/protocols"]),
    Case("validate protocols: unknown network", [*PROTOCOLS, "--network", "wifi6"],
         ["wifi6", "no such profile", "profiles/networks"]),
    Case("validate protocols: a setting file that is the host's secret",
         [*PROTOCOLS, "{dir}/p.toml"], ["p.toml"], prepare=setting_linked_to_secret),
    Case("validate protocols --keep: inside a folder of the testbed user",
         [*PROTOCOLS, "tcp", "--keep", "{dir}/tb/keep"],
         ["--keep", "{dir}/tb belongs to testbed"], prepare=their_folder),
    Case("validate servers: no downloads", [*SERVERS, "--runs", "0"],
         ["--runs", "expected at least 1"]),
    Case("validate servers: more file hosts than IPs", [*SERVERS, "--runs", "500"],
         ["--runs", "do not fit", "192.0.2.100-254"]),
    Case("validate servers: an empty file", [*SERVERS, "--size", "10000", "--size", "0"],
         ["--size", "expected 1 to 100000000 bytes, got 0"]),
    Case("validate servers: a file no server could hold", [*SERVERS, "--size", "10" * 8],
         ["--size", "expected 1 to 100000000 bytes"]),
    Case("validate servers: a negative RTT", [*SERVERS, "--rtt", "-10"],
         ["--rtt", "expected 0 ms or more"]),
    Case("validate servers: no initial window", [*SERVERS, "--initial-window", "0"],
         ["--initial-window", "expected 1 to 1000 packets"]),
    Case("validate servers: a gap that is not a number", [*SERVERS, "--max-gap", "nan"],
         ["--max-gap", "expected 0 or more"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_validate(case: Case, tmp_path: Path):
    run_case(case, tmp_path)
