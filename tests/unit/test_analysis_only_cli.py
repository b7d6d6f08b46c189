"""On the analysis-only install (`pip install .[analysis]`, no mitmproxy or pydantic) the
command line still lists every command and says, in one line, what a missing one needs."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from testbed import cli as cli_module
from testbed import errors
from testbed.commands.groups import LazyGroup
from testbed.host import cleanup


@click.group(cls=LazyGroup, lazy={"fine": "testbed.commands.doctor:doctor",
                                  "gone": "no_such_measurement_pkg_xyz:cmd"})
def group():
    pass


def test_help_lists_a_command_whose_package_is_missing_with_what_to_install():
    out = CliRunner().invoke(group, ["--help"]).output
    assert "gone" in out and "no module no_such_measurement_pkg_xyz" in out
    assert "'.[measure]'" in out


def test_running_it_fails_with_one_line():
    result = CliRunner().invoke(group, ["gone", "--any", "arg"])
    assert isinstance(result.exception, errors.TestbedError)
    assert "testbed gone: not in this install" in str(result.exception)


def test_a_missing_module_of_the_project_itself_is_not_hidden():
    lazy = LazyGroup(lazy={"broken": "testbed.no_such_module_xyz:cmd"})
    with pytest.raises(ModuleNotFoundError):
        lazy.get_command(None, "broken")


def test_main_turns_a_missing_package_at_run_time_into_one_line(monkeypatch, capsys):
    def run():
        raise ModuleNotFoundError("No module named 'pydantic'", name="pydantic")

    monkeypatch.setattr(cleanup, "sweep", lambda: None)  # no sweep from a unit test
    monkeypatch.setattr(cli_module, "cli", click.Command("testbed", callback=run))
    with pytest.raises(SystemExit) as exit_:
        cli_module.main([])
    assert exit_.value.code == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        ("testbed: error: not in this install (no module pydantic): pip install '.[measure]' "
         "or `make setup` brings it")]
