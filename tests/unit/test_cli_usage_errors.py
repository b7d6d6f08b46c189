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


def test_a_testbed_error_is_one_line_with_its_line_breaks_as_spaces(capsys, monkeypatch):
    """A server's death quotes its log's last lines: on the terminal they follow its
    first line on the same line, separated by spaces, not glued to it."""
    from testbed.errors import TestbedError

    monkeypatch.setattr(os, "geteuid", lambda: 1000)

    def dies(**_):
        raise TestbedError("replay server nginx (tcp stack) exited with status 1\n"
                           "its log ends:\nnginx: [alert] \x1b[31mred\x1b[0m")

    monkeypatch.setattr(cli.cli, "main", dies)
    with pytest.raises(SystemExit) as exit_:
        cli.main([])
    assert exit_.value.code == 1
    err = capsys.readouterr().err
    assert err == ("testbed: error: replay server nginx (tcp stack) exited with status 1 "
                   "its log ends: nginx: [alert] red\n")
