"""Labels, order and compared pairs come from profiles/ (results_contract.profiles_meta):
a label renamed or a twin added there reaches the report with no code change; a pair
naming an unknown setting is one line; a store's manifest wins over the checkout."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from analysis import Config, analyse, synthetic
from analysis.report.report import _wtl_pivot
from analysis.statistics.bbr import pairs_in
from analysis.statistics.stats import default_pairs
from results_contract import profiles_meta
from results_contract.manifest import Manifest
from results_contract.schema import label, networks_in, settings_in
from testbed.errors import InputError
from testbed.formats import profiles

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "results"


@pytest.fixture
def mine(tmp_path, monkeypatch):
    """A copy of the checkout's profiles/ that profiles_meta reads instead."""
    folder = tmp_path / "profiles"
    shutil.copytree(profiles_meta.PROFILES_DIR, folder)
    monkeypatch.setattr(profiles_meta, "PROFILES_DIR", folder)
    return folder


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_every_bundled_profile_declares_its_label():
    for kind in ("protocols", "networks"):
        for path in sorted((profiles_meta.PROFILES_DIR / kind).glob("*.toml")):
            assert profiles_meta.is_label(tomllib.loads(path.read_text()).get("label")), path


def test_the_checkout_keeps_the_papers_labels_order_and_pairs():
    meta = profiles_meta.from_profiles()
    assert [label(s) for s in ("tcp", "tcp-plus", "tcp-plus-bbr", "quic", "quic-bbr")] == [
        "TCP", "TCP+", "TCP+BBR", "QUIC", "QUIC+BBR"]
    assert [label(n) for n in ("dsl", "lte", "da2gc", "mss")] == ["DSL", "LTE", "DA2GC", "MSS"]
    assert label("plt") == "PLT" and label("no-such-name") == "no-such-name"
    assert settings_in({"quic-bbr", "zz", "quic", "tcp"}) == ["tcp", "quic", "quic-bbr", "zz"]
    assert networks_in({"verizon-lte-driving", "mss", "dsl"}) == ["dsl", "mss",
                                                                  "verizon-lte-driving"]
    assert meta.baseline == "tcp"
    assert meta.stack_twins == (("tcp-plus", "quic"), ("tcp-plus-bbr", "quic-bbr"))
    assert meta.bbr_pairs() == [("tcp", "tcp-plus-bbr", "tcp-plus"), ("quic", "quic-bbr", "quic")]


def test_a_label_renamed_in_profiles_is_the_reports_label(mine):
    edit(mine / "protocols" / "tcp-plus-bbr.toml", 'label = "TCP+BBR"', 'label = "TCP+ on BBR"')
    edit(mine / "networks" / "dsl.toml", 'label = "DSL"', 'label = "Home DSL"')
    assert label("tcp-plus-bbr") == "TCP+ on BBR" and label("dsl") == "Home DSL"
    trials = synthetic.campaign(sites=3, networks=["dsl"], runs=4, seed=1)
    a = analyse(trials, Config(mixed_metrics=(), resamples=50))
    table = _wtl_pivot(a)
    assert "TCP+ on BBR vs TCP" in set(table["pair"])
    assert "QUIC+BBR vs TCP+ on BBR" in set(table["pair"])
    assert set(table["network"]) == {"Home DSL"}
    assert "TCP+BBR" not in " ".join(table["pair"])


def test_an_added_setting_with_twins_is_compared(mine):
    (mine / "protocols" / "quic-quinn-bbr.toml").write_text(
        'label = "QUIC+BBR (quinn)"\nstack = "quic"\nquic_server = "h3quinn"\n'
        'congestion_control = "bbr"\ninitial_window_packets = 32\npacing = true\n')
    edit(mine / "comparisons.toml", '["quic-bbr", "quic"]]',
         '["quic-bbr", "quic"], ["quic-quinn-bbr", "quic-quinn"]]')
    edit(mine / "comparisons.toml", '["tcp-plus-bbr", "quic-bbr"]]',
         '["tcp-plus-bbr", "quic-bbr"], ["tcp-plus-bbr", "quic-quinn-bbr"]]')
    settings = {"tcp", "tcp-plus-bbr", "quic-quinn", "quic-quinn-bbr"}
    assert pairs_in(settings) == [("quic", "quic-quinn-bbr", "quic-quinn")]
    assert ("quic-quinn-bbr", "tcp-plus-bbr") in default_pairs(settings)
    assert label("quic-quinn-bbr") == "QUIC+BBR (quinn)"
    assert profiles.load_protocol(mine / "protocols" / "quic-quinn-bbr.toml").label == (
        "QUIC+BBR (quinn)")  # the testbed's model takes the key


