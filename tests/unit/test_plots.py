"""analysis.figures.plots: names from someone's results are drawn as written, never as mathtext."""

from __future__ import annotations

import pandas as pd

from analysis.figures.bbr import effects_figure
from analysis.figures.plots import cdf_row_figure, plot_label, save

NAMES = ["$x^2$", "a$b", "$\\frac$", "cost $5 and $6"]


def test_plot_label_escapes_every_dollar():
    assert plot_label("$x^2$") == "\\$x^2\\$"
    assert plot_label("tcp-plus") == "TCP+"  # the display label, nothing to escape
    assert plot_label("a\x1b]52;c;x\x07") == "a\ufffd]52;c;x\ufffd"  # no glyph, no warning


def test_dollar_names_are_drawn_literally(tmp_path):
    rel = pd.DataFrame([{"network": n, "site": f"s{i}", "setting": p, "metric": "plt",
                         "rel": 0.01 * i * (1 if p == "quic" else -1)}
                        for n in NAMES for p in ("quic", "$p$") for i in range(3)])
    files = save(cdf_row_figure(rel, "plt", NAMES, "tcp"), tmp_path, "cdf", formats=("svg",))
    svg = (tmp_path / files["svg"]).read_text()
    for name in (*NAMES, "$p$"):
        assert name in svg


def test_bbr_figure_draws_dollar_networks(tmp_path):
    effects = pd.DataFrame([{"stack": "tcp", "network": "$x^2$", "rel": 0.1, "page_bytes": 1e5,
                             "largest_bytes": 1e4, "rtt_ms": 20.0, "loss_percent": 0.0}])
    files = save(effects_figure(effects), tmp_path, "bbr", formats=("svg",))
    assert "TCP · $x^2$" in (tmp_path / files["svg"]).read_text()
