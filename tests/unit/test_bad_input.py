"""Bad input: one line naming the file and the key, exit status 2, nothing written.

Each case writes its files into a fresh folder, runs the real `testbed`
command line, and checks the message and that no file appeared or changed
(in the case's folder, in results/, reports/ and recordings/).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from support.paths import ROOT, TESTBED

from testbed.formats import recording

GOOD_NET = """min_rtt_ms = 24
uplink_mbit = 5
downlink_mbit = 25
buffer_ms = 12
uplink_loss_percent = 0
downlink_loss_percent = 0
"""
GOOD_PROTO = """stack = "tcp"
congestion_control = "cubic"
initial_window_packets = 10
pacing = false
slow_start_after_idle = true
"""


def campaign(sites='["local-news"]', networks='["dsl"]', protocols='["tcp"]', extra=""):
    return f"sites = {sites}\nnetworks = {networks}\nprotocols = {protocols}\nruns = 1\n{extra}"


def net(text: str) -> dict[str, str]:
    """A campaign whose network is the given profile file."""
    return {"net.toml": text, "c.toml": campaign(networks='["{dir}/net.toml"]')}


def proto(text: str) -> dict[str, str]:
    return {"p.toml": text, "c.toml": campaign(protocols='["{dir}/p.toml"]')}


RUN = ["run", "{dir}/c.toml", "--out", "{dir}/out"]


@dataclass
class Case:
    name: str
    files: dict[str, str]
    argv: list[str]
    expect: list[str]
    """Substrings the one-line message must contain (file and key)."""
    recording: str | None = None
    """Make a small recording in {dir}/rec and break it this way first."""
    extra: dict = field(default_factory=dict)


CASES = [
    # network profiles
    Case("network: malformed TOML", net("min_rtt_ms = = 3\n"), RUN, ["net.toml", "TOML"]),
    Case("network: unknown key", net(GOOD_NET + "bandwidth_mbit = 3\n"), RUN,
         ["net.toml", "bandwidth_mbit"]),
    Case("network: wrong type", net(GOOD_NET.replace("downlink_mbit = 25", 'downlink_mbit = "fast"')),
         RUN, ["net.toml", "downlink_mbit"]),
    Case("network: negative rate", net(GOOD_NET.replace("downlink_mbit = 25", "downlink_mbit = -25")),
         RUN, ["net.toml", "downlink_mbit"]),
    Case("network: zero rate", net(GOOD_NET.replace("uplink_mbit = 5", "uplink_mbit = 0")), RUN,
         ["net.toml", "uplink_mbit"]),
    Case("network: loss over 100 %",
         net(GOOD_NET.replace("downlink_loss_percent = 0", "downlink_loss_percent = 150")), RUN,
         ["net.toml", "downlink_loss_percent"]),
    Case("network: one direction without a rate", net(GOOD_NET.replace("uplink_mbit = 5\n", "")),
         RUN, ["net.toml", "uplink_mbit"]),
    Case("network: negative RTT", net(GOOD_NET.replace("min_rtt_ms = 24", "min_rtt_ms = -1")), RUN,
         ["net.toml", "min_rtt_ms"]),
    Case("network: unknown name on the command line", {}, ["validate", "network", "wifi6"],
         ["wifi6"]),
    # protocol settings
    Case("protocol: malformed TOML", proto('stack = "tcp\n'), RUN, ["p.toml", "TOML"]),
    Case("protocol: unknown key", proto(GOOD_PROTO + "zero_rtt = true\n"), RUN,
         ["p.toml", "zero_rtt"]),
    Case("protocol: unknown congestion control",
         proto(GOOD_PROTO.replace('"cubic"', '"vegas"')), RUN, ["p.toml", "congestion_control"]),
    Case("protocol: zero initial window",
         proto(GOOD_PROTO.replace("initial_window_packets = 10", "initial_window_packets = 0")),
         RUN, ["p.toml", "initial_window_packets"]),
    Case("protocol: wrong type",
         proto(GOOD_PROTO.replace("initial_window_packets = 10", 'initial_window_packets = "ten"')),
         RUN, ["p.toml", "initial_window_packets"]),
    Case("protocol: unknown stack", proto(GOOD_PROTO.replace('"tcp"', '"sctp"')), RUN,
         ["p.toml", "stack"]),
    # campaigns
    Case("campaign: malformed TOML", {"c.toml": "sites = [\n"}, RUN, ["c.toml", "TOML"]),
    Case("campaign: unknown key", {"c.toml": campaign(extra="repetitions = 3\n")}, RUN,
         ["c.toml", "repetitions"]),
    Case("campaign: zero runs", {"c.toml": campaign().replace("runs = 1", "runs = 0")}, RUN,
         ["c.toml", "runs"]),
    Case("campaign: runs of the wrong type",
         {"c.toml": campaign().replace("runs = 1", 'runs = "many"')}, RUN, ["c.toml", "runs"]),
    Case("campaign: negative timeout", {"c.toml": campaign(extra="timeout_s = -5\n")}, RUN,
         ["c.toml", "timeout_s"]),
    Case("campaign: unknown network name", {"c.toml": campaign(networks='["wifi"]')}, RUN,
         ["c.toml", "networks", "wifi"]),
    Case("campaign: unknown protocol name", {"c.toml": campaign(protocols='["http3"]')}, RUN,
         ["c.toml", "protocols", "http3"]),
    Case("campaign: missing recording", {"c.toml": campaign(sites='["no-such-site"]')}, RUN,
         ["c.toml", "sites", "no-such-site"]),
    Case("campaign: no protocols", {"c.toml": campaign(protocols="[]")}, RUN,
         ["c.toml", "protocols"]),
    Case("campaign: missing file", {}, RUN, ["c.toml"]),
    # recordings
    Case("recording: missing body", {"c.toml": campaign(sites='["{dir}/rec"]')}, RUN,
         ["manifest.json", "exchanges/", "body"], recording="missing-body"),
    Case("recording: broken manifest", {}, ["recording", "show", "{dir}/rec"],
         ["manifest.json", "JSON"], recording="broken-json"),
    Case("recording: manifest key of the wrong type", {},
         ["replay", "{dir}/rec", "--stack", "tcp", "--", "true"], ["manifest.json", "status"],
         recording="bad-status"),
    Case("recording: not a recording folder", {}, ["recording", "har", "{dir}"],
         ["manifest.json"]),
    # record, report, results
    Case("record: URL not http(s)", {}, ["record", "ftp://example.org/", "--out", "{dir}/out"],
         ["ftp://example.org/"]),
    Case("report: no results there", {}, ["report", "{dir}/nothing", "--out", "{dir}/out"],
         ["nothing"]),
    Case("export: not a results folder", {}, ["export", "{dir}", "--csv", "{dir}/t.csv"],
         ["trials"]),
]


def make_recording(path: Path, breakage: str) -> None:
    x = {"scheme": "https", "host": "www.a.test", "port": 443, "ip": "203.0.113.5", "method": "GET",
         "target": "/", "request_headers": [], "status": 200,
         "response_headers": [["content-type", "text/html"]]}
    meta = {"name": "rec", "url": "https://www.a.test/", "recorded_at": "2026-01-01T00:00:00Z",
            "loads": 1}
    rec = recording.write(path.parent, meta, [(x, b"<html>hello</html>")])
    manifest = rec / "manifest.json"
    if breakage == "missing-body":
        for body in (rec / "bodies").iterdir():
            body.unlink()
    elif breakage == "broken-json":
        manifest.write_text(manifest.read_text()[:-20])
    elif breakage == "bad-status":
        manifest.write_text(manifest.read_text().replace('"status": 200', '"status": "OK"'))


def snapshot(*roots: Path) -> dict[str, float]:
    seen = {}
    for root in roots:
        if root.exists():
            for p in root.rglob("*"):
                seen[str(p)] = p.stat().st_mtime if p.is_file() else 0.0
    return seen


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_gives_one_line_and_writes_nothing(case: Case, tmp_path: Path):
    d = tmp_path / "case"
    d.mkdir()
    if case.recording:
        make_recording(d / "rec", case.recording)
    for name, text in case.files.items():
        (d / name).write_text(text.replace("{dir}", str(d)))
    argv = [a.replace("{dir}", str(d)) for a in case.argv]
    watched = [d, ROOT / "results", ROOT / "reports", ROOT / "recordings"]
    before = snapshot(*watched)
    cp = subprocess.run([TESTBED, *argv], check=False, capture_output=True, text=True, timeout=120,
                        env={**os.environ, "COLUMNS": "200"})
    lines = [line for line in cp.stderr.splitlines() if line.strip()]
    assert cp.returncode == 2, (cp.returncode, cp.stderr)
    assert len(lines) == 1, cp.stderr
    for needle in case.expect:
        assert needle.replace("{dir}", str(d)) in lines[0], (needle, lines[0])
    assert snapshot(*watched) == before, "bad input changed files"
    shutil.rmtree(d)


def test_the_table_is_large_enough():
    assert len(CASES) >= 25
