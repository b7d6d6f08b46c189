"""Click groups of the command line: help that keeps each command's whole first
sentence, and a group whose commands are imported only when they run (so
`testbed doctor` does not pay for mitmproxy or pandas)."""

from __future__ import annotations

import importlib

import click

from testbed.errors import TestbedError


class Group(click.Group):
    """A group whose help lists each command with its whole first sentence."""

    def format_commands(self, ctx, formatter):
        """Each command with its whole first sentence (click cuts them at 45 characters)."""
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(limit=300)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


class LazyGroup(Group):
    """A group whose subcommands are "module:attribute" strings, imported on use; its
    help lists them in the order of `lazy` (the pipeline's)."""

    def __init__(self, *args, lazy: dict[str, str], **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx):
        return list(self.lazy)

    def get_command(self, ctx, name):
        target = self.lazy.get(name)
        if target is None:
            return None
        module, attr = target.split(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except ModuleNotFoundError as e:
            if not is_extra_missing(e):
                raise
            return _not_installed(name, e.name)


def is_extra_missing(e: ModuleNotFoundError) -> bool:
    """Whether the missing module is a third-party one (not the project's own)."""
    return (e.name or "").partition(".")[0] not in ("testbed", "analysis", "results_contract")


def not_installed(missing: str | None) -> str:
    """What to do about a package the analysis-only install (`.[analysis]`) lacks."""
    return (f"not in this install (no module {missing}): pip install '.[measure]' "
            "or `make setup` brings it")


def _not_installed(name: str, missing: str | None) -> click.Command:
    """A stand-in for a command whose packages this install lacks (the analysis-only
    install has no mitmproxy or pydantic): listed in help, says what to install."""
    why = not_installed(missing)

    def fail():
        raise TestbedError(f"testbed {name}: {why}")

    return click.Command(name, callback=fail, help=f"{why[0].upper()}{why[1:]}.",
                         add_help_option=False,
                         context_settings={"ignore_unknown_options": True,
                                           "allow_extra_args": True})
