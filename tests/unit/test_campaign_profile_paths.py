"""Network and protocol entries of a campaign given as relative paths resolve against
the campaign file's folder, as its sites do; names still come from profiles/."""

from __future__ import annotations

import shutil

import pytest

from testbed.campaign.plan import config, settings
from testbed.errors import InputError
from testbed.formats import profiles
from testbed.host.paths import ROOT


def test_profile_paths_are_read_against_the_campaign_files_folder(tmp_path, monkeypatch):
    (tmp_path / "nets").mkdir()
    (tmp_path / "protos").mkdir()
    shutil.copy(ROOT / "profiles/networks/dsl.toml", tmp_path / "nets/slow.toml")
    shutil.copy(ROOT / "profiles/protocols/tcp-plus.toml", tmp_path / "protos/mine.toml")
    (tmp_path / "campaigns").mkdir()
    campaign = tmp_path / "campaigns/c.toml"
    campaign.write_text('sites = ["local-news"]\n'
                        'networks = ["../nets/slow.toml", "lte"]\n'
                        'protocols = ["../protos/mine.toml", "quic"]\nruns = 1\n')
    monkeypatch.chdir(tmp_path / "nets")  # the current folder plays no part
    c = config.load(campaign)
    entries = config.resolve(c)
    assert list(entries["networks"]) == ["slow", "lte"]
    assert list(entries["protocols"]) == ["mine", "quic"]
    slow = entries["networks"]["slow"]
    assert slow.file == (tmp_path / "nets/slow.toml").resolve()
    assert slow.listed == ("../nets/slow.toml",)
    assert profiles.load_network(slow.found).name == "slow"
    assert entries["networks"]["lte"].found == "lte"
    assert settings.load(entries["protocols"]["mine"].found).name == "mine"


def test_a_missing_profile_path_names_the_campaign_key(tmp_path):
    campaign = tmp_path / "c.toml"
    campaign.write_text('sites = ["local-news"]\nnetworks = ["nets/none.toml"]\n'
                        'protocols = ["tcp"]\nruns = 1\n')
    with pytest.raises(InputError) as e:
        config.load(campaign)
    msg = str(e.value)
    assert "key networks.0" in msg and str(tmp_path / "nets/none.toml") in msg
