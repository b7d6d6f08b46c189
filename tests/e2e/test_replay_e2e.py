"""End to end: Chromium (testbed user, sandbox on, headless) loads a recording
through each replay stack in the client namespace."""

from __future__ import annotations

import shutil
import socket
import uuid
from pathlib import Path

import pytest
from support import replay_site
from support.needs import need
from support.paths import TESTBED

from testbed.formats import recording as rec
from testbed.host import proc
from testbed.host.chromium import Chromium
from testbed.host.paths import H3SERVER
from testbed.replay.env import ReplayEnv
from testbed.validate import servers

pytestmark = pytest.mark.e2e

PROTOCOL = {"tcp": "h2", "quic": "h3"}
ENTRIES = """JSON.stringify([...performance.getEntriesByType('navigation'),
                             ...performance.getEntriesByType('resource')]
                            .map(e => [e.name, e.nextHopProtocol]))"""


def needs(stack):
    if stack == "quic" and not H3SERVER.exists():
        need(f"{H3SERVER} not built (make setup)")


@pytest.fixture(scope="module")
def site():
    path = replay_site.make()
    yield rec.load(path)
    shutil.rmtree(path.parent, ignore_errors=True)


def navigate(page, url):
    """Chromium may report a network change while the new namespaces' IPv6 link-local
    addresses settle; a load it aborted for that is loaded again."""
    from testbed.host.chromium import CDPError

    for attempt in range(3):
        try:
            return page.navigate(url)
        except CDPError as e:
            if "ERR_NETWORK_CHANGED" not in str(e) or attempt == 2:
                raise


def load_page(env):
    import json

    with Chromium(env.client_netns, env.chromium_flags()) as browser:
        # Chromium's temporary files go to a folder of the run, not /tmp, where a
        # killed Chromium would leave them (the process is Chromium itself: every
        # wrapper execs).
        environ = Path(f"/proc/{browser.proc.pid}/environ").read_bytes().split(b"\0")
        assert f"TMPDIR={browser.tmp}".encode() in environ
        tmp = browser.tmp
        page = browser.new_page()
        before = env.summary()
        navigate(page, f"https://{replay_site.WWW}/")
        page.evaluate("new Promise(r => setTimeout(r, 200))")  # favicon, late image
        entries = json.loads(page.evaluate(ENTRIES))
        responses = page.responses()
        env.check_alive()
        after = counted(env, before, replay_site.LOADED)
        page.close()
    assert not tmp.exists()
    return before, after, entries, responses


def counted(env, before, requests, timeout=10.0):
    """The summary once it counts `requests` more than `before` (servers write it just
    after a response, h3server at most every 50 ms), or at the timeout."""
    import time

    deadline = time.monotonic() + timeout
    after = env.summary()
    while after["requests"] - before["requests"] < requests and time.monotonic() < deadline:
        time.sleep(0.05)
        after = env.summary()
    return after


@pytest.mark.parametrize("stack", ["tcp", "quic"])
def test_recording_loads_with_no_miss_over_the_stack_protocol(site, stack):
    needs(stack)
    with ReplayEnv(site, stack) as env:
        before, after, entries, responses = load_page(env)
    want = PROTOCOL[stack]
    assert after["misses"] - before["misses"] == 0, after["miss_urls"]
    assert after["requests"] - before["requests"] >= replay_site.LOADED
    names = {n.split("?")[0] for n, _ in entries}
    assert f"https://{replay_site.CDN}/img/pixel.png" in names  # the JS-made request
    assert len(entries) >= replay_site.LOADED - 1  # the favicon has no timing entry
    assert {p for _, p in entries} == {want}, entries
    assert responses and {r["protocol"] for r in responses} == {want}, responses
    assert {r["status"] for r in responses} == {200}


def test_replay_env_tears_everything_down_on_error(site):
    with pytest.raises(RuntimeError, match="boom"), ReplayEnv(site, "tcp") as env:
        names = (env.client_netns, env.server_netns)
        pids = [bg.pid for bg in env.servers.values()]
        raise RuntimeError("boom")
    from testbed.host import netns

    assert not set(names) & set(netns.list_names())
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(
            f"/proc/{pid}/status").read_text()


def test_check_alive_names_the_dead_server(site):
    from testbed.errors import TestbedError

    with ReplayEnv(site, "tcp") as env:
        env.servers["uwsgi"].stop()
        with pytest.raises(TestbedError, match="replay server uwsgi"):
            env.check_alive()


LEAK_TABLE = "tb_replay_leak_test"


