"""Deterministic scripts as a campaign's option: the key (typed, on by default), the
manifest that records it (older manifests read as off) with each recording's pin, and a
results folder that keeps one value."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from results_contract import manifest
from testbed.campaign.plan import config
from testbed.errors import InputError

BODY = 'sites = ["local-news"]\nnetworks = ["dsl"]\nprotocols = ["quic"]\n'


def test_the_key_is_on_by_default_and_a_boolean(tmp_path):
    camp = tmp_path / "c.toml"
    camp.write_text(BODY)
    assert config.load(camp, check_names=False).deterministic_scripts is True
    camp.write_text(BODY + "deterministic_scripts = false\n")
    assert config.load(camp, check_names=False).deterministic_scripts is False
    camp.write_text(BODY + 'deterministic_scripts = "yes"\n')
    with pytest.raises(InputError, match=r"c\.toml: key deterministic_scripts: expected true or "
                                         r"false, got \"yes\""):
        config.load(camp, check_names=False)


def test_older_manifests_read_as_off_without_a_pin():
    doc = {"schema_version": 2, "campaign": {"settings": {"sites": ["x"]}},
           "recordings": {"x": {"url": "https://x.test/"}}}
    m = manifest.Manifest.model_validate(doc)
    assert m.campaign.settings.deterministic_scripts is False
    assert m.recordings["x"].script_pin is None
    doc["campaign"]["settings"]["deterministic_scripts"] = True
    doc["recordings"]["x"]["script_pin"] = {"time_ms": 1, "seed": 2}
    m = manifest.Manifest.model_validate(doc)
    assert m.campaign.settings.deterministic_scripts is True
    assert m.recordings["x"].script_pin == manifest.ScriptPin(time_ms=1, seed=2)
    schema = json.loads(manifest.SCHEMA_FILE.read_text())
    assert schema["$defs"]["CampaignSettings"]["properties"]["deterministic_scripts"][
        "default"] is False


def test_a_results_folder_keeps_one_value_and_the_manifest_says_which(tmp_path):
    from support.scripted_results import SCRIPTED, write_campaign

    campaign, out = write_campaign(tmp_path, runs=1), tmp_path / "out"
    first = subprocess.run([sys.executable, SCRIPTED, str(campaign), str(out)],
                           capture_output=True, text=True, timeout=300, check=False)
    assert first.returncode == 0, first.stderr
    doc = json.loads((out / "manifest.json").read_text())
    assert doc["campaign"]["settings"]["deterministic_scripts"] is True
    pin = doc["recordings"]["local-news"]["script_pin"]
    assert set(pin) == {"time_ms", "seed"} and pin["time_ms"] > 1_500_000_000_000
    campaign.write_text(campaign.read_text() + "deterministic_scripts = false\n")
    second = subprocess.run([sys.executable, SCRIPTED, str(campaign), str(out)],
                            capture_output=True, text=True, timeout=300, check=False)
    assert second.returncode == 2
    assert ("key deterministic_scripts: false, but 2 trials in" in second.stderr
            and "measured with the pinned script; set deterministic_scripts = true"
            in second.stderr), second.stderr
