"""Click's own usage errors (an unknown command or option, a missing argument) are
bad input like any other: one line on stderr naming the command, exit 2."""

from __future__ import annotations

import os

import pytest

from testbed import cli


@pytest.mark.parametrize("argv, expect", [
    (["nosuch"], "testbed: error: testbed: No such command 'nosuch'."),
    (["replay"], "testbed: error: testbed replay: Missing argument 'RECORDING'."),
    (["validate", "network", "--bogus"],
     "testbed: error: testbed validate network: No such option '--bogus'"),
])
def test_a_usage_error_is_one_line_and_exit_2(argv, expect, capsys, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)  # no sweep before the command
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1, err
    assert err.startswith(expect), err
    assert "--help`" in err
