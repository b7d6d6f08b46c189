"""Tables of the record commands: aligned on a terminal, plain lines otherwise.

Off a terminal every row is one line of `header: value` pairs separated by
tabs, each cell in full on one line (the convention of
testbed/validate/verdict.py), so that a row can be found with grep.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from testbed.console import clean, text

RIGHT = {"origins", "IPs", "requests", "bytes", "line"}


def plain(pairs: Sequence[tuple[str, str]]) -> str:
    return "\t".join(f"{h}: {_one_line(v)}" for h, v in pairs if v != "")


def render(console: Console, headers: Sequence[str], rows: Sequence[Sequence[str]],
           title: str = "") -> None:
    if console.is_terminal:
        t = Table(title=text(title) if title else None, title_justify="left")
        for h in headers:
            t.add_column(h, justify="right" if h in RIGHT else "left", overflow="fold")
        for r in rows:
            t.add_row(*(text(c) for c in r))
        console.print(t)
    else:
        console.file.write("".join(plain(list(zip(headers, r))) + "\n" for r in rows))


def _one_line(value: str) -> str:
    return clean(value.replace("\t", " ").replace("\r", "\\r").replace("\n", "\\n"))
