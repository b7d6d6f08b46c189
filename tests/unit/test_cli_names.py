"""Command-line names: the verbs in pipeline order, `-V`, `export` of whatever `report`
reads, top-level help with whole sentences; and, over the whole click tree, one
spelling for every output: `--out DIR` a folder, `--output FILE` a file (or a
format flag, export's `--csv FILE` / `--parquet FILE`), `--json` a flag."""

from __future__ import annotations

import click
import pandas as pd
import pytest
from click.testing import CliRunner

from analysis import synthetic
from testbed.cli import cli

PIPELINE = ["record", "recording", "replay", "validate", "run", "worker", "cluster", "trials",
            "trial",
            "export", "checkpoint", "upgrade-manifest", "report", "compare", "doctor", "cleanup"]
FORMAT_FLAGS = {"--csv", "--parquet"}
"""Options that name the file a format is written to."""
INPUT_FILES = {("record", "--list"), ("record", "--upstream-ca")}
"""Options that name a file read, not written."""


def walk(command=cli, path=(), ctx=None):
    """Every command of the tree as (its path, the command)."""
    ctx = ctx or click.Context(cli, info_name="testbed")
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            yield from walk(sub, (*path, name), click.Context(sub, parent=ctx, info_name=name))
    else:
        yield path, command


OPTIONS = [(" ".join(path), p) for path, command in walk() for p in command.params
           if isinstance(p, click.Option)]


def test_help_lists_the_verbs_in_pipeline_order():
    done = CliRunner().invoke(cli, ["--help"], terminal_width=200)
    assert done.exit_code == 0
    listed = [line.split()[0] for line in done.output.split("Commands:")[1].splitlines()
              if line.startswith("  ") and not line.startswith("   ")]
    assert listed == PIPELINE
    assert "..." not in done.output.split("Commands:")[1]  # whole first sentences
    assert "results" not in listed  # the unreleased old name of export is gone


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_version_short_and_long(flag):
    done = CliRunner().invoke(cli, [flag], prog_name="testbed")
    assert done.exit_code == 0 and done.output.startswith("testbed, version ")


@pytest.mark.parametrize("where, option", OPTIONS, ids=[f"{w} {o.name}" for w, o in OPTIONS])
def test_one_spelling_per_output(where, option):
    longs = [o for o in option.opts if o.startswith("--")]
    assert len(longs) == 1 and "-o" not in option.opts, (where, option.opts)
    name = longs[0]
    kind = option.type
    if name == "--out":
        assert isinstance(kind, click.Path) and kind.dir_okay and not kind.file_okay, where
    elif name == "--output":
        assert isinstance(kind, click.Path) and kind.file_okay and not kind.dir_okay, where
        assert option.metavar == "FILE", where
    elif name == "--json":
        assert option.is_flag, f"{where} --json: expected a flag (a file is --output FILE)"
    else:
        assert not name.startswith("--out"), (where, name)
        writes_file = ((isinstance(kind, click.Path) and not kind.dir_okay)
                       or option.metavar == "FILE")
        assert not writes_file or name in FORMAT_FLAGS or (where, name) in INPUT_FILES, (
            f"{where} {name}: a file written is --output FILE or a format flag")


def test_every_verb_that_prints_results_has_json():
    have = {" ".join(p) for p, c in walk() if any("--json" in o.opts for o in c.params)}
    assert {"doctor", "validate network", "validate protocols", "validate servers", "run",
            "recording list", "recording show", "report", "compare", "trial", "trials"} <= have


def test_export_reads_whatever_report_reads(tmp_path):
    trials = synthetic.campaign(sites=2, networks=["dsl"], runs=2, seed=1)
    synthetic.write_folder(trials, tmp_path / "res")
    runner = CliRunner()
    sources = [tmp_path / "res", tmp_path / "res" / "trials.sqlite", tmp_path / "a.csv",
               tmp_path / "b.parquet"]
    outs = [["--csv", str(tmp_path / "a.csv")], ["--parquet", str(tmp_path / "b.parquet")],
            ["--csv", str(tmp_path / "c.csv")], ["--csv", str(tmp_path / "d.csv")]]
    for source, out in zip(sources, outs, strict=True):
        done = runner.invoke(cli, ["export", str(source), *out])
        assert done.exit_code == 0, (source, done.output)
    frames = [pd.read_csv(tmp_path / n).sort_values("trial_id", ignore_index=True)
              for n in ("a.csv", "c.csv", "d.csv")]
    assert len(frames[0]) == len(trials)
    pd.testing.assert_frame_equal(frames[0], frames[1])
    pd.testing.assert_frame_equal(frames[0], frames[2])
    done = runner.invoke(cli, ["export", str(tmp_path / "nothing"), "--csv", "-"])
    assert done.exit_code != 0


def test_results_is_no_command():
    done = CliRunner().invoke(cli, ["results", "x", "--csv", "-"])
    assert done.exit_code != 0 and "No such command 'results'" in done.output


def test_trial_help_names_the_list_of_trials():
    done = CliRunner().invoke(cli, ["trial", "--help"], terminal_width=200)
    assert "`testbed trials RESULTS` lists them" in " ".join(done.output.split())
