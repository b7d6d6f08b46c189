"""Hostile values of a campaign's `telemetry` and `capture` keys, and of `testbed export
--table`: refused before anything starts or is written, one line naming the file (or
option) and the key."""

from __future__ import annotations

import pytest
from support.hostile_harness import Case, run_case

BASE = 'sites = ["local-news"]\nnetworks = ["dsl"]\nprotocols = ["tcp"]\nruns = 1\n'
RUN = ["run", "{dir}/c.toml", "--out", "{dir}/out"]
DRY = ["run", "{dir}/c.toml", "--dry-run"]


def camp(extra: str) -> dict:
    return {"c.toml": BASE + extra + "\n"}


CASES = [
    Case("capture unknown name", RUN,
         ["c.toml", "key capture.1", "expected one of 'netlog', 'pcap', 'keylog', 'qlog' or 'mozlog'",
          "tcpdump"], camp('capture = ["pcap", "tcpdump"]')),
    Case("capture of an unknown kind", DRY,
         ["c.toml", "key capture.0", "expected one of", "qlog"], camp('capture = ["sslkeys"]')),
    Case("capture a string, not a list", DRY, ["c.toml", "key capture", "expected a list"],
         camp('capture = "pcap"')),
    Case("capture listed twice", RUN, ["c.toml", "key capture", "listed twice: pcap"],
         camp('capture = ["pcap", "pcap"]')),
    Case("capture a path", RUN, ["c.toml", "key capture.0", "expected one of"],
         camp('capture = ["../../etc/shadow"]')),
    Case("capture a number", DRY, ["c.toml", "key capture.0", "expected one of"],
         camp("capture = [1]")),
    Case("telemetry a number", RUN, ["c.toml", "key telemetry", "expected true or false"],
         camp("telemetry = 1")),
    Case("telemetry a string", DRY, ["c.toml", "key telemetry", "expected true or false"],
         camp('telemetry = "yes"')),
    Case("export an unknown table", ["export", "{dir}", "--table", "hosts", "--csv", "-"],
         ["--table", "hosts"]),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_hostile_telemetry(case, tmp_path):
    run_case(case, tmp_path)
