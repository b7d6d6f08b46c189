"""Click groups of the command line: help that keeps each command's whole first
sentence, and a group whose commands are imported only when they run (so
`testbed doctor` does not pay for mitmproxy or pandas)."""

from __future__ import annotations

import importlib

import click


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
        return getattr(importlib.import_module(module), attr)
