"""Hostile values of a campaign's `video_fps` (the screen recording's frame rate):
refused before anything starts or is written, one line naming the file and the key."""

from __future__ import annotations

import pytest
from support.hostile_harness import Case, run_case

BASE = 'sites = ["local-news"]\nnetworks = ["dsl"]\nprotocols = ["tcp"]\nruns = 1\n'
RUN = ["run", "{dir}/c.toml", "--out", "{dir}/out"]
DRY = ["run", "{dir}/c.toml", "--dry-run"]


def fps(value: str) -> dict:
    return {"c.toml": BASE + f"video_fps = {value}\n"}


CASES = [
    Case("video_fps zero", RUN, ["c.toml", "key video_fps", "expected a number >= 10", "got 0"],
         fps("0")),
    Case("video_fps negative", DRY, ["c.toml", "key video_fps", ">= 10", "got -60"],
         fps("-60")),
    Case("video_fps beyond what the capture is measured for", RUN,
         ["c.toml", "key video_fps", "expected a number <= 120", "got 100000"], fps("100000")),
    Case("video_fps not whole", DRY, ["c.toml", "key video_fps", "expected a whole number",
                                      "59.5"], fps("59.5")),
    Case("video_fps a list", RUN, ["c.toml", "key video_fps", "expected a whole number", "got [60]"], fps("[60]")),
    Case("video_fps a float too large for an int", DRY, ["c.toml", "key video_fps"],
         fps("1e400")),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_hostile_video_fps(case, tmp_path):
    run_case(case, tmp_path)
