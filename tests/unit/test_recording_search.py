"""Where recordings are found: the search path's order, paths against a base folder,
globs, and campaign files naming sites relative to their own folder."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from support.paths import TESTBED

from testbed.campaign.plan import config
from testbed.errors import InputError
from testbed.formats import recording, recording_search


@pytest.fixture(autouse=True)
def _clean_search_path(monkeypatch, bundled_only):
    monkeypatch.setattr(recording_search, "_given", [])
    monkeypatch.delenv(recording_search.ENV, raising=False)


def _rec(out: Path, name: str, url: str = "https://www.a.test/") -> Path:
    row = {"scheme": "https", "host": "www.a.test", "port": 443, "ip": "10.0.0.1",
           "method": "GET", "target": "/", "request_headers": [["user-agent", "x"]],
           "status": 200, "response_headers": [["content-type", "text/html"]]}
    return recording.write(out, {"name": name, "url": url, "recorded_at": "2026-01-01T00:00:00Z",
                                 "loads": 1}, [(row, url.encode())])


def test_search_order_is_recordings_option_then_environment_then_checkout(tmp_path,
                                                                          monkeypatch):
    first, second = tmp_path / "first", tmp_path / "second"
    _rec(first, "local-news", "https://www.first.test/")
    _rec(second, "local-news", "https://www.second.test/")
    _rec(second, "only-env")
    assert recording.resolve("local-news") == recording_search.RECORDINGS_DIR / "local-news"
    monkeypatch.setenv(recording_search.ENV, f"{tmp_path / 'missing'}{os.pathsep}{second}")
    assert recording.resolve("local-news") == second / "local-news"
    recording_search.use_dirs([first])
    assert recording.load("local-news").url == "https://www.first.test/"
    assert recording.resolve("only-env") == second / "only-env"
    assert recording_search.search_dirs() == [first, tmp_path / "missing", second,
                                              recording_search.RECORDINGS_DIR]


def test_a_missing_recording_names_every_place_looked_in(tmp_path, monkeypatch):
    monkeypatch.setenv(recording_search.ENV, str(tmp_path / "env"))
    recording_search.use_dirs([tmp_path])
    with pytest.raises(InputError) as e:
        recording.resolve("nope")
    assert str(e.value) == (f"nope: no such recording (looked in {tmp_path}, {tmp_path / 'env'}, "
                            f"{recording_search.RECORDINGS_DIR})")
    with pytest.raises(InputError, match="--recordings .*no folder"):
        recording_search.use_dirs([tmp_path / "absent"])


def test_paths_names_and_the_current_folder(tmp_path, monkeypatch):
    _rec(tmp_path / "recs" / "corpus", "a")
    monkeypatch.chdir(tmp_path)
    # a path with '/' is tried against the current folder, then the search path
    assert recording.resolve("recs/corpus/a") == tmp_path / "recs/corpus/a"
    recording_search.use_dirs([tmp_path / "recs"])
    assert recording.resolve("corpus/a") == tmp_path / "recs/corpus/a"
    # a bare name is never the current folder's: the error says how to name it
    _rec(tmp_path, "here")
    with pytest.raises(InputError, match=r"for the folder .*/here write \./here"):
        recording.resolve("here")
    assert recording.resolve("./here") == tmp_path / "here"
    # '.' and absolute paths are taken as they are, never searched
    with pytest.raises(InputError, match=r"\./a: no such recording folder"):
        recording.resolve("./a")
    with pytest.raises(InputError, match="'..'"):
        recording.resolve("corpus/../../x")


def test_globs_over_the_search_path_sorted_earlier_folders_first(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    for name in ("z", "m"):
        _rec(a / "corpus", name)
    _rec(b / "corpus", "m", "https://www.hidden.test/")
    _rec(b / "corpus", "c")
    (a / "corpus" / "not-a-recording").mkdir()
    recording_search.use_dirs([a, b])
    found = recording_search.glob("corpus/*", tmp_path / "nowhere")
    assert found == [b / "corpus/c", a / "corpus/m", a / "corpus/z"]
    assert recording_search.glob("corpus/q*") == []
    monkeypatch.chdir(tmp_path)
    assert recording_search.glob("./a/corpus/?") == [tmp_path / "a/corpus/m",
                                                      tmp_path / "a/corpus/z"]


def _campaign(folder: Path, sites: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "c.toml").write_text(f'sites = {sites}\nnetworks = ["dsl"]\nprotocols = ["tcp"]\n'
                                   "runs = 1\n")
    return folder / "c.toml"


def test_a_campaign_names_sites_relative_to_its_own_folder(tmp_path, monkeypatch):
    _rec(tmp_path / "recs", "x", "https://www.x.test/")
    c = config.load(_campaign(tmp_path / "campaigns", '["../recs/x", "local-news"]'))
    monkeypatch.chdir("/")  # the current folder plays no part
    sites = config.resolve(c)["sites"]
    assert list(sites) == ["x", "local-news"]
    assert sites["x"].file == (tmp_path / "recs/x").resolve()
    assert sites["x"].listed == ("../recs/x",)


def test_a_campaign_glob_expands_in_sorted_order_and_must_match(tmp_path):
    recs = tmp_path / "recs"
    for name in ("b", "a", "c"):
        _rec(recs / "corpus", name, f"https://www.{name}.test/")
    recording_search.use_dirs([recs])
    c = config.load(_campaign(tmp_path / "elsewhere", '["corpus/*", "local-news"]'))
    assert [(i, p.name) for i, _, p in config.sites_of(c)] == [
        (0, "a"), (0, "b"), (0, "c"), (1, "local-news")]
    assert list(config.resolve(c)["sites"]) == ["a", "b", "c", "local-news"]
    with pytest.raises(InputError, match=r"c.toml: key sites.1: corpus/q\*: expected a glob "
                                         r"matching recordings, matched none"):
        config.load(_campaign(tmp_path / "other", '["local-news", "corpus/q*"]'))


def test_two_sites_with_one_folder_name_are_refused_naming_both(tmp_path):
    _rec(tmp_path / "one", "x", "https://www.one.test/")
    _rec(tmp_path / "two", "x", "https://www.two.test/")
    with pytest.raises(InputError) as e:
        config.load(_campaign(tmp_path, '["./one/x", "./two/x"]'))
    msg = str(e.value)
    assert "key sites.1" in msg and "is named x" in msg
    assert str(tmp_path / "one/x") in msg and str(tmp_path / "two/x") in msg


def test_the_command_line_takes_the_option_and_the_environment(tmp_path):
    _rec(tmp_path / "opt", "from-option", "https://www.opt.test/")
    _rec(tmp_path / "env", "from-env", "https://www.env.test/")
    env = {**os.environ, recording_search.ENV: str(tmp_path / "env")}

    def show(*argv):
        return subprocess.run([TESTBED, *argv], capture_output=True, text=True, env=env,
                              cwd=tmp_path, check=False, timeout=60)
    cp = show("--recordings", str(tmp_path / "opt"), "recording", "show", "from-option")
    assert cp.returncode == 0 and "www.opt.test" in cp.stdout, cp.stderr
    cp = show("recording", "show", "from-env")
    assert cp.returncode == 0 and "www.env.test" in cp.stdout, cp.stderr
    cp = show("--recordings", str(tmp_path / "opt"), "recording", "list")
    names = [line.split("\t")[0] for line in cp.stdout.splitlines()]
    # the subprocess also lists the checkout's real recordings/, whatever it holds (the
    # bundled two; the corpus after `make corpus`), all sorted by name
    listed = [n for n in names if n.startswith("name: ")]
    assert listed == sorted(listed), cp.stdout
    assert {"name: from-env", "name: from-option", "name: gallery",
            "name: local-news"} <= set(listed), cp.stdout
    assert cp.stdout.splitlines()[-1].startswith(f"summary: all\trecordings: {len(listed)}\t")
