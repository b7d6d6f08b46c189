"""One verdict type and one renderer for every check the testbed makes on itself:
`testbed validate network|protocols|servers` and `testbed doctor`.

A Row is one property: what was expected, what was observed, and the verdict
(ok: True, False, or None for a row shown and not checked). Each command picks
the columns it shows (Column: a header and how a row fills it) and the words
its verdicts read as (yes / NO / - for the validations, PASS / FAIL / INFO for
the doctor).

render() draws a table on a terminal and writes one plain line per row
otherwise (a log, a pipe, CI): every cell in full, `header: value` pairs
separated by tabs, so that nothing is cut off or wrapped and a row can be
found with grep.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Literal

from rich.console import Console
from rich.table import Table
from rich.text import Text

from testbed.console import clean, clean_lines, plain_line, table_or_lines


@dataclass(frozen=True)
class Row:
    name: str
    """The property (or capability) checked."""
    expected: str = ""
    observed: str = ""
    ok: bool | None = None
    """True: as expected; False: not; None: shown for information, not checked."""
    tolerance: str = ""
    hint: str = ""
    """What to do about a failure."""
    group: str = ""
    """The setting or profile the row belongs to, when one table shows several."""
    required: bool = True
    """A failed row that is not required does not fail the check."""
    figures: tuple[str, ...] = ()
    """Further observed figures, each in a column of its own (e.g. one per stack)."""


def json_row(row: Row, words: Words | None = None) -> dict:
    """A row as a check's `--json` gives it: every field, and the verdict as a word."""
    return {**asdict(row), "verdict": (words or YES_NO).word(row.ok)}


def failed(rows: Sequence[Row]) -> list[Row]:
    """The rows that fail their check."""
    return [r for r in rows if r.ok is False and r.required]


def all_ok(rows: Sequence[Row]) -> bool:
    return not failed(rows)


@dataclass(frozen=True)
class Words:
    """How the verdicts read, and their colours in a table."""

    ok: str
    failed: str
    shown: str
    styles: tuple[str, str, str] = ("green", "red", "")

    def word(self, ok: bool | None) -> str:
        return {True: self.ok, False: self.failed, None: self.shown}[ok]

    def style(self, ok: bool | None) -> str:
        return {True: self.styles[0], False: self.styles[1], None: self.styles[2]}[ok]


YES_NO = Words("yes", "NO", "-")
PASS_FAIL = Words("PASS", "FAIL", "INFO", ("green", "bold red", "cyan"))

Justify = Literal["left", "center", "right"]


@dataclass(frozen=True)
class Column:
    header: str
    cell: Callable[[Row], str] | None = None
    """The text of a row in this column; None: the row's verdict."""
    justify: Justify = "left"


def column(header: str, field: str, justify: Justify = "left") -> Column:
    """A column showing one field of each row."""
    return Column(header, lambda r: str(getattr(r, field)), justify)


def figure(header: str, index: int, justify: Justify = "right") -> Column:
    """A column showing one of each row's further figures."""
    return Column(header, lambda r: r.figures[index], justify)


def verdict(header: str = "ok", justify: Justify = "right") -> Column:
    return Column(header, None, justify)


def render(console: Console, rows: Sequence[Row], columns: Sequence[Column], title: str = "",
           *, words: Words = YES_NO, group: str = "", fold: bool = False) -> None:
    """Print the rows: a table on a terminal, plain lines otherwise.

    group: a header for a first column naming each row's group (shown once per
    group in a table, with a line between groups; on every plain line).
    fold: fold long cells onto more lines instead of cutting them (tables only).
    """
    table_or_lines(console, lambda: table(rows, columns, title, words=words, group=group,
                                          fold=fold),
                   lambda: lines(rows, columns, title, words=words, group=group))


def table(rows: Sequence[Row], columns: Sequence[Column], title: str = "", *,
          words: Words = YES_NO, group: str = "", fold: bool = False) -> Table:
    t = Table(title=Text(title) if title else None, title_justify="left")
    overflow: Literal["fold", "ellipsis"] = "fold" if fold else "ellipsis"
    if group:
        t.add_column(group, overflow=overflow)
    for c in columns:
        t.add_column(c.header, justify=c.justify, overflow=overflow)
    previous = None
    for r in rows:
        if group and previous is not None and r.group != previous:
            t.add_section()
        cells = [Text(clean(r.group) if r.group != previous else "")] if group else []
        cells += [_cell(r, c, words, styled=True) for c in columns]
        t.add_row(*cells)
        previous = r.group
    return t


def lines(rows: Sequence[Row], columns: Sequence[Column], title: str = "", *,
          words: Words = YES_NO, group: str = "") -> list[str]:
    """The plain-text rendering: the title, then one line per row."""
    out = title.splitlines() if title else []
    for r in rows:
        pairs = [(group, r.group)] if group else []
        pairs += [(c.header, _cell(r, c, words, styled=False).plain) for c in columns]
        out.append(plain_line(pairs))
    return out


def _cell(r: Row, c: Column, words: Words, styled: bool) -> Text:
    if c.cell is None:
        return Text(words.word(r.ok), style=words.style(r.ok) if styled else "")
    return Text(clean_lines(c.cell(r)))
