"""Hostile input to `testbed compare` and `testbed report`: missing or broken result
folders and manifests. One line naming the file, exit 2, nothing written."""

from __future__ import annotations

import pytest
from support.hostile_harness import Case, run_case

from analysis import synthetic


def store(folder, host):
    synthetic.write_folder(synthetic.campaign(sites=2, networks=["dsl"], runs=3, seed=1),
                           folder / "ok")


def bad_manifest(folder, host):
    store(folder, host)
    (folder / "ok" / "manifest.json").write_text("{not json")


CASES = [
    Case("compare-missing-folder", ["compare", "{dir}/nope", "{dir}/nope2"],
         ["{dir}/nope", "no such file or folder"]),
    Case("compare-folder-without-store", ["compare", "{dir}/empty", "{dir}/empty"],
         ["{dir}/empty", "trials.sqlite"], prepare=lambda d, h: (d / "empty").mkdir()),
    Case("compare-bad-manifest", ["compare", "{dir}/ok", "{dir}/ok"],
         ["{dir}/ok/manifest.json", "not JSON"], prepare=bad_manifest, may_write=True),
    Case("compare-unknown-baseline", ["compare", "{dir}/ok", "{dir}/ok", "--baseline", "nope"],
         ["--baseline", "nope"], prepare=store, may_write=True),
    Case("report-csv-with-bad-column", ["report", "{dir}/t.csv", "--out", "{dir}/r"],
         ["{dir}/t.csv", "missing column"], files={"t.csv": "trial_id,site\nx,y\n"}),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_hostile(case, tmp_path):
    run_case(case, tmp_path)
