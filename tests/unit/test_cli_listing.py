"""The listing commands a researcher starts with: `testbed trials` narrowed as `run` is
(--site, --network, --setting, the old --protocol, --status), `testbed export` saying
what it wrote, `testbed compare` leading with the agreement, a folder and its own
export one campaign, and two campaigns with nothing in common shown side by side."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner

from analysis import synthetic
from testbed.cli import cli
from testbed.errors import InputError


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("campaign")
    trials = synthetic.campaign(sites=3, networks=["dsl", "lte"], runs=6, seed=4,
                                failure_rate=0.05)
    synthetic.write_folder(trials, out, {"versions": {"chromium": "130.0"}})
    return out


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_trials_takes_runs_filters_and_the_old_protocol(folder):
    everything = json.loads(invoke("trials", folder, "--json").stdout)
    wanted = [r for r in everything if r["site"] == "gnu.org" and r["network"] == "lte"
              and r["setting"] in ("quic", "tcp")]
    done = invoke("trials", folder, "--site", "gnu.org", "--network", "lte",
                  "--setting", "quic", "--setting", "tcp", "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout) == wanted and len(wanted) == 2 * 6
    assert {r["trial_id"] for r in wanted} == {f"gnu.org+lte+{s}+{r}"
                                              for s in ("quic", "tcp") for r in range(6)}
    old = invoke("trials", folder, "--site", "gnu.org", "--network", "lte",
                 "--protocol", "quic", "--protocol", "tcp", "--json")
    assert json.loads(old.stdout) == wanted


def test_trials_status_and_text(folder):
    failed = json.loads(invoke("trials", folder, "--status", "failed", "--json").stdout)
    assert failed and {r["status"] for r in failed} == {"failed"}
    text = invoke("trials", folder, "--status", "failed")
    assert len(text.stdout.splitlines()) == len(failed)
    assert text.stderr.strip() == f"{len(failed)} trials: 0 ok, {len(failed)} failed"


def test_trials_refuses_a_name_the_campaign_lacks(folder):
    done = invoke("trials", folder, "--network", "dls")
    assert isinstance(done.exception, InputError)  # testbed.cli.main: one line, exit 2
    assert "--network dls: expected one of the networks of" in str(done.exception)
    assert str(done.exception).endswith("(dsl, lte)")


def test_export_says_what_it_wrote(folder, tmp_path):
    for args, table, kind in ((["--csv", tmp_path / "t.csv"], "trials", "CSV"),
                              (["--parquet", tmp_path / "c.parquet", "--table",
                                "connections"], "connections", "Parquet")):
        done = invoke("export", folder, *args)
        assert done.exit_code == 0, done.output
        path = args[1]
        rows = len(pd.read_csv(path) if kind == "CSV" else pd.read_parquet(path))
        assert done.stderr == f"testbed: wrote {path}: {rows} rows of table {table} ({kind})\n"
    done = invoke("export", folder, "--csv", "-")
    assert done.stderr.startswith("testbed: wrote to stdout: ")


def test_compare_a_folder_with_its_own_export_leads_with_the_agreement(folder, tmp_path):
    assert invoke("export", folder, "--csv", tmp_path / "same.csv").exit_code == 0
    done = invoke("compare", folder, tmp_path / "same.csv")
    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()
    assert lines[0].startswith("agreement: 100.0% of ")
    assert lines[1].startswith("equivalence: ") and " 0 different, " in lines[1]
    assert lines[2].startswith("trials: A ") and lines[2].endswith(" ids in both")
    assert "(absent)" not in done.stdout
    assert ("manifests: not compared (B without one: an export carries no manifest)"
            in lines)
    doc = json.loads(invoke("compare", folder, tmp_path / "same.csv", "--json").stdout)
    assert doc["manifest_diff"] == []


def test_compare_with_nothing_in_common_shows_each_side_and_the_manifests(folder, tmp_path):
    other = tmp_path / "other"
    synthetic.write_folder(synthetic.campaign(sites=2, networks=["mss"], runs=4, seed=5),
                           other, {"versions": {"chromium": "131.0"}})
    done = invoke("compare", folder, other)
    assert isinstance(done.exception, InputError)  # testbed.cli.main: one line, exit 2
    lines = done.stdout.splitlines()
    assert lines[0].startswith("A: sites gnu.org, ") and "networks dsl, lte;" in lines[0]
    assert lines[1].startswith("B: sites gnu.org, ") and "networks mss;" in lines[1]
    assert "in common: no networks" in lines
    assert "  versions.chromium: 130.0 | 131.0" in lines
    assert "no site, network and setting pair in common" in str(done.exception)