def test_the_baseline_is_the_profiles(mine):
    edit(mine / "comparisons.toml", 'baseline = "tcp"', 'baseline = "tcp-plus"')
    assert default_pairs({"tcp", "tcp-plus", "quic"}) == [("tcp", "tcp-plus"),
                                                          ("quic", "tcp-plus")]


@pytest.mark.parametrize("old,new,message", [
    ('["quic-bbr", "quic"]]', '["quic-bbrx", "quic"]]',
     ("comparisons.toml: key bbr_twins.1: expected [BBR setting, CUBIC setting] of settings "
     "in ")),
    ('["quic-bbr", "quic"]]', '["quic-bbr", "tcp-plus"]]',
     ("comparisons.toml: key bbr_twins.1: expected [BBR setting, CUBIC setting] of one "
     "stack, got ['quic-bbr', 'tcp-plus'], of stacks quic and tcp")),
    ('[["tcp-plus", "quic"]', '[["quic", "tcp-plus"]',
     ("comparisons.toml: key stack_twins.0: expected [TCP setting, QUIC setting] of stacks "
     "tcp and quic")),
    ('baseline = "tcp"', 'baseline = "tcpx"', ("comparisons.toml: key baseline: expected a "
     "setting of settings in ")),
    ('"mss", "none"]', '"mss", "nonex"]', ("comparisons.toml: key network_order: expected a "
     "list of distinct networks of networks in ")),
    ('baseline = "tcp"', 'baseline = "tcp"\nbasline = "tcp"', ("comparisons.toml: key "
     "basline: unknown key (allowed: setting_order, ")),
])
def test_a_pair_naming_an_unknown_setting_is_one_line(mine, old, new, message):
    edit(mine / "comparisons.toml", old, new)
    with pytest.raises(profiles_meta.ProfilesError) as e:
        profiles_meta.from_profiles()
    assert message in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(InputError) as e2:  # the testbed's: exit 2
        profiles.comparisons()
    assert str(e2.value) == str(e.value) and e2.value.exit_code == 2


