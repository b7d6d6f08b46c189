"""testbed.console: what reaches a terminal holds no control sequence of someone else's."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from testbed.console import clean, clean_lines, text


@pytest.mark.parametrize("raw, shown", [
    ("a\x1b]52;c;SGVsbG8=\x07b", "ab"),              # OSC 52 (clipboard), BEL-terminated
    ("a\x1b]8;;http://x.test\x1b\\link\x1b]8;;\x1b\\", "alink"),  # OSC 8, ST-terminated
    ("a\x9d0;title\x9cb", "ab"),                     # C1 OSC ... C1 ST
    ("a\x1b[2J\x1b[1;31mb", "ab"),                   # CSI: erase, colour
    ("a\x9b31mb", "ab"),                             # C1 CSI
    ("a\x1bPq#0;2;0;0;0\x1b\\b", "ab"),              # DCS (sixel)
    ("a\x1bcb\x1b(Bc", "abc"),                       # RIS, charset designation
    ("a\x00\x07\x08\r\nb\x7f", "ab"),                # C0 and DEL
    ("a\tb", "a\tb"),                                # tab stays
    ("[bold]é – 日本\x1b", "[bold]é – 日本"),         # text as it is; a lone ESC goes
    ("a\x1b]52;c;unterminated", "a"),               # an OSC never ended takes the rest
])
def test_clean_removes_every_control_sequence(raw, shown):
    assert clean(raw) == shown


def test_clean_lines_keeps_line_breaks_only():
    assert clean_lines("a\x1b[31m\nb\r\x07") == "a\nb"


def test_text_is_never_markup():
    out = io.StringIO()
    Console(file=out, force_terminal=False, width=80).print(text("[bold]x[/bold]\x1b]52;c;x\x07"))
    assert out.getvalue() == "[bold]x[/bold]\n"
