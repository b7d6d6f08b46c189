"""The `testbed ...` commands shown in README.md's and docs/*.md's code blocks, and how
each resolves to a click command."""

from __future__ import annotations

import re
import shlex

import click

from support.paths import ROOT
from testbed.cli import cli

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


FENCE = re.compile(r"^ *```[^\n]*\n(.*?)^ *```", re.MULTILINE | re.DOTALL)


SEPARATORS = {"&&", "||", ";", "|"}


def code_lines(text: str) -> list[str]:
    """The code blocks' lines, continuations joined and comments dropped."""
    out = []
    for block in FENCE.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #", 1)[0].strip()
            if line and not line.startswith("#"):
                out.append(line)
    return out


def commands_in(line: str) -> list[list[str]]:
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


def documented() -> list[tuple[str, list[str]]]:
    out = []
    for page in PAGES:
        for line in code_lines(page.read_text(encoding="utf-8")):
            for words in commands_in(line):
                out.append((f"{page.relative_to(ROOT)}: testbed {' '.join(words)}", words))
    return out


COMMANDS = documented()


def options_of(command: click.Command) -> set[str]:
    return {o for p in command.params for o in (*p.opts, *p.secondary_opts)}


def resolve(words: list[str]) -> tuple[list[str], click.Command, list[str]]:
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
