"""What the testbed prints: cleaned strings, durations, ETAs, progress bars, and
tables that are tables on a terminal and plain lines otherwise.

Text printed to a terminal is never a control sequence from a stored or recorded string.

Results folders and recordings come from other people, and root prints their
names, URLs, reasons and manifests. A terminal obeys what such a string may
hold: OSC 52 writes the clipboard, OSC 8 makes links, CSI moves the cursor and
erases lines, DCS talks to the terminal itself. So every string printed goes
through `clean` (ECMA-48: escape sequences, C0 controls except tab, DEL and C1
controls removed, a sequence's parameters with it; and Unicode's bidirectional
controls, which reorder what a line shows), and rich gets it as
plain `Text`, never as markup:

    click.echo(console.clean(value))
    Console().print(console.text(value))     # or markup=False

Everything long shows the same progress: on a terminal a bar (`progress_bar`),
otherwise one line per step with the time left from `Eta`; every duration
reads as `duration` writes it ("1 min 15 s", "3 h 01 min", "2 d 4 h 00 min").
A table (`table_or_lines`) is a rich table on a terminal and, off one (a log, a
pipe, CI), one line per row: `header: value` pairs separated by tabs, each
value on one line and in full (`plain_line`), so a row can be found with grep.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

_SEQUENCE = re.compile(
    r"""
      (?:\x1b\]|\x9d) [^\x07\x1b\x9c]* (?:\x07|\x1b\\|\x9c)?        # OSC ... BEL or ST
    | (?:\x1b[PX^_]|[\x90\x98\x9e\x9f]) [^\x1b\x9c]* (?:\x1b\\|\x9c)?  # DCS, SOS, PM, APC ... ST
    | (?:\x1b\[|\x9b) [\x30-\x3f]* [\x20-\x2f]* [\x40-\x7e]?          # CSI params final
    | \x1b [\x20-\x2f]* [\x30-\x7e]?                                  # any other escape
    """, re.VERBOSE)
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069]")
"""C0 except tab, DEL, C1: what is left after the sequences (a lone ESC too); and
Unicode's bidirectional controls (marks, embeddings, overrides, isolates), with which
a name shows its characters in another order than they are (U+202E: "txt.exe")."""


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


def one_line(value: object) -> str:
    """`value` cleaned and on one line: runs of white space (line breaks, tabs) folded
    into one space."""
    return clean(" ".join(str(value).split()))


def plain_line(pairs: Iterable[tuple[str, str]]) -> str:
    """One row off a terminal: `header: value` pairs separated by tabs, each value on one
    line; empty values left out."""
    return "\t".join(f"{h}: {one_line(v)}" for h, v in pairs if v)


def table_or_lines(console: Console, table: Callable[[], Table],
                   lines: Callable[[], Iterable[str]]) -> None:
    """The table on a terminal; otherwise the plain lines (plain_line), one per row."""
    if console.is_terminal:
        console.print(table())
    else:
        console.file.write("".join(f"{line}\n" for line in lines()))


def duration(seconds: float) -> str:
    """A duration as the testbed writes one: "1 min 15 s", "3 h 01 min", "2 d 4 h 00 min"."""
    s = max(0, round(seconds))
    if s >= 86400:
        return f"{s // 86400} d {s // 3600 % 24} h {s // 60 % 60:02d} min"
    if s >= 3600:
        return f"{s // 3600} h {s // 60 % 60:02d} min"
    return f"{s // 60} min {s % 60:02d} s"


class Eta:
    """Steps done out of `total`; `step()` after each one returns the time left (mean
    time per step so far times the steps left), as `duration` writes it."""

    def __init__(self, total: int, clock: Callable[[], float] = time.monotonic):
        self.total, self.done, self.clock, self.t0 = total, 0, clock, clock()

    def step(self) -> str:
        self.done += 1
        per = (self.clock() - self.t0) / self.done
        return duration(per * (self.total - self.done))


def progress_bar(console: Console, label: str, *, counts: str = "", spinner: bool = False,
                 disable: bool | None = None) -> Progress:
    """A bar with how many steps of how many, the time so far and the ETA; `label` and
    `counts` are rich column formats ("record {task.fields[site]}"). Drawn only on a
    terminal (disable: None)."""
    columns: list[ProgressColumn] = [SpinnerColumn()] if spinner else []
    columns += [TextColumn(label), BarColumn(), MofNCompleteColumn()]
    columns += [TextColumn(counts)] if counts else []
    columns += [TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn()]
    return Progress(*columns, console=console, transient=False,
                    disable=not console.is_terminal if disable is None else disable)


def rows_table(console: Console, headers: Sequence[str], rows: Sequence[Sequence[str]],
               title: str = "", right: Iterable[str] = ()) -> None:
    """Rows of strings under `headers` (the columns in `right` right-justified): a table
    on a terminal, plain lines otherwise."""
    right = set(right)

    def table() -> Table:
        t = Table(title=text(title) if title else None, title_justify="left")
        for h in headers:
            t.add_column(h, justify="right" if h in right else "left", overflow="fold")
        for r in rows:
            t.add_row(*(text(c) for c in r))
        return t

    table_or_lines(console, table, lambda: (plain_line(zip(headers, r)) for r in rows))
