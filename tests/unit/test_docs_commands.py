"""Every `testbed ...` command shown in a fenced code block of README.md or docs/*.md
names a command that exists, with options that command has: each command path is
asked for its --help through click (the verb exists), and every option written is
looked up among that command's parameters. Placeholders ([--opt], CAPS) are fine;
a renamed verb or option is not."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from support.docs_commands import COMMANDS, commands_in, options_of, resolve

from testbed.cli import cli


def test_the_pages_show_commands():
    verbs = {words[0] for _, words in COMMANDS if words}
    assert len(COMMANDS) >= 30
    assert {"run", "report", "record", "replay", "validate", "doctor", "export"} <= verbs


@pytest.mark.parametrize("where, words", COMMANDS, ids=[w for w, _ in COMMANDS])
def test_a_documented_command_exists_with_its_options(where, words):
    path, command, rest = resolve(words)
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0, f"{where}: {result.output}"
    known = options_of(command)
    for word in rest:
        if word.startswith("-") and len(word) > 1 and not word[1:2].isdigit():
            option = word.split("=", 1)[0]
            assert option in known, f"{where}: testbed {' '.join(path)} has no option {option}"


@pytest.mark.parametrize("line, expect", [
    (".venv/bin/testbed run x.toml --dry-run && .venv/bin/testbed report r",
     [["run", "x.toml", "--dry-run"], ["report", "r"]]),
    ("docker run --rm -t testbed testbed run smoke --runs 3", [["run", "smoke", "--runs", "3"]]),
    (".venv/bin/testbed replay s --stack tcp -- mm-delay 20 bash", [["replay", "s", "--stack", "tcp"]]),
    ("podman build -t testbed -f docker/Dockerfile .", []),
])
def test_commands_are_found_in_a_line(line, expect):
    assert commands_in(line) == expect


def test_a_wrong_option_or_verb_is_caught():
    with pytest.raises(AssertionError, match="no option --nope"):
        test_a_documented_command_exists_with_its_options("x", ["run", "c.toml", "--nope"])
    with pytest.raises(AssertionError, match="no command 'nosuch'"):
        test_a_documented_command_exists_with_its_options("x", ["nosuch"])
    with pytest.raises(AssertionError, match="no command 'lst'"):
        test_a_documented_command_exists_with_its_options("x", ["recording", "lst"])
