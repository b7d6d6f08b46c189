"""Hostile network profiles: a trace path that leaves its folders, or a trace that is not one.

A trace path must resolve (symbolic links followed) into Mahimahi's trace
folder or the profile's own folder, and the file must parse as a trace. The
profile reaches the loader through a campaign (`testbed run`) and through
`testbed validate network`; the secret's first line must never be printed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.hostile_harness import Case, Host, run_case

GOOD = "min_rtt_ms = 24\nbuffer_ms = 50\n"
CAMPAIGN = 'sites = ["local-news"]\nnetworks = ["{dir}/net.toml"]\nprotocols = ["tcp"]\nruns = 1\n'
RUN = ["run", "{dir}/c.toml", "--out", "{dir}/out"]
VALIDATE = ["validate", "network", "{dir}/net.toml"]
TRACE = "downlink_trace"


def traces(up: str, down: str) -> str:
    return GOOD + f'uplink_trace = "{up}"\ndownlink_trace = "{down}"\n'


def profile(up: str = "ok.trace", down: str = "ok.trace", **extra: str) -> dict[str, str]:
    return {"net.toml": traces(up, down), "c.toml": CAMPAIGN, "ok.trace": "10\n20\n", **extra}


def link_next_to_profile(d: Path, host: Host) -> None:
    (d / "link.trace").symlink_to(host.secret)


def folder_link_next_to_profile(d: Path, host: Host) -> None:
    (d / "traces").symlink_to(host.secret.parent)


CASES = [
    Case("trace path climbing out with ../", RUN, ["net.toml", TRACE, "outside"],
         files=profile(down="../../../../../../../../{secret}")),
    Case("trace path climbing out, validate network", VALIDATE, ["net.toml", TRACE, "outside"],
         files=profile(down="../host/secret")),
    Case("absolute trace path to the secret", RUN, ["net.toml", TRACE, "outside"],
         files=profile(down="{secret}")),
    Case("symbolic link next to the profile", RUN, ["net.toml", TRACE, "outside"],
         files=profile(down="link.trace"), prepare=link_next_to_profile),
    Case("folder link next to the profile", RUN, ["net.toml", "uplink_trace", "outside"],
         files=profile(up="traces/secret"), prepare=folder_link_next_to_profile),
    Case("Mahimahi's folder climbed out of", RUN, ["net.toml", TRACE, "outside"],
         files=profile(down="/usr/share/mahimahi/traces/../../../../etc/shadow")),
    Case("trace file that is not a trace", RUN, ["net.toml", TRACE, "line 1", "not a Mahimahi trace"],
         files=profile(down="bad.trace", **{"bad.trace": "HOST-SECRET-lookalike\n1\n"})),
    Case("empty trace", RUN, ["net.toml", TRACE, "empty"],
         files=profile(down="empty.trace", **{"empty.trace": ""})),
    Case("trace with a huge number", RUN, ["net.toml", TRACE, "line 2", "at most"],
         files=profile(down="huge.trace", **{"huge.trace": "5\n" + "9" * 400 + "\n"})),
    Case("trace going backwards", RUN, ["net.toml", TRACE, "nondecreasing"],
         files=profile(down="back.trace", **{"back.trace": "10\n5\n"})),
    Case("trace that is a folder", RUN, ["net.toml", TRACE, "not a regular file"],
         files=profile(down="dir.trace", **{"dir.trace/x": "1\n"})),
    Case("trace with a sign", VALIDATE, ["net.toml", "uplink_trace", "line 1"],
         files=profile(up="neg.trace", **{"neg.trace": "-5\n10\n"})),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_profile(case: Case, tmp_path: Path):
    run_case(case, tmp_path)
