"""A fresh clone has no recordings/corpus/ until `make corpus`: every error the
missing corpus causes says so, in its one line (the paper campaign's dry run
first of all, as the README's guide runs it before `make corpus`)."""

from __future__ import annotations

import os

import pytest

from testbed import cli
from testbed.campaign.plan import config
from testbed.errors import InputError
from testbed.formats import recording, recording_search

HINT = "`make corpus` builds recordings/corpus/"


@pytest.fixture
def no_corpus(tmp_path, monkeypatch):
    """A checkout whose recordings/ holds no corpus/ (and nothing else is searched)."""
    checkout = tmp_path / "recordings"
    checkout.mkdir()
    monkeypatch.setattr(recording_search, "RECORDINGS_DIR", checkout)
    monkeypatch.setattr(recording_search, "_given", [])
    monkeypatch.delenv(recording_search.ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    return checkout


def test_the_paper_campaign_without_a_corpus_names_make_corpus(no_corpus):
    with pytest.raises(InputError) as e:
        config.sites_of(config.load("paper"))
    assert "key sites.0: paper/*: expected a glob matching recordings" in str(e.value)
    assert str(e.value).endswith(HINT)


@pytest.mark.parametrize("name", ["corpus/news01", "./recordings/corpus/news01",
                                  "today/news01", "paper/p01-gnu"])
def test_a_corpus_site_without_a_corpus_names_make_corpus(no_corpus, name):
    with pytest.raises(InputError) as e:
        recording.resolve(name)
    assert str(e.value).endswith(HINT)


def test_other_missing_recordings_do_not_mention_the_corpus(no_corpus):
    with pytest.raises(InputError) as e:
        recording.resolve("news01")
    assert "make corpus" not in str(e.value)


def test_run_paper_dry_run_is_one_line_naming_make_corpus(no_corpus, capsys, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)  # no sweep before the command
    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", "paper", "--dry-run"])
    assert exit_.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.rstrip().endswith(HINT), err


def test_recording_list_of_a_missing_corpus_names_make_corpus(no_corpus, capsys, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["recording", "list", "recordings/corpus"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.rstrip().endswith(HINT)