def test_report_refuses_bad_comparisons_with_one_line_and_exit_2(mine, tmp_path, capsys,
                                                                 monkeypatch):
    import os

    from testbed import cli

    monkeypatch.setattr(os, "geteuid", lambda: 1000)  # no sweep before the command
    edit(mine / "comparisons.toml", '["quic-bbr", "quic"]]', '["quic-bbr", "quic-nope"]]')
    with pytest.raises(SystemExit) as exit_:
        cli.main(["report", str(FIXTURE), "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert exit_.value.code == 2, err
    assert err.count("\n") == 1 and "comparisons.toml: key bbr_twins.1: expected" in err, err
    assert not (tmp_path / "r" / "index.html").exists()


def test_a_bad_label_is_one_line(mine):
    edit(mine / "protocols" / "quic.toml", 'label = "QUIC"', 'label = ""')
    with pytest.raises(profiles_meta.ProfilesError, match=r"protocols/quic.toml: key label: "
                       r"expected text of 1 to 40 printable characters, no space at "
                       r"either end, got ''"):
        profiles_meta.from_profiles()


def test_a_store_shows_what_its_manifest_recorded():
    recorded = profiles_meta.from_profiles().with_profiles(
        {"tcp": "Linux TCP", "mine": "Mine"}, {"dsl": "xDSL"}, {"mine": "quic"}).to_json()
    recorded["stack_twins"] = [["tcp-plus", "mine"]]
    meta = profiles_meta.from_manifest({"profiles_meta": recorded})
    assert meta.stack_twins == (("tcp-plus", "mine"),)
    with profiles_meta.using(meta):
        assert (label("tcp"), label("mine"), label("dsl"), label("quic")) == (
            "Linux TCP", "Mine", "xDSL", "QUIC")
        assert default_pairs({"tcp", "tcp-plus", "mine"}) == [
            ("tcp-plus", "tcp"), ("mine", "tcp"), ("mine", "tcp-plus")]
    assert label("tcp") == "TCP"  # outside the block: the checkout's again
    assert profiles_meta.from_manifest({"sessions": []}) == profiles_meta.from_profiles()
    assert profiles_meta.from_manifest(None) == profiles_meta.from_profiles()


def test_analyse_and_the_report_use_the_manifests_labels(tmp_path):
    recorded = profiles_meta.from_profiles().with_profiles({"quic": "IETF QUIC"}, {},
                                                           {}).to_json()
    trials = synthetic.campaign(sites=3, networks=["dsl"], runs=4, seed=1)
    manifest = Manifest(schema_version=2, profiles_meta=recorded)
    a = analyse(trials, Config(mixed_metrics=(), resamples=50), manifest=manifest)
    assert a.profiles is not None and a.profiles.label("quic") == "IETF QUIC"
    with profiles_meta.using(a.profiles):
        assert "IETF QUIC vs TCP" in set(_wtl_pivot(a)["pair"])


@pytest.mark.parametrize("change,message", [
    ({"bbr_twins": [["quic-bbr", "nope"]]}, ("manifest.json: key profiles_meta.bbr_twins.0: "
     "expected [BBR setting, CUBIC setting] of the settings of setting_labels")),
    ({"setting_labels": {"tcp": 5}}, ("manifest.json: key profiles_meta.setting_labels: "
     "expected an object of names -> labels")),
    ({"extra": 1}, "manifest.json: key profiles_meta.extra: unknown key"),
])
def test_a_hostile_manifest_record_is_one_line(change, message):
    recorded = {**profiles_meta.from_profiles().to_json(), **change}
    with pytest.raises(profiles_meta.ProfilesError) as e:
        profiles_meta.from_manifest({"profiles_meta": recorded})
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


def test_a_campaign_records_its_own_profiles_labels(tmp_path):
    own = tmp_path / "mine.toml"
    own.write_text('label = "My TCP"\nstack = "tcp"\ncongestion_control = "reno"\n'
                   'initial_window_packets = 10\npacing = false\n')
    unlabelled = tmp_path / "bare.toml"
    unlabelled.write_text('stack = "quic"\ncongestion_control = "cubic"\n'
                          'initial_window_packets = 10\npacing = true\n')
    record = profiles.meta_record({"dsl": profiles.load_network("dsl")},
                                  {"mine": profiles.load_protocol(own),
                                   "bare": profiles.load_protocol(unlabelled)})
    meta = profiles_meta.ProfilesMeta.from_json(record, "manifest.json: key profiles_meta")
    assert meta.setting_labels["mine"] == "My TCP" and meta.stacks["mine"] == "tcp"
    assert meta.setting_labels["bare"] == "bare"  # no label: its name
    assert meta.setting_labels["tcp-plus"] == "TCP+" and meta.network_labels["dsl"] == "DSL"
    assert meta.bbr_twins == profiles_meta.from_profiles().bbr_twins


@pytest.mark.parametrize("value", ['""', '" padded"', '"' + "x" * 41 + '"', "3"])
def test_the_testbed_refuses_a_bad_label(tmp_path, value):
    path = tmp_path / "bad.toml"
    path.write_text(f'label = {value}\nstack = "tcp"\ncongestion_control = "cubic"\n'
                    'initial_window_packets = 10\npacing = false\n')
    with pytest.raises(InputError, match=r"bad.toml: key label: expected text of 1 to 40 "
                       r"printable characters, no space at either end, got "):
        profiles.load_protocol(path)


def test_the_packaged_snapshot_is_the_checkouts_profiles():
    """results_contract/profiles_meta.json (what an install without the checkout reads)
    says what profiles/ says: `python -m results_contract.profiles_meta` writes it anew."""
    checkout = profiles_meta.from_profiles(profiles_meta.PROFILES_DIR)
    assert profiles_meta.SNAPSHOT.read_text(encoding="utf-8") == \
        profiles_meta.snapshot_text(checkout), "run: python -m results_contract.profiles_meta"


def test_without_the_checkouts_profiles_the_snapshot_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(profiles_meta, "PROFILES_DIR", tmp_path / "no-profiles")
    got = profiles_meta.from_profiles()
    assert got == profiles_meta.from_profiles(Path(profiles_meta.ROOT) / "profiles")
