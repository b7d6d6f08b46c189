"""The one verdict type and renderer of the validations and the doctor. Pure."""

from __future__ import annotations

import io

from rich.console import Console

from testbed.validate import verdict
from testbed.validate.verdict import Row

COLUMNS = (verdict.column("property", "name"), verdict.column("expected", "expected"),
           verdict.column("observed", "observed"), verdict.verdict())
ROWS = [Row("congestion control", "cubic", "cubic (12 samples)", True, group="tcp"),
        Row("initial window", "10 segments", "14 segments", False, group="tcp"),
        Row("send buffer", "kernel autotuning", "46080 bytes", None, group="tcp"),
        Row("max UDP payload", "1350 bytes", "1350 bytes", True, group="quic")]


def console(terminal: bool, width: int = 100) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=terminal, width=width, color_system=None), out


def test_a_row_fails_only_when_checked_false_and_required():
    assert verdict.all_ok([Row("a", ok=True), Row("b", ok=None)])
    assert not verdict.all_ok([Row("a", ok=True), Row("b", ok=False)])
    assert verdict.all_ok([Row("info", ok=False, required=False)])
    assert [r.name for r in verdict.failed(ROWS)] == ["initial window"]


def test_verdict_words():
    assert [verdict.YES_NO.word(x) for x in (True, False, None)] == ["yes", "NO", "-"]
    assert [verdict.PASS_FAIL.word(x) for x in (True, False, None)] == ["PASS", "FAIL", "INFO"]
    assert verdict.PASS_FAIL.style(False) == "bold red"


def test_plain_lines_are_one_per_row_with_every_cell_in_full():
    lines = verdict.lines(ROWS, COLUMNS, "Protocol settings\nunder lte", group="setting")
    assert lines[:2] == ["Protocol settings", "under lte"]
    assert lines[3] == ("setting: tcp\tproperty: initial window\texpected: 10 segments\t"
                        "observed: 14 segments\tok: NO")
    assert all(line.startswith("setting: tcp\t") for line in lines[2:5])
    assert lines[5].startswith("setting: quic\t") and len(lines) == 6


def test_plain_lines_leave_out_empty_cells_and_keep_one_line():
    cols = (*COLUMNS, verdict.column("hint", "hint"))
    (line,) = verdict.lines([Row("x", observed="two\nlines", ok=None)], cols)
    assert line == "property: x\tobserved: two lines\tok: -"


def test_render_off_a_terminal_writes_the_plain_lines_unwrapped():
    long = Row("median RTT (ms)", "25.20", "25.30 (starts 25.19..25.37; all probes 25.29) " * 3,
               True)
    c, out = console(terminal=False, width=40)
    verdict.render(c, [long], COLUMNS, "title [not markup]")
    assert out.getvalue().splitlines() == ["title [not markup]",
                                           *verdict.lines([long], COLUMNS)]
    assert "\x1b[" not in out.getvalue()


def test_render_on_a_terminal_draws_a_table_with_groups_shown_once():
    c, out = console(terminal=True)
    verdict.render(c, ROWS, COLUMNS, "Protocol settings", group="setting")
    text = out.getvalue()
    assert "┃ setting " in text and "┃ property " in text and " ok ┃" in text
    body = [line for line in text.splitlines() if line.startswith("│")]
    assert sum(" tcp " in line for line in body) == 1  # the group once, at its first row
    assert sum(" quic " in line for line in body) == 1
    assert any(line.startswith("├") for line in text.splitlines())  # a line between groups
    for word in ("yes", "NO", " - "):
        assert word in text


def test_table_cells_are_text_not_markup():
    c, out = console(terminal=True)
    verdict.render(c, [Row("[red]x[/red]", observed="[bold]y", ok=True)], COLUMNS)
    assert "[red]x[/red]" in out.getvalue() and "[bold]y" in out.getvalue()


def test_figures_fill_columns_of_their_own():
    cols = (verdict.column("size", "name", "right"), verdict.figure("tcp (h2)", 0),
            verdict.figure("quic (h3)", 1), verdict.column("gap", "observed", "right"),
            verdict.verdict("|gap| <= 5%", "center"))
    row = Row("10 KB", "|gap| <= 5%", "-2.0%", True, figures=("15.30", "15.00"))
    assert verdict.lines([row], cols) == [
        "size: 10 KB\ttcp (h2): 15.30\tquic (h3): 15.00\tgap: -2.0%\t|gap| <= 5%: yes"]
    c, out = console(terminal=True)
    verdict.render(c, [row], cols)
    (line,) = [x for x in out.getvalue().splitlines() if "10 KB" in x]
    assert [x.strip() for x in line.strip("│").split("│")] == [
        "10 KB", "15.30", "15.00", "-2.0%", "yes"]


def test_folded_cells_are_not_cut():
    c, out = console(terminal=True, width=60)
    detail = "available (reno bbr cubic); host default bbr, every protocol setting sets its own"
    cols = (verdict.column("capability", "name"), verdict.verdict("status", "left"),
            verdict.column("detail", "observed"))
    verdict.render(c, [Row("BBR and CUBIC", observed=detail, ok=True)], cols,
                   words=verdict.PASS_FAIL, fold=True)
    cells = "".join(line.split("│")[3] for line in out.getvalue().splitlines()
                    if line.startswith("│"))
    assert "".join(cells.split()) == "".join(detail.split())
    assert "PASS" in out.getvalue() and "…" not in out.getvalue()
