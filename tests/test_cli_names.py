"""Command-line names: `export` (and its old name `results`), `--out` everywhere,
top-level help with whole sentences."""

from __future__ import annotations

import pandas as pd
from click.testing import CliRunner

from analysis import synthetic
from testbed.cli import cli


def test_export_and_its_old_name(tmp_path):
    trials = synthetic.campaign(sites=2, networks=["dsl"], runs=2, seed=1)
    synthetic.write_folder(trials, tmp_path / "res")
    runner = CliRunner()
    done = runner.invoke(cli, ["export", str(tmp_path / "res"), "--csv", str(tmp_path / "a.csv")])
    assert done.exit_code == 0, done.output
    assert len(pd.read_csv(tmp_path / "a.csv")) == len(trials)
    done = runner.invoke(cli, ["results", str(tmp_path / "res"), "--parquet",
                               str(tmp_path / "b.parquet")])
    assert done.exit_code == 0, done.output
    assert "`testbed results` is now `testbed export`" in done.output
    assert len(pd.read_parquet(tmp_path / "b.parquet")) == len(trials)


def test_top_level_help_lists_whole_first_sentences():
    done = CliRunner().invoke(cli, ["--help"], terminal_width=200)
    assert done.exit_code == 0
    assert "..." not in done.output.split("Commands:")[1]
    assert "export" in done.output and "compare" in done.output
    assert "\n  results" not in done.output  # the old name is hidden


def test_recording_har_takes_out():
    import click

    ctx = click.Context(cli)
    recording = cli.get_command(ctx, "recording")
    har = recording.get_command(click.Context(recording, parent=ctx), "har")
    out, = [p for p in har.params if "--out" in p.opts]
    assert {"-o", "--out"} <= set(out.opts), out.opts
