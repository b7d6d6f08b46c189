"""Text printed to a terminal: never a control sequence from a stored or recorded string.

Results folders and recordings come from other people, and root prints their
names, URLs, reasons and manifests. A terminal obeys what such a string may
hold: OSC 52 writes the clipboard, OSC 8 makes links, CSI moves the cursor and
erases lines, DCS talks to the terminal itself. So every string printed goes
through `clean` (ECMA-48: escape sequences, C0 controls except tab, DEL and C1
controls removed; a sequence's parameters go with it), and rich gets it as
plain `Text`, never as markup:

    click.echo(console.clean(value))
    Console().print(console.text(value))     # or markup=False
"""

from __future__ import annotations

import re

from rich.text import Text

_SEQUENCE = re.compile(
    r"""
      (?:\x1b\]|\x9d) [^\x07\x1b\x9c]* (?:\x07|\x1b\\|\x9c)?        # OSC ... BEL or ST
    | (?:\x1b[PX^_]|[\x90\x98\x9e\x9f]) [^\x1b\x9c]* (?:\x1b\\|\x9c)?  # DCS, SOS, PM, APC ... ST
    | (?:\x1b\[|\x9b) [\x30-\x3f]* [\x20-\x2f]* [\x40-\x7e]?          # CSI params final
    | \x1b [\x20-\x2f]* [\x30-\x7e]?                                  # any other escape
    """, re.VERBOSE)
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")
"""C0 except tab, DEL, C1: what is left after the sequences (a lone ESC too)."""


def clean(text: object) -> str:
    """`text` (str() of it) without escape sequences or control characters but tab:
    safe to print on one terminal line."""
    return _CONTROL.sub("", _SEQUENCE.sub("", str(text)))


def clean_lines(text: str) -> str:
    """`text`'s lines, each cleaned (the line breaks kept)."""
    return "\n".join(clean(line) for line in str(text).split("\n"))


def echo(line: object) -> None:
    """Print a line that may hold someone else's strings, control sequences removed."""
    import click

    click.echo(clean(line))


def text(value: object, style: str = "") -> Text:
    """A cleaned string as rich Text: shown as it is, never parsed as markup."""
    return Text(clean(value), style=style)
