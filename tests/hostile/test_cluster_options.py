"""Hostile cluster options of `testbed run`: worker counts that are no count or
would start a machine's worth of processes, a scheduler given with local workers.

Every case: exit 2, one line naming the option and what was expected, nothing
written (no cluster is started, no results folder made).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile_harness import Case, run_case

CAMPAIGN = 'sites = ["local-news"]\nnetworks = ["dsl"]\nprotocols = ["tcp"]\nruns = 1\n'
RUN = ["run", "{dir}/c.toml", "--out", "{dir}/out"]


def C(name: str, extra: list[str], expect: list[str]) -> Case:
    return Case(name, [*RUN, *extra], expect, {"c.toml": CAMPAIGN})


CASES = [
    C("cluster: --workers not a number", ["--workers", "two"],
      ["--workers", "expected a whole number from 1 to 64", "'two'"]),
    C("cluster: --workers 0", ["--workers", "0"], ["--workers", "expected a whole number"]),
    C("cluster: --workers negative", ["--workers", "-3"], ["--workers", "'-3'"]),
    C("cluster: --workers a machine's worth", ["--workers", "100000"],
      ["--workers", "from 1 to 64"]),
    C("cluster: --scheduler and --workers", ["--scheduler", "tcp://127.0.0.1:1",
                                             "--workers", "2"],
      ["--scheduler, --workers", "expected one of them"]),
    C("cluster: --scheduler empty", ["--scheduler", " "],
      ["--scheduler", "expected a scheduler address"]),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bad_cluster_option(case: Case, tmp_path: Path):
    run_case(case, tmp_path)
