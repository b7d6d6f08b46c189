"""Every `testbed ...` command shown in a fenced code block of README.md or docs/*.md
names a command that exists, with options that command has: each command path is
asked for its --help through click (the verb exists), and every option written is
looked up among that command's parameters. Placeholders ([--opt], CAPS) are fine;
a renamed verb or option is not."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from testbed.cli import cli

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^ *```[^\n]*\n(.*?)^ *```", re.MULTILINE | re.DOTALL)
SEPARATORS = {"&&", "||", ";", "|"}


def _lines(text: str) -> list[str]:
    """The code blocks' lines, continuations joined and comments dropped."""
    out = []
    for block in FENCE.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #", 1)[0].strip()
            if line and not line.startswith("#"):
                out.append(line)
    return out


def _commands(line: str) -> list[list[str]]:
    """Each `testbed ...` in the line as its words (up to `--`, a pipe or `&&`).
    `.venv/bin/testbed` is always one; a bare `testbed` (a container image's name
    too) only when a verb or a global option follows."""
    try:
        words = shlex.split(line.replace("[", " ").replace("]", " "))
    except ValueError:
        words = line.split()
    found = []
    for i, w in enumerate(words):
        if w != "testbed" and not w.endswith("/bin/testbed"):
            continue
        rest = []
        for word in words[i + 1:]:
            if word in SEPARATORS or word == "--":
                break
            rest.append(word)
        explicit = w.endswith("/bin/testbed")
        if explicit or (rest and (rest[0] in cli.lazy or rest[0] == "--recordings")):
            found.append(rest)
    return found


def _all() -> list[tuple[str, list[str]]]:
    out = []
    for page in PAGES:
        for line in _lines(page.read_text(encoding="utf-8")):
            for words in _commands(line):
                out.append((f"{page.relative_to(ROOT)}: testbed {' '.join(words)}", words))
    return out


COMMANDS = _all()


def _options(command: click.Command) -> set[str]:
    return {o for p in command.params for o in (*p.opts, *p.secondary_opts)}


def _resolve(words: list[str]) -> tuple[list[str], click.Command, list[str]]:
    """(command path, the command, the words after it); global options skipped."""
    ctx = click.Context(cli)
    words = list(words)
    while words and words[0] == "--recordings":
        words = words[2:]
    path: list[str] = []
    command: click.Command = cli
    while isinstance(command, click.Group):
        assert words, f"testbed {' '.join(path)}: expected a command after it"
        sub = command.get_command(ctx, words[0])
        assert sub is not None, f"testbed {' '.join(path)}: no command {words[0]!r}"
        path.append(words.pop(0))
        command = sub
    return path, command, words


def test_the_pages_show_commands():
    verbs = {words[0] for _, words in COMMANDS if words}
    assert len(COMMANDS) >= 30
    assert {"run", "report", "record", "replay", "validate", "doctor", "export"} <= verbs


@pytest.mark.parametrize("where, words", COMMANDS, ids=[w for w, _ in COMMANDS])
def test_a_documented_command_exists_with_its_options(where, words):
    path, command, rest = _resolve(words)
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0, f"{where}: {result.output}"
    known = _options(command)
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
    assert _commands(line) == expect


def test_a_wrong_option_or_verb_is_caught():
    with pytest.raises(AssertionError, match="no option --nope"):
        test_a_documented_command_exists_with_its_options("x", ["run", "c.toml", "--nope"])
    with pytest.raises(AssertionError, match="no command 'nosuch'"):
        test_a_documented_command_exists_with_its_options("x", ["nosuch"])
    with pytest.raises(AssertionError, match="no command 'lst'"):
        test_a_documented_command_exists_with_its_options("x", ["recording", "lst"])
