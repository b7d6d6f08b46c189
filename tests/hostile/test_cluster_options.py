"""Hostile cluster options of `testbed run`, `testbed worker` and `testbed cluster
certs`: worker counts that are no count or would start a machine's worth of
processes, a scheduler given with local workers, a scheduler over plain tcp://
(anyone reaching it could run code as root on the workers), credential files that
are missing, broken, another cluster's, a symlink to a host secret or in a folder
others may write.

Every case: exit 2, one line naming the option and what was expected, nothing
written (no cluster is started, no results folder made).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.hostile_harness import Case, Host, run_case

from testbed.campaign.cluster import credentials

CAMPAIGN = 'sites = ["local-news"]\nnetworks = ["dsl"]\nprotocols = ["tcp"]\nruns = 1\n'
RUN = ["run", "{dir}/c.toml", "--out", "{dir}/out"]


def C(name: str, extra: list[str], expect: list[str], prepare=None) -> Case:
    return Case(name, [*RUN, *extra], expect, {"c.toml": CAMPAIGN}, prepare=prepare)


CASES = [
    C("cluster: --workers not a number", ["--workers", "two"],
      ["--workers", "expected a whole number from 1 to 64", "'two'"]),
    C("cluster: --workers 0", ["--workers", "0"], ["--workers", "expected a whole number"]),
    C("cluster: --workers negative", ["--workers", "-3"], ["--workers", "'-3'"]),
    C("cluster: --workers a machine's worth", ["--workers", "100000"],
      ["--workers", "from 1 to 64"]),
    C("cluster: --scheduler and --workers", ["--scheduler", "tls://127.0.0.1:1",
                                             "--workers", "2"],
      ["--scheduler, --workers", "expected one of them"]),
    C("cluster: --scheduler empty", ["--scheduler", " "],
      ["--scheduler", "expected a scheduler address"]),
    C("cluster: --scheduler over plain tcp", ["--scheduler", "tcp://127.0.0.1:1"],
      ["--scheduler tcp://127.0.0.1:1: expected tls://HOST:PORT", "testbed cluster certs"]),
    C("cluster: --scheduler without a scheme", ["--scheduler", "127.0.0.1:8786"],
      ["--scheduler 127.0.0.1:8786: expected tls://HOST:PORT"]),
    C("cluster: --tls without --scheduler", ["--workers", "2", "--tls", "{dir}"],
      ["--tls: expected with --scheduler only"]),
    C("cluster: --tls folder missing", ["--scheduler", "tls://127.0.0.1:1",
                                        "--tls", "{dir}/nothing"],
      ["--tls {dir}/nothing/ca.pem: cannot open"]),
]


def _creds(d: Path) -> Path:
    (d / "private").mkdir(mode=0o700)
    return credentials.make(d / "private" / "c", ["coordinator", "worker-1"])


def key_to_secret(d: Path, host: Host) -> None:
    key = _creds(d) / "coordinator" / "key.pem"
    key.unlink()
    key.symlink_to(host.secret)


def other_ca(d: Path, host: Host) -> None:
    c = _creds(d)
    (d / "other").mkdir(mode=0o700)
    theirs = credentials.make(d / "other" / "c", ["worker-1"])
    (c / "worker-1" / "cert.pem").write_bytes((theirs / "worker-1" / "cert.pem").read_bytes())


def writable_folder(d: Path, host: Host) -> None:
    os.chmod(_creds(d) / "worker-1", 0o777)


def readable_key(d: Path, host: Host) -> None:
    os.chmod(_creds(d) / "coordinator" / "key.pem", 0o644)


def existing(d: Path, host: Host) -> None:
    (d / "private").mkdir(mode=0o700)
    (d / "private" / "c").mkdir(mode=0o700)


CREDS = "{dir}/private/c"
WORKER = ["worker", "tls://127.0.0.1:1", "--network", "none", "--tls", f"{CREDS}/worker-1"]
CASES += [
    C("cluster: --tls key a symlink to a host secret",
      ["--scheduler", "tls://127.0.0.1:1", "--tls", f"{CREDS}/coordinator"],
      [f"{CREDS}/coordinator/key.pem is a symlink"], key_to_secret),
    C("cluster: --tls key readable by others",
      ["--scheduler", "tls://127.0.0.1:1", "--tls", f"{CREDS}/coordinator"],
      [f"{CREDS}/coordinator/key.pem: mode 0644, expected 0600"], readable_key),
    Case("worker: plain tcp", ["worker", "tcp://127.0.0.1:8786"],
         ["SCHEDULER_ADDRESS tcp://127.0.0.1:8786: expected tls://HOST:PORT"]),
    Case("worker: no credentials", ["worker", "tls://127.0.0.1:8786"],
         ["--tls: expected the folder of this machine's credentials"]),
    Case("worker: certificate of another CA", WORKER,
         [f"--tls {CREDS}/worker-1/cert.pem: expected a PEM certificate signed by the CA"],
         prepare=other_ca),
    Case("worker: credentials in a folder others may write", WORKER,
         [f"{CREDS}/worker-1", "writable by the testbed user"], prepare=writable_folder),
    Case("certs: --out exists", ["cluster", "certs", "--out", CREDS],
         [f"--out {CREDS}: expected a new folder"], prepare=existing),
    Case("certs: a name taken", ["cluster", "certs", "--out", "{dir}/c", "--name", "scheduler"],
         ["--name 'scheduler': expected letters, digits"]),
    Case("certs: a name with a slash", ["cluster", "certs", "--out", "{dir}/c", "--name", "../x"],
         ["--name '../x'"]),
    Case("certs: --workers 0", ["cluster", "certs", "--out", "{dir}/c", "--workers", "0"],
         ["--workers: expected a whole number from 1 to 64"]),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bad_cluster_option(case: Case, tmp_path: Path):
    run_case(case, tmp_path)
