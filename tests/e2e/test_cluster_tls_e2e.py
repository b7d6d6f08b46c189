"""End to end: a campaign on a local Dask cluster of two workers, through the real
replay, shells, Chromium and Browsertime, attacked from outside and from inside.

One campaign (to keep the machine's time short) proves both:
- while it runs, a process of an unprivileged user (nobody) finds every TCP port the
  campaign's processes listen on and tries to take the cluster over: a Dask client over
  tcp:// and over tls:// (with a certificate of its own) on each port, running a function
  on the workers; a plain HTTP GET of Dask's pages. Every attempt fails, every port is on
  127.0.0.1 only, the campaign's credentials are in a root-only folder while it runs and
  gone afterwards;
- then one worker is SIGKILLed while it measures a block: its block runs again on a
  worker, every trial is stored once and ok, both workers measured, every trial's files
  are present, and nothing of the killed worker's run (its namespaces) is left.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from support.cluster import (
    FILES,
    dask_workers,
    descendants,
    running_campaign,
    stored_count,
    two_setting_campaign,
    wait_for,
)
from support.needs import needs_parts
from support.paths import ROOT, TESTBED

from testbed.host import runstate

PROBE_TIMEOUT_S = 600
"""The longest the unprivileged probe of all ports may take."""

pytestmark = pytest.mark.e2e

CAMPAIGN = two_setting_campaign(15, 11)
TRIALS = 30
"""Enough that trials remain to measure after the probe, when a worker is killed."""

PROBE = r'''import asyncio, json, os, sys, urllib.request
from distributed import Client, Security

async def attempt(address, security):
    try:
        c = await asyncio.wait_for(Client(address, asynchronous=True, timeout="2s",
                                          security=security), 5)  # a tcp:// client of an HTTP port waits
    except BaseException as e:
        return f"refused: {type(e).__name__}: {str(e)[:120]}"
    try:
        return "RAN: " + json.dumps(await c.run(os.getuid))
    finally:
        await c.close()

def http(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/info/main/workers.html",
                                    timeout=3) as r:
            return f"SERVED {r.status}"
    except BaseException as e:
        return f"refused: {type(e).__name__}: {str(e)[:120]}"

async def probe(port, stranger):
    return {"tcp": await attempt(f"tcp://127.0.0.1:{port}", None),
            "tls": await attempt(f"tls://127.0.0.1:{port}", stranger),
            "http": await asyncio.to_thread(http, port)}

async def main(ports):
    stranger = Security.temporary()  # a certificate of its own CA
    got = await asyncio.gather(*(probe(p, stranger) for p in ports))
    return dict(zip(ports, got))

print(json.dumps(asyncio.run(main(sys.argv[1:]))))  # all ports at once: the campaign is short
'''


def _netns(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def listening(coordinator: int, recursive: bool = True) -> set[tuple[str, int]]:
    """(address, port) of every TCP listener of the coordinator and its descendants in
    the host's network namespace (the replay's servers live in namespaces of their own)."""
    host = _netns(os.getpid())
    found = set()
    try:
        procs = [psutil.Process(coordinator)]
        procs += procs[0].children(recursive=True) if recursive else []
    except psutil.NoSuchProcess:
        return found
    for p in procs:
        if _netns(p.pid) != host:
            continue
        try:
            conns = p.net_connections("tcp")
        except psutil.NoSuchProcess:
            continue
        found |= {(c.laddr.ip, c.laddr.port) for c in conns if c.status == psutil.CONN_LISTEN}
    return found


def cluster_up(coordinator: int) -> set[tuple[str, int]] | None:
    """Every listener, once the scheduler and the two nannies (in the coordinator) and
    both worker processes listen; None before."""
    workers = dask_workers(coordinator)
    if len(workers) < 2 or any(not listening(w, recursive=False) for w in workers):
        return None
    if len(listening(coordinator, recursive=False)) < 3:
        return None
    return listening(coordinator)


def test_an_unprivileged_user_cannot_use_the_cluster_and_a_killed_worker_loses_nothing(
        tmp_path):
    needs_parts()
    out = tmp_path / "out"
    db = out / "trials.sqlite"
    with running_campaign(tmp_path, CAMPAIGN, "--workers", "2") as p:
        creds = runstate.STATE_ROOT / str(p.pid) / "cluster-tls"
        ports = wait_for("the cluster's listening ports", lambda: cluster_up(p.pid), 300, p)
        mode = stat.S_IMODE(os.stat(creds).st_mode)
        probe = subprocess.run(["runuser", "-u", "nobody", "--", sys.executable, "-c", PROBE,
                                *sorted({str(port) for _, port in ports})],
                               capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                               cwd="/", check=False)
        still = listening(p.pid)  # every probed port was live throughout
        # a worker with a block in flight: Browsertime (and its browser) under it
        wait_for("2 stored trials", lambda: stored_count(db) >= 2, 600, p)
        victim = wait_for("a worker measuring a block",
                          lambda: next((w for w in dask_workers(p.pid)
                                        if len(descendants(w)) >= 3), None), 120, p)
        stored_at_kill = stored_count(db)
        os.kill(victim, signal.SIGKILL)
        p.wait(timeout=1200)
    text = (tmp_path / "run.log").read_text()
    assert p.returncode == 0, text[-3000:]
    assert probe.returncode == 0, probe.stderr[-3000:]
    answers = json.loads(probe.stdout.strip().splitlines()[-1])
    print(f"\nports probed: {sorted(ports)}")
    for port, got in sorted(answers.items()):
        print(f"  {port}: {got}")
    assert len(answers) == len({port for _, port in ports}) > 0
    assert {ip for ip, _ in ports} == {"127.0.0.1"}, ports
    assert ports <= still, f"the campaign closed {ports - still} before the probe ended"
    let_in = {port: got for port, got in answers.items()
              if any(not v.startswith("refused") for v in got.values())}
    assert let_in == {}, let_in
    assert mode == 0o700 and not creds.exists()
    # the killed worker: its block ran again, nothing lost, doubled or left behind
    assert stored_at_kill < TRIALS, stored_at_kill
    con = sqlite3.connect(db)
    rows = con.execute("SELECT trial_id, status, reason, attempt, worker FROM trials").fetchall()
    con.close()
    ids = [r[0] for r in rows]
    assert len(rows) == TRIALS and len(set(ids)) == TRIALS, len(rows)
    assert [r for r in rows if r[1] != "ok"] == [], "failed trials"
    workers = {r[4] for r in rows}
    assert len(workers) == 2 and all(w and "/" in w for w in workers), workers
    for trial_id in ids:
        assert FILES <= {f.name for f in (out / "trials" / trial_id).iterdir()}, trial_id
    left = subprocess.run(["ip", "netns", "list"], check=False, capture_output=True,
                          text=True).stdout
    assert f"tb-{victim}-" not in left, "the killed worker's namespaces are still there"


def _scheduler_address(path: Path) -> str | None:
    try:
        return json.loads(path.read_text())["address"]
    except (OSError, ValueError, KeyError):
        return None


def test_a_cluster_of_separate_processes_as_the_readme_says(tmp_path):
    """README, "On N machines", on one machine: credentials from `testbed cluster
    certs`, `dask scheduler` with TLS on 127.0.0.1, two `testbed worker` processes,
    then the smoke campaign through `testbed run --scheduler tls://...`."""
    from distributed import Client

    from testbed.campaign.cluster import credentials

    needs_parts()
    (tmp_path / "priv").mkdir(mode=0o700)
    certs = tmp_path / "priv" / "cluster"
    subprocess.run([TESTBED, "cluster", "certs", "--out", str(certs), "--workers", "2"],
                   check=True, cwd=ROOT, timeout=60)
    s = certs / "scheduler"
    info = tmp_path / "scheduler.json"
    procs: list[subprocess.Popen] = []
    logs = [(tmp_path / f"{n}.log").open("w") for n in ("scheduler", "w1", "w2")]
    try:
        procs.append(subprocess.Popen(
            [str(ROOT / ".venv/bin/dask"), "scheduler", "--host", "tls://127.0.0.1", "--port",
             "0", "--no-dashboard", "--dashboard-address", "127.0.0.1:0", "--tls-ca-file", str(s / "ca.pem"), "--tls-cert",
             str(s / "cert.pem"), "--tls-key", str(s / "key.pem"), "--scheduler-file",
             str(info)], env={**os.environ, "DASK_DISTRIBUTED__SCHEDULER__HTTP__ROUTES": "[]"},
            stdout=logs[0], stderr=subprocess.STDOUT, cwd=tmp_path))
        address = wait_for("the scheduler's address", lambda: _scheduler_address(info),
                        120, procs[0])
        assert address.startswith("tls://127.0.0.1:"), address
        for i in (1, 2):
            procs.append(subprocess.Popen(
                [TESTBED, "worker", address, "--tls", str(certs / f"worker-{i}"), "--network",
                 "dsl", "--name", f"w{i}"], stdout=logs[i], stderr=subprocess.STDOUT, cwd=ROOT))
        with Client(address, timeout="30s",
                    security=credentials.load("client", certs / "coordinator")) as c:
            c.wait_for_workers(2, timeout=600)  # doctor and calibration first
            seen = c.scheduler_info(n_workers=-1)
        assert seen["address"].startswith("tls://")
        ports = set().union(*(listening(p.pid) for p in procs))
        assert len(ports) >= 4 and {ip for ip, _ in ports} == {"127.0.0.1"}, ports
        assert all(w.startswith("tls://") for w in seen["workers"]), seen["workers"]
        with pytest.raises((OSError, TimeoutError)):
            Client(address.replace("tls://", "tcp://"), timeout="3s").close()
        out = tmp_path / "out"
        cp = subprocess.run([TESTBED, "run", "profiles/campaigns/smoke.toml", "--scheduler",
                             address, "--tls", str(certs / "coordinator"), "--out", str(out)],
                            cwd=ROOT, capture_output=True, text=True, timeout=1800, check=False)
        assert cp.returncode == 0, cp.stderr[-3000:]
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(procs):
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for log in logs:
            log.close()
    con = sqlite3.connect(out / "trials.sqlite")
    rows = con.execute("SELECT status, worker FROM trials").fetchall()
    con.close()
    print(f"\nscheduler {address}; workers {sorted(seen['workers'])}; rows {rows}")
    assert len(rows) == 5 and {r[0] for r in rows} == {"ok"}, rows
