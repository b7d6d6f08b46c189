"""The committed reference data: its report renders with the paper's findings, a verdict
in every row, and REPLICATION.md quotes exactly what the report prints."""

from __future__ import annotations

import re
import time

import pandas as pd
import pytest
from click.testing import CliRunner
from support.paths import ROOT

from analysis.campaign.findings import VERDICTS, load_findings
from analysis.campaign.replication import block, splice
from testbed.cli import cli

REFERENCE = ROOT / "reference"
KEPT = {"README.md", "manifest.json", "trials.sqlite"}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    out = tmp_path_factory.mktemp("reference-report")
    began = time.monotonic()
    done = CliRunner().invoke(cli, ["report", str(REFERENCE), "--out", str(out / "report")])
    assert done.exit_code == 0, done.output
    print(f"reference report rendered in {time.monotonic() - began:.1f} s")
    return out


def test_reference_holds_only_the_small_files():
    assert {p.name for p in REFERENCE.iterdir()} == KEPT
    assert (REFERENCE / "trials.sqlite").stat().st_size < 64 << 20


def test_the_checkpoint_was_measured_with_one_set_of_parts():
    """Every stored trial was measured with the versions of the latest session
    (testbed.campaign.store.versions: the check a resume makes), h3server 0.1.1 among them
    (its quiche's BBR starts pacing as Linux's does: docs/quic-bbr-start.md)."""
    from results_contract.load import load_manifest
    from testbed.campaign.store import versions

    found = load_manifest(REFERENCE)
    assert found is not None
    latest = found.versions
    assert latest["h3server"].startswith("h3server 0.1.1 "), latest["h3server"]
    assert versions.differences(REFERENCE, latest) == []


def test_each_network_of_the_setup_table_has_its_own_figures(rendered):
    """The reference ran DSL and LTE in sessions of their own: the manifest's top level
    holds both (results_contract.manifest), so the setup table's DSL row shows DSL's
    profile and calibration, not None."""
    from analysis.report.setup import networks_table
    from results_contract.load import load_manifest

    found = load_manifest(REFERENCE)
    assert found is not None and found.schema_version == 2
    assert {n for s in found.sessions for n in s.networks} == {"dsl", "lte"}
    table = networks_table(found).set_index("network")
    dsl, lte = table.loc["dsl"], table.loc["lte"]
    assert dsl["buffer (ms)"] == 12 and dsl["min RTT (ms)"] == 24
    assert dsl["downlink (Mbit/s)"] == 25 and dsl["uplink (Mbit/s)"] == 5
    assert 23 < dsl["calibrated min RTT (ms)"] < 25 < dsl["calibrated median RTT (ms)"] < 27
    assert lte["min RTT (ms)"] == 74 and 73 < lte["calibrated min RTT (ms)"] < 75
    assert table.notna().all().all(), table
    page = (rendered / "report" / "index.html").read_text(encoding="utf-8")
    setup = page[page.index('id="setup"'):page.index('id="distributions"')]
    assert "None" not in setup
    assert re.search(r"<td>DSL</td>\s*<td>25.0</td>\s*<td>5.0</td>\s*<td>24.0</td>"
                     r"\s*<td>12.0</td>", setup), setup[:3000]


def test_the_report_has_a_verdict_in_every_findings_row(rendered):
    page = (rendered / "report" / "index.html").read_text(encoding="utf-8")
    section = page[page.index('<h2 id="findings">'):page.index('<h2 id="setup">')]
    table = pd.read_csv(rendered / "report" / "tables" / "findings.csv")
    expected = sum(len(f.networks) * len(f.pairs) * len(f.metrics) for f in load_findings())
    assert len(table) == expected == section.count('<tr id="finding-')
    assert table["verdict"].isin(VERDICTS).all()
    shown = re.findall(r'class="verdict-[a-z-]+">([a-z, ]+)</td>', section)
    assert len(shown) == expected and set(shown) <= set(VERDICTS)
    # a row not tested says why
    untested = table[table["verdict"] == "not tested"]
    assert untested["why"].fillna("").str.len().gt(20).all()
    # the campaign lacks MSS: those rows are not tested, naming it
    mss = table[table["network"] == "mss"]
    assert len(mss) and (mss["verdict"] == "not tested").all()
    assert mss["why"].str.contains("MSS").all()


def test_replication_quotes_what_the_report_prints(rendered):
    text = (ROOT / "REPLICATION.md").read_text(encoding="utf-8")
    printed = (rendered / "report" / "findings.md").read_text(encoding="utf-8")
    assert block(text) == printed, "REPLICATION.md is stale: run `make replication`"
    # every figure with a unit outside the block is one the report prints too
    rest = text.replace(block(text), "")
    for number in re.findall(r"[−+-]?\d+(?:\.\d+)?\s?(?:%|ms|RTT)", rest):
        if number.strip() in ("95 %",):  # the intervals' level
            continue
        assert printed_figure(number, printed), \
            f"REPLICATION.md: {number!r} is not in the report's findings"


def printed_figure(number: str, printed: str) -> bool:
    """`number` (a figure with its unit, maybe signed) stands whole in `printed`: not
    inside a longer number ("4 %" is not in "−3.4 %"), and with the same sign when it
    has one (prose may give a size without its sign: "3.4 % faster")."""
    signed = number[0] in "−+-"
    before = r"(?<![\d.])" if signed else r"(?<![\d.])[−+-]?"
    return re.search(before + re.escape(number) + r"(?![\d])", printed) is not None


def test_a_figure_is_found_whole_and_with_its_sign():
    printed = "QUIC vs TCP+ −3.4 % [−6.3, −0.5]; SI +26 ms; 2.44 RTT"
    assert printed_figure("−3.4 %", printed) and printed_figure("3.4 %", printed)
    assert printed_figure("+26 ms", printed) and printed_figure("2.44 RTT", printed)
    assert not printed_figure("4 %", printed)  # inside −3.4 %
    assert not printed_figure("+3.4 %", printed)  # the other sign
    assert not printed_figure("−26 ms", printed) and not printed_figure("6 ms", printed)
    assert not printed_figure("44 RTT", printed)


def test_splice_replaces_only_the_block():
    text = (ROOT / "REPLICATION.md").read_text(encoding="utf-8")
    again = splice(text, "new\n")
    assert block(again) == "new\n"
    assert again.split("<!-- findings")[0] == text.split("<!-- findings")[0]
    with pytest.raises(ValueError):
        block("no markers")


def test_the_dsl_quic_row_is_shown_on_all_pages_and_on_pages_like_the_papers(rendered):
    printed = (rendered / "report" / "findings.md").read_text(encoding="utf-8")
    sizes = [ln for ln in printed.splitlines()
             if ln.startswith("| quic-vs-tcp-plus | DSL | QUIC vs TCP+ · PLT | ")
             and ("| all |" in ln or "| ≤ 4 MB |" in ln)]
    assert len(sizes) == 2
    assert "does QUIC beat TCP+ on today's pages under DSL" in sizes[0]
    assert "does the paper's claim hold on pages like the paper's" in sizes[1]
    assert "| 26 |" in sizes[1]  # the corpus pages of 4 MB or less (the store's bytes)
    # the regression says what the store lacks instead of failing
    assert "Per-site regression, DSL, QUIC vs TCP+ · PLT" in printed
    assert "Per-site regression, LTE, QUIC vs TCP+ · PLT" in printed
    assert "machine load: not recorded in this store" in printed
    text = (ROOT / "REPLICATION.md").read_text(encoding="utf-8")
    assert "own connection table (QUIC's busiest" not in text
    assert "pages like the paper's" in text.replace(block(text), "")
