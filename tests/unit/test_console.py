"""testbed.console: what reaches a terminal holds no control sequence of someone else's."""

from __future__ import annotations

import io
import os
import subprocess

import pytest
from rich.console import Console
from support.paths import TESTBED

from testbed.console import (
    Eta,
    clean,
    clean_lines,
    duration,
    progress_bar,
    rows_table,
    text,
)


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


BIDI = "\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
"""Unicode's bidirectional controls: marks, embeddings, overrides, isolates."""


@pytest.mark.parametrize("control", BIDI)
def test_clean_removes_bidirectional_controls(control):
    # U+202E shows "exe.txt" for "txt.exe": a name that reads as another one
    assert clean(f"rec{control}gpj.exe") == "recgpj.exe"


def test_clean_keeps_right_to_left_text_itself():
    assert clean("\u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627") == \
        "\u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627"


def test_recording_show_prints_no_bidirectional_control(tmp_path):
    """The command line, as anyone runs it: a recording's name and URL reach the
    terminal without the controls that reorder what it shows."""
    from testbed.formats import recording

    meta = {"name": "rec", "url": f"https://www.a.test/{BIDI}x", "recorded_at": "2026",
            "loads": 1, "chromium_version": f"1{BIDI}"}
    x = {"scheme": "https", "host": "www.a.test", "port": 443, "ip": "203.0.113.5",
         "method": "GET", "target": "/", "request_headers": [["user-agent", "x"]],
         "status": 200, "response_headers": [["content-type", "text/html"]]}
    recording.write(tmp_path, meta, [(x, b"<html></html>")])
    cp = subprocess.run([TESTBED, "recording", "show", tmp_path / "rec"], capture_output=True,
                        text=True, check=False, timeout=60, env={**os.environ, "COLUMNS": "200"})
    assert cp.returncode == 0, cp.stderr
    assert "https://www.a.test/x" in cp.stdout
    assert not set(BIDI) & set(cp.stdout + cp.stderr)


def test_clean_lines_keeps_line_breaks_only():
    assert clean_lines("a\x1b[31m\nb\r\x07") == "a\nb"


def test_text_is_never_markup():
    out = io.StringIO()
    Console(file=out, force_terminal=False, width=80).print(text("[bold]x[/bold]\x1b]52;c;x\x07"))
    assert out.getvalue() == "[bold]x[/bold]\n"


@pytest.mark.parametrize("seconds, shown", [
    (0, "0 min 00 s"), (75.4, "1 min 15 s"), (3599.6, "1 h 00 min"), (3 * 3600 + 65, "3 h 01 min"),
    (86400 + 7 * 3600 + 600, "1 d 7 h 10 min"), (-5, "0 min 00 s")])
def test_durations_read_one_way(seconds, shown):
    assert duration(seconds) == shown


def test_eta_is_the_mean_time_per_step_times_the_steps_left():
    now = iter([0.0, 40.0, 50.0])
    eta = Eta(3, clock=lambda: next(now))
    assert eta.step() == "1 min 20 s" and eta.step() == "0 min 25 s"


def test_a_table_on_a_terminal_and_plain_lines_otherwise():
    rows = [["1", "news\tsite", "two\nlines \x1b[2Jx"], ["2", "", "ok"]]
    plain = io.StringIO()
    rows_table(Console(file=plain, force_terminal=False), ["line", "name", "status"], rows)
    assert plain.getvalue().splitlines() == [
        "line: 1\tname: news site\tstatus: two lines x", "line: 2\tstatus: ok"]
    term = io.StringIO()
    rows_table(Console(file=term, force_terminal=True, width=80), ["line", "name", "status"],
               rows, right=["line"])
    drawn = term.getvalue()
    assert drawn.startswith("┏") and "│    2 │" in drawn and "\x1b[2J" not in drawn


def test_the_bar_is_drawn_on_a_terminal_only():
    assert progress_bar(Console(file=io.StringIO(), force_terminal=False), "x").disable
    assert not progress_bar(Console(file=io.StringIO(), force_terminal=True), "x").disable
    assert progress_bar(Console(file=io.StringIO(), force_terminal=True), "x",
                        disable=True).disable