class HostCounter:
    """nftables counters in the host namespace for packets to or from some addresses
    (output, forward and input hooks): what would leave or enter the machine."""

    def __init__(self, ips):
        self.ips = list(ips)
        self.table = f"{LEAK_TABLE}_{uuid.uuid4().hex[:6]}"

    def __enter__(self):
        elems = ", ".join(self.ips)
        rules = [f"add table inet {self.table}",
                 (f"add set inet {self.table} watched "
                 f"{{ type ipv4_addr; elements = {{ {elems} }} }}")]
        for hook in ("output", "forward", "input", "prerouting", "postrouting"):
            rules += [(f"add chain inet {self.table} {hook} "
                      f"{{ type filter hook {hook} priority -500; }}"),
                      f"add rule inet {self.table} {hook} ip daddr @watched counter",
                      f"add rule inet {self.table} {hook} ip saddr @watched counter"]
        proc.run(["nft", "-f", "-"], input="\n".join(rules) + "\n")
        return self

    def packets(self) -> int:
        import json

        out = proc.output(["nft", "-j", "list", "table", "inet", self.table])
        total = 0
        for item in json.loads(out)["nftables"]:
            for expr in item.get("rule", {}).get("expr", []):
                if "counter" in expr:
                    total += expr["counter"]["packets"]
        return total

    def __exit__(self, *exc):
        proc.run(["nft", "delete", "table", "inet", self.table], check=False)


def test_recorded_public_ip_replays_without_a_packet_leaving_the_machine(site):
    assert replay_site.IP_A in site.ips  # a public address, not on this machine
    control = "127.0.0.77"
    with HostCounter([*site.ips, control]) as counter:
        # the counter works: one loopback datagram to the control address is seen
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.sendto(b"x", (control, 9))
        seen_control = counter.packets()
        with ReplayEnv(site, "tcp") as env:
            dev = env.topology.client_dev
            def rx():
                return int(proc.output(
                            ["ip", "netns", "exec", env.client_netns, "cat",
                             f"/sys/class/net/{dev}/statistics/rx_packets"]))
            veth_before = rx()
            before, after, _, responses = load_page(env)
            veth_after = rx()
        left = counter.packets() - seen_control
    assert seen_control >= 1
    assert after["misses"] - before["misses"] == 0 and responses
    assert veth_after - veth_before > 10  # the load crossed the namespaces' link...
    assert left == 0  # ...and not one packet to or from a recorded IP touched the host


def test_replay_command_runs_cmd_in_the_client_namespace_and_returns_its_status(site):
    import subprocess

    script = ('test "$(id -un)" = testbed && echo "$TESTBED_STACK" && '
              'echo "$TESTBED_CHROMIUM_FLAGS" && echo "$TESTBED_HOST_RESOLVER_RULES" && '
              'ip -4 -o addr show | grep -c 198.18.0.2/30 && exit 7')
    cp = subprocess.run([TESTBED, "replay", str(site.path), "--stack", "tcp", "--",
                         "sh", "-c", script],
                        check=False, capture_output=True, text=True, timeout=120)
    assert cp.returncode == 7, cp.stderr
    lines = cp.stdout.splitlines()
    assert lines[0] == "tcp"
    assert "--disable-quic" in lines
    assert any(x.startswith("--ignore-certificate-errors-spki-list=") for x in lines)
    assert f"MAP {replay_site.WWW} {replay_site.IP_A}" in cp.stdout
    assert lines[-1] == "1"  # it ran in the client namespace
    assert "0 misses" in cp.stderr


def test_validate_servers_runs_through_both_stacks():
    """The parity check end to end (few downloads; the verdict itself is not asserted:
    timing is for `testbed validate servers` on a quiet machine, not for tests)."""
    import json
    import subprocess
    import tempfile

    needs("quic")
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "parity.json"
        cp = subprocess.run([TESTBED, "validate", "servers", "--runs", "2", "--size", "10000",
                             "--max-gap", "1000", "--output", str(out)],
                            check=False, capture_output=True, text=True, timeout=300)
        assert cp.returncode == 0, cp.stdout + cp.stderr
        data = json.loads(out.read_text())
    assert "gap (quic vs tcp)" in cp.stdout
    assert "Lost on the path: tcp: " in cp.stdout
    assert data["rate_mbit"] == servers.RATE_MBIT == 100
    assert [r["stack"] for r in data["results"]] == ["tcp", "quic"]
    for r in data["results"]:
        assert len(r["times_ms"]["10000"]) == 2 and r["misses"] == 0
        assert all(t > 0 for t in r["times_ms"]["10000"])
        assert set(r["lost"]) == {"tun_drops", "udp_rcvbuf_drops", "tcp_retransmits"}
        # 2 downloads of 10 KB: nothing to drop in a 10,000-packet TUN queue
        assert r["lost"]["tun_drops"] == 0
