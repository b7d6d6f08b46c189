"""Hostile configuration files: campaigns and profiles that are too large, not text,
or whose values would break the one-line message.

Every TOML file goes through testbed.formats.tomlfile; each case reaches it through
`testbed run` (a campaign, and the profiles it names) or `testbed validate
network`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.hostile_harness import Case, Host, run_case

from testbed.formats import tomlfile

CAMPAIGN = 'sites = ["local-news"]\nnetworks = ["dsl"]\nprotocols = ["tcp"]\nruns = 1\n'
NET = "min_rtt_ms = 24\nuplink_mbit = 5\ndownlink_mbit = 25\n"
PROTO = 'stack = "tcp"\ncongestion_control = "cubic"\ninitial_window_packets = 10\npacing = false\n'
RUN = ["run", "{dir}/c.toml", "--out", "{dir}/out"]
PADDING = "#" * (tomlfile.MAX_BYTES + 1) + "\n"


def with_net(text: str) -> dict[str, str]:
    return {"net.toml": text, "c.toml": CAMPAIGN.replace('["dsl"]', '["{dir}/net.toml"]')}


def with_proto(text: str) -> dict[str, str]:
    return {"p.toml": text, "c.toml": CAMPAIGN.replace('["tcp"]', '["{dir}/p.toml"]')}


def latin1_campaign(d: Path, host: Host) -> None:
    (d / "c.toml").write_bytes(CAMPAIGN.encode() + 'description = "caf\u00e9"\n'.encode("latin-1"))


def fifo_profile(d: Path, host: Host) -> None:
    (d / "net.toml").unlink()
    os.mkfifo(d / "net.toml")  # nobody writes it: reading it would wait for ever


CASES = [
    Case("campaign file over the size cap", RUN, ["c.toml", "bytes, expected at most"],
         files={"c.toml": CAMPAIGN + PADDING}),
    Case("network profile over the size cap", RUN, ["net.toml", "bytes, expected at most"],
         files=with_net(NET + PADDING)),
    Case("network profile over the size cap, validate network",
         ["validate", "network", "{dir}/net.toml"], ["net.toml", "expected at most"],
         files={"net.toml": NET + PADDING}),
    Case("campaign file not UTF-8", RUN, ["c.toml", "not UTF-8"], files={"c.toml": ""},
         prepare=latin1_campaign),
    Case("network profile that is a FIFO", RUN, ["net.toml", "no such profile file"],
         files=with_net(NET), prepare=fifo_profile),
    Case("value with a line break", RUN, ["p.toml", "key congestion_control", "\\n"],
         files=with_proto(PROTO.replace('"cubic"', '"cubic\\nHOST-SECRET"'))),
    Case("value of a megabyte", RUN, ["c.toml", "key runs", "expected a whole number", '..."'],
         files={"c.toml": CAMPAIGN.replace("runs = 1", f'runs = "{"9" * 500_000}"')}),
    Case("a number written as a string (not converted)", RUN,
         ["c.toml", "key runs", 'expected a whole number from 1 to 10000 or a table', 'got "3"'],
         files={"c.toml": CAMPAIGN.replace("runs = 1", 'runs = "3"')}),
    Case("a number where true or false goes", RUN,
         ["c.toml", "key keep_video", "expected true or false, got 1"],
         files={"c.toml": CAMPAIGN + "keep_video = 1\n"}),
    Case("a number among the sites", RUN, ["c.toml", "key sites.1", "expected a string, got 3"],
         files={"c.toml": CAMPAIGN.replace('["local-news"]', '["local-news", 3]')}),
    Case("a table where a number goes", RUN, ["c.toml", "key retries", "got a table"],
         files={"c.toml": CAMPAIGN + "[retries]\nx = 1\n"}),
    Case("adaptive runs without their keys", RUN, ["c.toml", "key runs.min", "missing"],
         files={"c.toml": CAMPAIGN.replace("runs = 1\n", "") + "[runs]\nx = 1\n"}),
    Case("a string where a list goes", RUN, ["c.toml", "key sites", "expected a list"],
         files={"c.toml": CAMPAIGN.replace('["local-news"]', '"local-news"')}),
    Case("a number in a list of names", RUN, ["c.toml", "key networks.1", "expected a string"],
         files={"c.toml": CAMPAIGN.replace('["dsl"]', '["dsl", 7]')}),
    Case("campaign nested 100000 deep", RUN, ["c.toml", "not valid TOML: nested too deep"],
         files={"c.toml": CAMPAIGN + "x = " + "[" * 100_000 + "]" * 100_000 + "\n"}),
    Case("network profile of inline tables nested 20000 deep", RUN,
         ["net.toml", "not valid TOML: nested too deep"],
         files=with_net(NET + "x = " + "{a = " * 20_000 + "1" + "}" * 20_000 + "\n")),
    Case("profile setting its own digest", RUN, ["p.toml", "key digest", "set from the file"],
         files=with_proto(PROTO + 'digest = "0"\n')),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_config_file(case: Case, tmp_path: Path):
    run_case(case, tmp_path)
