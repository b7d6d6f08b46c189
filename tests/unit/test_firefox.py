"""The Firefox stack's pieces without a browser: its preferences per stack, the replay's
names as a hosts file, the launcher's profile edits, the mount namespace's binds, the
campaign key `client` and the trial ids it makes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

import pytest

from results_contract import schema
from testbed.campaign.plan import plan
from testbed.host import enter, firefox
from testbed.host.paths import ROOT
from testbed.measure import browsertime

LAUNCHER = ROOT / "testbed/measure/firefox_launcher.py"


def test_tcp_turns_http3_off_and_quic_maps_every_origin_to_h3():
    origins = [("a.test", 443), ("img.test", 8443)]
    tcp = firefox.stack_prefs("tcp", origins)
    assert tcp["network.http.http3.enable"] is False
    assert "network.http.http3.alt-svc-mapping-for-testing" not in tcp
    quic = firefox.stack_prefs("quic", origins)
    assert quic["network.http.http3.enable"] is True
    assert quic["network.http.http3.alt-svc-mapping-for-testing"] == \
        'a.test;h3=":443",img.test;h3=":8443"'


def test_the_replays_own_trust_does_not_switch_http3_off_and_no_name_goes_on_the_wire():
    prefs = firefox.QUIET_PREFS
    assert prefs["network.http.http3.disable_when_third_party_roots_found"] is False
    assert prefs["network.trr.mode"] == 5
    assert prefs["network.dns.native_https_query"] is False


def test_the_hosts_file_maps_every_recorded_host_and_nothing_else():
    text = firefox.hosts_file({"www.a.test": "10.0.0.1", "img.b.test": "10.0.0.2"})
    lines = text.splitlines()
    assert lines == ["127.0.0.1\tlocalhost", "10.0.0.2\timg.b.test", "10.0.0.1\twww.a.test"]
    assert re.search(r"^nameserver 127\.0\.0\.1$", firefox.RESOLV_CONF, re.MULTILINE)


def test_user_js_is_what_firefox_reads():
    assert firefox.user_js({"a.b": True, "c": "x;y", "n": 4}) == \
        'user_pref("a.b", true);\nuser_pref("c", "x;y");\nuser_pref("n", 4);\n'


def test_browsertime_drives_firefox_through_its_launcher_and_the_pinned_geckodriver():
    argv = browsertime.argv(browsertime.BrowsertimeOptions(iterations=2), "https://a.test/",
                            Path("/r"), Path("/c.js"), client="firefox")
    pairs = dict(pairwise(argv))
    assert pairs["--browser"] == "firefox"
    assert pairs["--firefox.binaryPath"] == str(browsertime.FIREFOX_LAUNCHER)
    assert pairs["--firefox.geckodriverPath"] == str(firefox.GECKODRIVER)
    assert not [a for a in argv if a.startswith("--chrome.")]
    chrome = browsertime.argv(browsertime.BrowsertimeOptions(iterations=2), "https://a.test/",
                              Path("/r"), Path("/c.js"))
    assert dict(pairwise(chrome))["--browser"] == "chrome"


def test_setup_pins_the_geckodriver_the_testbed_expects():
    text = (ROOT / "setup/setup.sh").read_text()
    assert f"GECKODRIVER_VERSION={firefox.GECKODRIVER_VERSION}\n" in text
    packages = (ROOT / "setup/apt-packages.txt").read_text().split()
    assert {"firefox-esr", "libnss3-tools"} <= set(packages)


def run_launcher(tmp_path: Path, message: dict, args: list[str]) -> subprocess.CompletedProcess:
    ctl = tmp_path / "ctl"
    ctl.mkdir()
    (ctl / "flags-1.json").write_text(json.dumps(message))
    fake = tmp_path / "firefox"
    fake.write_text("#!/bin/sh\necho \"$@\" > \"$(dirname \"$0\")/argv\"\necho \"$TESTBED_X\" >> \"$(dirname \"$0\")/argv\"\n")
    fake.chmod(0o755)
    env = {"TESTBED_TRIAL_CTL": str(ctl), "TESTBED_FIREFOX": str(fake), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-I", str(LAUNCHER), *args], env=env,
                          capture_output=True, text=True, timeout=60, check=False)


def test_the_launcher_appends_the_trials_prefs_to_the_fresh_profile_and_execs_firefox(tmp_path):
    profile = tmp_path / "profile"
    profile.mkdir()
    (profile / "user.js").write_text('user_pref("network.http.http3.enable", true);\n')
    cp = run_launcher(tmp_path, {"prefs": {"network.http.http3.enable": False},
                                 "env": {"TESTBED_X": "log-on"}},
                      ["-marionette", "-profile", str(profile)])
    assert cp.returncode == 0, cp.stderr
    lines = (profile / "user.js").read_text().splitlines()
    assert lines[-1] == 'user_pref("network.http.http3.enable", false);'  # the last one wins
    assert (tmp_path / "argv").read_text().split("\n")[:2] == [
        f"-marionette -profile {profile}", "log-on"]
    assert (tmp_path / "ctl/launch-1").exists()


def test_the_launcher_refuses_an_aborted_launch_and_a_command_line_without_profile(tmp_path):
    cp = run_launcher(tmp_path, {"abort": "servers down"}, ["-profile", str(tmp_path)])
    assert cp.returncode != 0 and "servers down" in cp.stderr
    assert not (tmp_path / "argv").exists()


@pytest.mark.skipif(not Path(firefox.CERTUTIL).exists(), reason="certutil (libnss3-tools) missing")
def test_the_launcher_trusts_the_replays_ca_in_the_profiles_own_nss_database(tmp_path):
    from testbed.replay import certs

    profile = tmp_path / "profile"
    profile.mkdir()
    leaf = certs.issue_leaf(["www.a.test"], tmp_path, ca=certs.ensure_ca(tmp_path / "ca"))
    cp = run_launcher(tmp_path, {"prefs": {}, "trust": str(leaf.chain_path)},
                      ["-profile", str(profile)])
    assert cp.returncode == 0, cp.stderr
    listed = subprocess.run([firefox.CERTUTIL, "-L", "-d", f"sql:{profile}"],
                            capture_output=True, text=True, check=True).stdout
    assert re.search(r"^testbed-replay\s+C,,", listed, re.MULTILINE), listed


def test_only_hosts_and_resolv_conf_can_be_bound():
    argv = enter.as_user(["true"], netns="ns", run=_Run(),
                         binds={"/etc/hosts": "/run/x/hosts"})
    assert argv[argv.index("--bind") + 1] == "/etc/hosts=/run/x/hosts"
    with pytest.raises(ValueError, match="not one of"):
        enter.as_user(["true"], netns="ns", run=_Run(), binds={"/etc/passwd": "/tmp/p"})


class _Run:
    id = "1"
    alternatives = Path("/run/testbed/1/alternatives")


def test_chromium_trial_ids_are_unchanged_and_a_firefox_trial_says_so():
    assert plan.Trial("s", "dsl", "quic", 3).id == "s+dsl+quic+3"
    assert plan.Trial("s", "dsl", "quic", 3, "firefox").id == "s+dsl+quic+3+firefox"
    assert schema.trial_id("s", "dsl", "quic", 3) == "s+dsl+quic+3"


def test_each_client_gets_a_block_and_chromium_alone_keeps_its_order():
    one = plan.blocks(["a", "b"], ["dsl", "lte"], ["tcp", "quic"], 2, seed=5)
    again = plan.blocks(["a", "b"], ["dsl", "lte"], ["tcp", "quic"], 2, seed=5,
                        clients=("chromium",))
    assert one == again
    both = plan.blocks(["a", "b"], ["dsl", "lte"], ["tcp", "quic"], 2, seed=5,
                       clients=("chromium", "firefox"))
    assert len(both) == 2 * len(one)
    ids = [t.id for t in plan.trials(both)]
    assert len(ids) == len(set(ids)) == 2 * 2 * 2 * 2 * 2
    for b in both:
        assert {t.client for t in b.trials} == {b.client}
    assert {b.client for b in both} == {"chromium", "firefox"}


def test_the_wire_shows_which_transport_reached_each_server_and_any_name_asked():
    from testbed.validate import evidence
    from testbed.validate import firefox as proof

    def pkt(proto, dst, dport, flags=0, src="100.64.0.2", sport=50000):
        return evidence.Packet(0.0, proto, src, dst, sport, dport, 0, flags=flags)

    packets = [pkt(evidence.TCP, "10.0.0.1", 443, flags=0x02),
               pkt(evidence.TCP, "10.0.0.1", 443, flags=0x10),  # an ACK: no new connection
               pkt(evidence.UDP, "10.0.0.2", 443), pkt(evidence.UDP, "10.0.0.2", 443),
               pkt(evidence.UDP, "10.0.0.9", 53)]
    wire = proof.wire_by_ip(packets)
    assert wire["10.0.0.1"] == {"tcp": 1, "quic": 0}
    assert wire["10.0.0.2"] == {"tcp": 0, "quic": 2}
    assert wire["*"] == {"dns": 1}


def har_of(*entries):
    return {"log": {"entries": [{"request": {"url": u}, "response": {"httpVersion": v}}
                                for u, v in entries]}}


def test_judge_passes_h3_everywhere_and_names_the_origin_that_fell_back():
    from testbed.validate import evidence
    from testbed.validate import firefox as proof

    origins = {"www.a.test:443": "10.0.0.1", "img.a.test:443": "10.0.0.2"}
    udp = [evidence.Packet(0.0, evidence.UDP, "c", ip, 1, 443, 1200) for ip in origins.values()]
    good = proof.judge("quic", origins, None,
                       har_of(("https://www.a.test/", "HTTP/3"), ("https://img.a.test/x", "h3")),
                       udp)
    assert all(r.ok is not False for r in good), good
    bad = proof.judge("quic", origins, None,
                      har_of(("https://www.a.test/", "h3"), ("https://img.a.test/x", "HTTP/2")),
                      udp[:1] + [evidence.Packet(0.0, evidence.TCP, "c", "10.0.0.2", 1, 443, 0,
                                                 flags=0x02)])
    failed = {r.name for r in bad if r.ok is False}
    assert failed == {"img.a.test:443: HAR", "img.a.test:443: wire at 10.0.0.2"}


# Lines as Firefox ESR 153 logs them (MOZ_LOG=timestamp,nsHttp:4), from a real trial.
T = "2026-11-26 08:03:02.207111 UTC - [Parent 31695: Socket Thread]: I/nsHttp "
H3_LOG = "\n".join([
    T + "Http3Session::Init origin=www.a.test, alpn=h3, selfAddr=0.0.0.0, "
        "peerAddr=10.0.0.1, qpack table size=65536, max blocked streams=20 webtransport=0 "
        "[this=7fd4f5a39d00]",
    "2026-11-26 08:03:02.205459 UTC - [Parent 31695: Main Thread]: E/nsHttp   Host: www.a.test",
    "2026-11-26 08:03:02.205459 UTC - [Child 3: Main Thread]: E/nsHttp   Host: www.a.test",
])
H2_LOG = "\n".join([
    T + "Http2Session::Http2Session 7faeacd7aa00 serial=0x1",
    T + "Http2Session::SendHello 7faeacd7aa00",
    T.replace("I/nsHttp", "E/nsHttp") + "TlsHandshaker::SetupSSL 7faeacc8b100 caps=0x1001001 "
    ".S.........[tlsflags0x00000000]www.a.test:443^partitionKey=%28https%2Ca.test%29",
    "2026-11-26 08:03:02.205459 UTC - [Parent 31695: Main Thread]: E/nsHttp   Host: www.a.test",
    "2026-11-26 08:03:02.205459 UTC - [Parent 31695: Main Thread]: E/nsHttp   Host: static.a.test",
])


def test_firefoxs_log_gives_each_origin_its_sessions_and_requests():
    from testbed.validate import firefox as proof

    assert proof.origin_protocols(H3_LOG) == {"www.a.test:443": {"h3": 1, "requests": 1}}
    assert proof.origin_protocols(H2_LOG) == {"www.a.test:443": {"h2": 1, "requests": 1},
                                              "static.a.test:443": {"requests": 1}}


def test_an_origin_coalesced_onto_another_passes_and_a_session_of_the_other_stack_fails():
    from testbed.validate import firefox as proof

    origins = {"www.a.test:443": "10.0.0.1", "static.a.test:443": "10.0.0.1"}
    rows = {r.name: r for r in proof.judge("tcp", origins, H2_LOG, None, None)}
    assert rows["static.a.test:443: Firefox's log"].ok is True
    assert "coalesced" in rows["static.a.test:443: Firefox's log"].observed
    assert rows["www.a.test:443: Firefox's log"].ok is True
    rows = {r.name: r for r in proof.judge("tcp", origins, H3_LOG, None, None)}
    assert rows["www.a.test:443: Firefox's log"].ok is False  # an HTTP/3 session under TCP
    assert rows["static.a.test:443: Firefox's log"].ok is False  # never asked


def test_packets_after_the_load_are_not_the_trials():
    from testbed.validate import evidence
    from testbed.validate import firefox as proof

    har = {"log": {"entries": [{"startedDateTime": "2026-11-26T08:00:00.000Z", "time": 500}]}}
    end = proof.load_end(har)
    assert end == pytest.approx(1795680000.5)
    probe = evidence.Packet(end + 2, evidence.UDP, "c", "10.0.0.1", 1, 443, 1200)
    load = evidence.Packet(end - 0.2, evidence.TCP, "c", "10.0.0.1", 2, 443, 0, flags=0x02)
    wire = proof.wire_by_ip([load, probe], end + proof.LATE_S)
    assert wire["10.0.0.1"] == {"tcp": 1, "quic": 0}
