"""Hostile campaigns: names that mean two things, results folders that cannot be
written or are held, sizes and rates that would cost memory, settings the kernel
refuses, commands that need root.

Every case: exit 2, one line naming the file (or option) and the key, nothing
written. Mounts and lock holders a case prepares are undone after it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.hostile_harness import ROOT, Case, run_case

from testbed.campaign.plan import config
from testbed.campaign.store.store import Row, Store

NEWS = ROOT / "recordings" / "local-news"
DSL = (ROOT / "profiles/networks/dsl.toml").read_text()
TCP = (ROOT / "profiles/protocols/tcp.toml").read_text()
GOOD_PROTO = 'stack = "tcp"\ncongestion_control = "cubic"\ninitial_window_packets = 10\n' \
             'pacing = false\n'


def campaign(sites='["local-news"]', networks='["dsl"]', protocols='["tcp"]', runs=1) -> str:
    return f"sites = {sites}\nnetworks = {networks}\nprotocols = {protocols}\nruns = {runs}\n"


def net(text: str) -> dict[str, str]:
    return {"net.toml": text, "c.toml": campaign(networks='["{dir}/net.toml"]')}


def proto(text: str) -> dict[str, str]:
    return {"p.toml": text, "c.toml": campaign(protocols='["{dir}/p.toml"]')}


RUN = ["run", "{dir}/c.toml", "--out", "{dir}/out"]
HOLDERS: list[subprocess.Popen] = []
MOUNTS: list[Path] = []


def other_news(d: Path, host) -> None:
    """{dir}/local-news: a recording folder named local-news with other content."""
    copy = d / "local-news"
    copy.mkdir()
    manifest = json.loads((NEWS / "manifest.json").read_text())
    manifest["url"] = "https://www.other-news.test/"
    (copy / "manifest.json").write_text(json.dumps(manifest))
    shutil.copytree(NEWS / "bodies", copy / "bodies")


def mount_tmpfs(d: Path, size: str = "2m") -> Path:
    m = d / "fs"
    m.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(m)],
                   check=True)
    MOUNTS.append(m)
    return m


def read_only(d: Path, host) -> None:
    m = mount_tmpfs(d)
    subprocess.run(["mount", "-o", "remount,ro", str(m)], check=True)


def full(d: Path, host) -> None:
    m = mount_tmpfs(d, "1m")
    with open(m / "filler", "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass


def held(d: Path, host) -> None:
    """{dir}/out/run.lock held by another process (as a running campaign holds it)."""
    (d / "out").mkdir()
    code = ("import fcntl, os, sys, time\n"
            "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\n"
            "os.write(fd, f'{os.getpid()}\\n'.encode())\n"
            "print('held', flush=True)\n"
            "time.sleep(300)\n")
    p = subprocess.Popen([sys.executable, "-c", code, str(d / "out" / "run.lock")],
                         stdout=subprocess.PIPE, text=True)
    HOLDERS.append(p)
    assert p.stdout.readline().strip() == "held"


def measured_with_other_dsl(d: Path, host) -> None:
    """{dir}/out holds a trial measured under the label dsl from another profile."""
    out = d / "out"
    (out / "trials" / "local-news|dsl|tcp|0").mkdir(parents=True)
    (out / "manifest.json").write_text(json.dumps({"sessions": [
        {"networks": {"dsl": {"sha256": "0" * 64}}}]}))
    with Store(out / "trials.sqlite") as store:
        store.add(Row("local-news|dsl|tcp|0", "c", "local-news", "dsl", "tcp", 0, "ok", None,
                      1, "2026-01-01T00:00:00+00:00", 1.0, *[1.0] * 6, 1, 1, 0, None, 24.0, 4))


def trace_net(d: Path, host) -> None:
    (d / "slow.trace").write_text("1000\n")  # one packet a second


def C(name, files, argv, expect, **kw) -> Case:
    return Case(name, argv, expect, files, **kw)


CASES = [
    # part 4: one name, one thing
    C("campaign: two network profiles named dsl",
         {"dsl.toml": DSL.replace("min_rtt_ms = 24", "min_rtt_ms = 50"),
          "c.toml": campaign(networks='["dsl", "{dir}/dsl.toml"]')}, RUN,
         ["c.toml", "networks.1", "named dsl", "differs"]),
    C("campaign: two protocol settings named tcp",
         {"tcp.toml": TCP.replace('"cubic"', '"reno"'),
          "c.toml": campaign(protocols='["{dir}/tcp.toml", "tcp"]')}, RUN,
         ["c.toml", "protocols.1", "named tcp"]),
    C("campaign: two recordings named local-news",
         {"c.toml": campaign(sites='["local-news", "{dir}/local-news"]')}, RUN,
         ["c.toml", "sites.1", "named local-news", "{dir}/local-news", "recordings/local-news"],
         prepare=other_news),
    C("campaign: a label whose content changed under stored trials",
         {"c.toml": campaign()}, RUN, ["dsl.toml", "networks dsl", "other content"],
         prepare=measured_with_other_dsl),
    C("campaign: results folder held by another runner", {"c.toml": campaign()}, RUN,
         ["{dir}/out", "locked by testbed run pid"], prepare=held),
    # part 5: the results folder
    C("campaign: --out under a file", {"c.toml": campaign(), "f": "x\n"},
         ["run", "{dir}/c.toml", "--out", "{dir}/f/out"], ["--out", "f is a file"]),
    C("campaign: --out is a file", {"c.toml": campaign(), "f": "x\n"},
         ["run", "{dir}/c.toml", "--out", "{dir}/f"], ["--out", "{dir}/f", "is a file"]),
    C("campaign: --out on a read-only file system", {"c.toml": campaign()},
         ["run", "{dir}/c.toml", "--out", "{dir}/fs/out"], ["--out", "read-only file system"],
         prepare=read_only),
    C("campaign: --out on a full file system", {"c.toml": campaign()},
         ["run", "{dir}/c.toml", "--out", "{dir}/fs/out"], ["--out", "no space left"],
         prepare=full, may_write=True),  # the folder and its lock file fit, nothing more
    # part 5: sizes
    C("campaign: --runs 10**9", {"c.toml": campaign()}, [*RUN, "--runs", str(10**9)],
         ["--runs", "10000"]),
    C("campaign: --runs not a number", {"c.toml": campaign()}, [*RUN, "--runs", "many"],
         ["--runs", "whole number"]),
    C("campaign: --rerun-runs past the campaign's runs", {"c.toml": campaign(runs=4)},
      [*RUN, "--rerun-runs", "0-7"], ["--rerun-runs: expected run numbers from 0 to 3", "'0-7'"]),
    C("campaign: --rerun-runs not run numbers", {"c.toml": campaign()},
      [*RUN, "--rerun-runs", "0;rm"], ["--rerun-runs", "such as 0-3"]),
    C("campaign: --rerun-runs with --dry-run", {"c.toml": campaign()},
      [*RUN, "--rerun-runs", "0", "--dry-run"], ["--rerun-runs: not with --dry-run"]),
    C("campaign: a plan too large to hold",
         {"c.toml": campaign(networks='["dsl", "lte", "mss", "da2gc", "none"]',
                             protocols='["tcp", "tcp-plus", "tcp-plus-bbr", "quic", '
                                       '"quic-bbr"]', runs=10_000)}, RUN,
         ["c.toml", "key runs", str(config.MAX_TRIALS)]),
    # part 5: root
    C("campaign: run as a user", {"c.toml": campaign()}, RUN, ["testbed run", "root"],
         user="testbed"),
    C("cleanup as a user", {}, ["cleanup"], ["testbed cleanup", "root"], user="testbed"),
    C("cleanup --check as a user", {}, ["cleanup", "--check"], ["testbed cleanup", "root"],
         user="testbed"),
    # part 5: networks that cannot be built
    C("network: a rate too small for a trace",
         net("uplink_mbit = 0.0001\ndownlink_mbit = 1\n"), RUN, ["net.toml", "uplink_mbit", ">="]),
    C("network: a rate whose exact trace is too long",
         net("uplink_mbit = 1\ndownlink_mbit = 1.23456789\n"), RUN,
         ["net.toml", "downlink_mbit", "decimals"]),
    C("network: a rate whose exact trace holds millions of packets",
         net("uplink_mbit = 1\ndownlink_mbit = 9999.999\n"), RUN,
         ["net.toml", "downlink_mbit", "packets"]),
    C("network: a buffer smaller than one packet",
         net("uplink_mbit = 5\ndownlink_mbit = 25\nbuffer_ms = 1\n"), RUN,
         ["net.toml", "buffer_ms", "one 1500-byte packet"]),
    C("network: a buffer smaller than one packet of a trace",
         net('uplink_trace = "slow.trace"\ndownlink_trace = "slow.trace"\nbuffer_ms = 50\n'),
         RUN, ["net.toml", "buffer_ms", "one 1500-byte packet"], prepare=trace_net),
    # part 5: settings the kernel refuses (checked before the first trial)
    C("protocol: tcp_wmem beyond the kernel's range",
         proto(GOOD_PROTO + "tcp_wmem = [4096, 16384, 1099511627776]\n"), RUN,
         ["p.toml", "tcp_wmem", "kernel refuses"]),
    C("protocol: tcp_rmem beyond the kernel's range",
         proto(GOOD_PROTO + "tcp_rmem = [4096, 131072, 4294967296]\n"), RUN,
         ["p.toml", "tcp_rmem", "kernel refuses"]),
    C("protocol: a congestion control the testbed does not know",
         proto(GOOD_PROTO.replace('"cubic"', '"vegas"')), RUN, ["p.toml", "congestion_control"]),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_hostile_campaign(case, tmp_path):
    try:
        cp = run_case(case, tmp_path)
        if case.prepare is held:
            assert f"pid {HOLDERS[-1].pid}" in cp.stderr
    finally:
        while HOLDERS:
            p = HOLDERS.pop()
            p.kill()
            p.wait()
        while MOUNTS:
            subprocess.run(["umount", "-l", str(MOUNTS.pop())], check=False)
        shutil.rmtree(tmp_path / "case", ignore_errors=True)


def test_one_site_by_name_path_and_symlink_is_one_label(tmp_path):
    (tmp_path / "news").symlink_to(NEWS)
    (tmp_path / "c.toml").write_text(campaign(
        sites=f'["local-news", "{NEWS}", "{tmp_path}/news"]',
        networks=f'["dsl", "{ROOT}/profiles/networks/dsl.toml"]'))
    entries = config.resolve(config.load(tmp_path / "c.toml"))
    site = entries["sites"]["local-news"]
    assert list(entries["sites"]) == ["local-news"] and list(entries["networks"]) == ["dsl"]
    assert site.file == NEWS.resolve()
    assert site.listed == ("local-news", str(NEWS), f"{tmp_path}/news")
    assert entries["networks"]["dsl"].file == (ROOT / "profiles/networks/dsl.toml").resolve()


def test_a_copy_with_the_same_content_is_the_same_label(tmp_path):
    (tmp_path / "dsl.toml").write_text(DSL)
    (tmp_path / "c.toml").write_text(campaign(networks=f'["dsl", "{tmp_path}/dsl.toml"]'))
    entries = config.resolve(config.load(tmp_path / "c.toml"))
    assert list(entries["networks"]) == ["dsl"]
    assert entries["networks"]["dsl"].listed == ("dsl", f"{tmp_path}/dsl.toml")


def test_cleanup_check_changes_nothing(tmp_path):
    """A dead run's state folder is listed by `cleanup --check` and left in place
    (a private state root: no other run's state is looked at or touched)."""
    import os

    state = tmp_path / "state"
    dead = state / "999999999"
    dead.mkdir(parents=True)
    (dead / "owner").write_text("999999999 1\n")
    (dead / "keep").write_text("x\n")
    # a private state root and no testbed user: even a sweep could touch nothing else
    env = {**os.environ, "TESTBED_STATE_DIR": str(state), "TESTBED_USER": "tb-no-such-user"}
    cp = subprocess.run([str(ROOT / ".venv/bin/testbed"), "cleanup", "--check"], env=env,
                        capture_output=True, text=True, timeout=120, check=False)
    assert cp.returncode == 1, cp.stderr
    assert f"state {dead}" in cp.stdout
    assert (dead / "keep").read_text() == "x\n" and (dead / "owner").exists()
    assert sorted(p.name for p in state.iterdir()) == ["999999999"]
