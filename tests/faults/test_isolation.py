"""Isolation: a campaign changes nothing on the host outside what it creates.

One small campaign (local-news x dsl x tcp and quic x 1 run), watched while it
runs:
- the host's net.* sysctls and its qdiscs are the same before and after;
- Chromium runs as the unprivileged testbed user with its sandbox: no
  --no-sandbox anywhere, zygotes, and renderers under seccomp-bpf in user, PID
  and network namespaces of their own;
- the CA key is root's alone, and no system trust store (nor the testbed
  user's NSS database) changes or holds a certificate of ours;
- nothing its processes used in /tmp is left there (Chromium's profiles live
  in the run's state folder).
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import sqlite3
import stat
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cryptography import x509
from support.host_state import host_state
from support.needs import need
from support.paths import ROOT, TESTBED

from testbed.host.runstate import USER
from testbed.replay import certs

CHROMIUM = "/usr/lib/chromium/chromium"

pytestmark = [pytest.mark.e2e, pytest.mark.faults]


def trust_stores() -> list[Path]:
    home = Path(pwd.getpwnam(USER).pw_dir)
    return [Path("/etc/ssl/certs"), Path("/usr/local/share/ca-certificates"),
            Path("/usr/share/ca-certificates"), Path("/etc/ca-certificates.conf"),
            home / ".pki/nssdb", Path("/root/.pki/nssdb"), Path("/etc/pki/nssdb")]


def _entries(root: Path) -> list[Path]:
    if not root.is_dir() or root.is_symlink():
        return [root]
    return [root, *(Path(d) / n for d, dirs, files in os.walk(root) for n in dirs + files)]


def listing(roots: list[Path]) -> dict[str, str]:
    """Every entry under roots: its type, mode, owner and content hash (or link target)."""
    out = {}
    for root in roots:
        if not os.path.lexists(root):
            out[str(root)] = "absent"
            continue
        for p in _entries(root):
            st = p.lstat()
            what = (f"-> {os.readlink(p)}" if p.is_symlink()
                    else hashlib.sha256(p.read_bytes()).hexdigest() if stat.S_ISREG(st.st_mode)
                    else "dir")
            out[str(p)] = f"{stat.filemode(st.st_mode)} {st.st_uid}:{st.st_gid} {what}"
    return out


def ours(roots: list[Path], ca: x509.Certificate) -> list[str]:
    """Files under roots holding our CA or a certificate it issued (PEM, or DER as in
    NSS databases)."""
    name = ca.subject.public_bytes()
    found = []
    for root in roots:
        for p in _entries(root) if os.path.lexists(root) else []:
            if not p.is_file():
                continue
            data = p.read_bytes()
            hit = name in data
            if not hit and b"-----BEGIN CERTIFICATE-----" in data:
                try:
                    pems = x509.load_pem_x509_certificates(data)
                except ValueError:
                    pems = []
                hit = any(ca.subject in (c.subject, c.issuer) for c in pems)
            if hit:
                found.append(str(p))
    return found


@dataclass
class Proc:
    """A process of the campaign as last seen."""

    pid: int
    args: list[str]
    """Its command line split at spaces too (Chromium's helpers rewrite theirs as
    one string)."""
    exe: str
    status: dict[str, str]
    ns: dict[str, str]
    tmp: set[str]
    """Entries of /tmp its command line or open files named."""
    seen: int = 1


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        kids = children.get(todo.pop(), [])
        out += kids
        todo += kids
    return out


def _look(pid: int) -> Proc | None:
    d = Path(f"/proc/{pid}")
    try:
        argv = [a.decode(errors="replace") for a in (d / "cmdline").read_bytes().split(b"\0") if a]
        exe = os.readlink(d / "exe")
        status = dict(line.split(":\t", 1) for line in (d / "status").read_text().splitlines()
                      if ":\t" in line)
        ns = {k: os.readlink(d / "ns" / k) for k in ("user", "pid", "net")}
    except OSError:
        return None
    args = " ".join(argv).split()
    names = " ".join(args).replace("=", " ").replace('"', " ").split()
    for fd in _listdir(d / "fd"):
        try:
            names.append(os.readlink(d / "fd" / fd))
        except OSError:
            continue
    tmp = {"/tmp/" + n.split("/")[2].removesuffix(" (deleted)") for n in names
           if n.startswith("/tmp/") and len(n) > 5}
    return Proc(pid, args, exe, status, ns, tmp - {"/tmp/.X11-unix"})


def _listdir(d: Path) -> list[str]:
    try:
        return os.listdir(d)
    except OSError:
        return []


@dataclass
class Observed:
    returncode: int
    stderr: str
    rows: list[dict]
    host_before: dict
    host_after: dict
    trust_before: dict
    trust_after: dict
    procs: dict[int, Proc] = field(default_factory=dict)
    mine: Path = Path("/nonexistent")
    """The tests' own temporary folder (holds the results)."""


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> Observed:
    from testbed.measure import browsertime
    problem = browsertime.missing()
    need(problem)
    tmp = tmp_path_factory.mktemp("isolation")
    toml = tmp / "isolation.toml"
    toml.write_text('sites = ["local-news"]\nnetworks = ["dsl"]\nprotocols = ["tcp", "quic"]\n'
                    'runs = 1\nretries = 0\ntimeout_s = 60\nseed = 5\n')
    out = tmp / "results"
    host_before, trust_before = host_state(), listing(trust_stores())
    procs: dict[int, Proc] = {}
    runner = subprocess.Popen([TESTBED, "run", str(toml), "--out", str(out)], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 600
        while runner.poll() is None and time.monotonic() < deadline:
            for pid in _descendants(runner.pid):
                p = _look(pid)
                if p is not None:
                    if pid in procs:
                        p.seen += procs[pid].seen
                        p.tmp |= procs[pid].tmp
                    procs[pid] = p
            time.sleep(0.1)
        _, err = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    db = sqlite3.connect(out / "trials.sqlite")
    db.row_factory = sqlite3.Row
    try:
        rows = [dict(r) for r in db.execute("SELECT * FROM trials")]
    finally:
        db.close()
    return Observed(runner.returncode, err, rows, host_before, host_state(), trust_before,
                    listing(trust_stores()), procs, tmp_path_factory.getbasetemp())


def test_campaign_ran(campaign):
    assert campaign.returncode == 0, campaign.stderr[-3000:]
    assert sorted((r["setting"], r["status"]) for r in campaign.rows) == [
        ("quic", "ok"), ("tcp", "ok")], campaign.rows


def test_host_sysctls_and_qdiscs_unchanged_by_a_campaign(campaign):
    assert campaign.host_before["sysctl"].count("\n") > 100
    assert campaign.host_after["qdisc"] == campaign.host_before["qdisc"]
    changed = (set(campaign.host_after["sysctl"].splitlines())
               ^ set(campaign.host_before["sysctl"].splitlines()))
    assert not changed, sorted(changed)


def test_chromium_runs_as_the_testbed_user_with_its_sandbox(campaign):
    uid, gid = pwd.getpwnam(USER).pw_uid, pwd.getpwnam(USER).pw_gid
    everything = list(campaign.procs.values())
    assert not [p.args for p in everything if "--no-sandbox" in p.args]
    # Chromium that loads pages (the manifest asks `chromium --version` as root)
    chromium = [p for p in everything if p.exe == CHROMIUM and "--version" not in p.args]
    kinds = {next((a[7:] for a in p.args if a.startswith("--type=")), "browser")
             for p in chromium}
    assert {"browser", "zygote", "renderer"} <= kinds, kinds
    for p in chromium:  # real, effective, saved and filesystem ids
        assert p.status["Uid"].split() == [str(uid)] * 4, (p.pid, p.args[:2], p.status["Uid"])
        assert p.status["Gid"].split() == [str(gid)] * 4, (p.pid, p.args[:2], p.status["Gid"])
    browsers = [p for p in chromium if not any(a.startswith("--type=") for a in p.args)]
    assert len(browsers) == 2  # one browser per trial
    host_user_ns = {b.ns["user"] for b in browsers}
    host_pid_ns = {b.ns["pid"] for b in browsers}
    browser_net_ns = {b.ns["net"] for b in browsers}
    # renderers that lived long enough to finish starting (seen in 3+ polls)
    renderers = [p for p in chromium if "--type=renderer" in p.args and p.seen >= 3]
    assert renderers
    for r in renderers:
        assert r.status["Seccomp"] == "2", (r.pid, r.status["Seccomp"])  # seccomp-bpf filter
        assert r.status["NoNewPrivs"] == "1"
        assert r.ns["user"] not in host_user_ns
        assert r.ns["pid"] not in host_pid_ns
        assert r.ns["net"] not in browser_net_ns  # no network of its own


def test_the_ca_key_is_root_only(campaign):
    key = certs.CA_DIR / "ca.key"
    st, dst = key.stat(), certs.CA_DIR.stat()
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o600)
    assert (dst.st_uid, stat.S_IMODE(dst.st_mode)) == (0, 0o700)
    cp = subprocess.run(["setpriv", "--reuid", USER, "--regid", USER, "--init-groups",
                         "test", "-r", str(key)], check=False)
    assert cp.returncode == 1  # the testbed user cannot read it


def test_nothing_is_added_to_any_trust_store(campaign):
    before, after = campaign.trust_before, campaign.trust_after
    assert len(before) > 100  # the system store was found
    changed = {k: (before.get(k), after.get(k)) for k in before.keys() | after.keys()
               if before.get(k) != after.get(k)}
    assert not changed, json.dumps(changed, indent=1)[:3000]
    ca = x509.load_pem_x509_certificate((certs.CA_DIR / "ca.pem").read_bytes())
    assert ours([certs.CA_DIR], ca) == [str(certs.CA_DIR / "ca.pem")]  # the check finds ours
    assert ours(trust_stores(), ca) == []


def test_nothing_is_left_in_tmp(campaign):
    used = set().union(*(p.tmp for p in campaign.procs.values()))
    # The test's own folder and a checkout that lives in /tmp are not the campaign's.
    left = [t for t in used if os.path.lexists(t)
            and not any(p.is_relative_to(t) for p in (campaign.mine, ROOT))]
    assert not left, sorted(used)
