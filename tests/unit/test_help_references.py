"""Every page `--help` points at exists: each command's and group's help is read (the
whole tree of `testbed`, its lazily loaded commands too), and each reference in it
(`README, "Section"`, `docs/page.md`, `docs/page.md, "Section"`, `docs/page.md#anchor`)
names a file of the checkout and, where it names a section, a heading of that file."""

from __future__ import annotations

import re

import click
import pytest
from support.paths import ROOT

from testbed.cli import cli

REFERENCE = re.compile(
    r"(?P<file>README(?:\.md)?|docs/[\w.-]+\.md)"
    r"(?:#(?P<anchor>[\w-]+)|,\s*\"(?P<title>[^\"]+)\")?")
"""A page named in help text, with its section as a quoted heading or an anchor."""


def commands(group: click.Command = cli, path: tuple[str, ...] = ("testbed",)):
    """(path, command) of `testbed` and every command under it, groups included."""
    yield path, group
    if isinstance(group, click.Group):
        ctx = click.Context(group, info_name=path[-1])
        for name in group.list_commands(ctx):
            sub = group.get_command(ctx, name)
            if sub is not None:
                yield from commands(sub, (*path, name))


def help_text(path: tuple[str, ...], command: click.Command) -> str:
    """What `testbed ... --help` prints, on one line (help wraps at any space)."""
    parent = None
    for name in path[:-1]:
        parent = click.Context(cli, info_name=name, parent=parent)
    ctx = click.Context(command, info_name=path[-1], parent=parent, terminal_width=10_000)
    return " ".join(command.get_help(ctx).split())


def headings(text: str) -> set[str]:
    """A Markdown page's headings, as written (backticks dropped) and as MkDocs' anchors."""
    titles = {m.group(1).replace("`", "").strip()
              for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, re.MULTILINE)}
    return titles | {slug(t) for t in titles}


def slug(title: str) -> str:
    """MkDocs' (Python-Markdown toc's) default anchor of a heading."""
    text = re.sub(r"[^\w\s-]", "", title).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def references(text: str) -> list[tuple[str, str | None]]:
    return [(m["file"], m["anchor"] or m["title"]) for m in REFERENCE.finditer(text)]


def broken(ref: tuple[str, str | None]) -> str | None:
    """Why the reference leads nowhere (None: it resolves)."""
    name, section = ref
    page = ROOT / ("README.md" if name.startswith("README") else name)
    if not page.is_file():
        return f"no file {page.relative_to(ROOT)}"
    if section is not None and section.replace("`", "") not in headings(page.read_text()):
        return f"no section {section!r} in {page.relative_to(ROOT)}"
    return None


ALL = list(commands())


def test_the_walk_reaches_every_command_and_the_references_are_found():
    names = {" ".join(p) for p, _ in ALL}
    assert {"testbed", "testbed trials", "testbed cluster certs", "testbed recording show",
            "testbed compare"} <= names
    text = ('see README, "Reading the report" and docs/clusters.md; '
            'docs/results.md#the-store and docs/firefox.md, "Warm visits".')
    assert references(text) == [("README", "Reading the report"), ("docs/clusters.md", None),
                                ("docs/results.md", "the-store"),
                                ("docs/firefox.md", "Warm visits")]
    assert broken(("README", "Reading the report")) is None
    assert broken(("README", "On several machines (Dask)")) is not None
    assert broken(("docs/nope.md", None)) == "no file docs/nope.md"


@pytest.mark.parametrize("path,command", ALL, ids=[" ".join(p) for p, _ in ALL])
def test_every_reference_in_help_exists(path, command):
    text = help_text(path, command)
    bad = {f"{file} {section or ''}".strip(): why
           for file, section in references(text) if (why := broken((file, section)))}
    assert not bad, f"{' '.join(path)} --help: {bad}"
