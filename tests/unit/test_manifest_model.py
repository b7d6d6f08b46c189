"""The campaign manifest's model (results_contract.manifest): its committed JSON schema,
the rule the top level is derived by, the upgrade of a version 1 file, and a foreign
manifest refused in one line naming the file, the key and what was expected."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner
from support.paths import FIXTURES

from results_contract import manifest
from results_contract.load import load_manifest
from results_contract.manifest import Manifest, ManifestError, Session, parse
from testbed.cli import cli, main


def _session(network: str, buffer_ms: float, min_rtt_ms: float, started: str) -> Session:
    return Session.model_validate({
        "started_at": started, "versions": {"kernel": "6.1"},
        "campaign": {"name": "c", "settings": {"networks": [network]}},
        "networks": {network: {"sha256": network * 4, "profile": {"buffer_ms": buffer_ms}}},
        "calibration": {network: {"min_rtt_ms": min_rtt_ms}},
        "lanes": {network: {"lanes": 1, "from": "campaign"}}})


def test_the_committed_schema_is_the_models():
    """results_contract/manifest.schema.json is generated from the model; regenerate it
    with `python -c "from results_contract import manifest as m; print(m.schema_text(),
    end='')" > results_contract/manifest.schema.json` when the model changes."""
    assert manifest.SCHEMA_FILE.read_text(encoding="utf-8") == manifest.schema_text()
    assert json.loads(manifest.SCHEMA_FILE.read_text())["properties"]["schema_version"][
        "const"] == manifest.SCHEMA_VERSION


def test_sessions_with_other_networks_are_both_kept_at_the_top():
    dsl = _session("dsl", 12, 23.3, "2026-11-27T07:55:43+00:00")
    lte = _session("lte", 200, 73.4, "2026-11-27T18:45:50+00:00")
    m = Manifest.of([dsl, lte])
    assert list(m.networks) == ["dsl", "lte"]
    assert m.networks["dsl"].profile.buffer_ms == 12 and m.calibration["dsl"].min_rtt_ms == 23.3
    assert m.networks["lte"].profile.buffer_ms == 200 and list(m.lanes) == ["dsl", "lte"]
    assert m.campaign is not None and m.campaign.settings.networks == ["lte"]  # the latest's
    assert [list(s.networks) for s in m.sessions] == [["dsl"], ["lte"]]  # each its own


def test_a_resume_on_the_same_network_keeps_one_entry_the_latest():
    first = _session("dsl", 12, 23.3, "2026-11-27T07:55:43+00:00")
    again = _session("dsl", 12, 23.9, "2026-11-27T08:26:05+00:00")
    m = Manifest.of([first]).with_session(again)
    assert list(m.networks) == ["dsl"] and len(m.sessions) == 2
    assert m.calibration["dsl"].min_rtt_ms == 23.9
    assert parse(json.loads(m.text())) == m  # the file reads back as written


def test_a_version_1_manifest_is_upgraded_when_read(tmp_path):
    """Version 1 (no schema_version): the top level a copy of the latest session, plus
    the lanes and server sysctls only the top had. Read, it is version 2 with the top
    level derived from its sessions; `testbed upgrade-manifest` writes it so."""
    old = {"started_at": "2026-11-27T18:45:50+00:00", "campaign": {"name": "c"},
           "networks": {"lte": {"profile": {"buffer_ms": 200}}},
           "calibration": {"lte": {"min_rtt_ms": 73.4}},
           "server_sysctls": {"tcp": {"route": "r"}},
           "sessions": [
               {"started_at": "2026-11-27T07:55:43+00:00", "campaign": {"name": "c"},
                "networks": {"dsl": {"profile": {"buffer_ms": 12}}},
                "calibration": {"dsl": {"min_rtt_ms": 23.3}}},
               {"started_at": "2026-11-27T18:45:50+00:00", "campaign": {"name": "c"},
                "networks": {"lte": {"profile": {"buffer_ms": 200}}},
                "calibration": {"lte": {"min_rtt_ms": 73.4}}, "server_sysctls": {}}]}
    (tmp_path / "manifest.json").write_text(json.dumps(old))
    m = load_manifest(tmp_path)
    assert m is not None and m.schema_version == 2
    assert list(m.networks) == ["dsl", "lte"] and m.networks["dsl"].profile.buffer_ms == 12
    assert m.sessions[-1].server_sysctls == {"tcp": {"route": "r"}} == m.server_sysctls
    assert m.sessions[0].server_sysctls == {}
    done = CliRunner().invoke(cli, ["upgrade-manifest", str(tmp_path)])
    assert done.exit_code == 0, done.output
    assert "version 1 -> 2" in done.output
    written = json.loads((tmp_path / "manifest.json").read_text())
    assert written["schema_version"] == 2 and list(written["networks"]) == ["dsl", "lte"]
    assert load_manifest(tmp_path) == m
    synthetic = parse({"campaign": "fixture", "synthetic": True,  # no sessions: as it is
                       "networks": {"dsl": {"profile": {"min_rtt_ms": 24}}}})
    assert synthetic.campaign is not None and synthetic.campaign.name == "fixture"
    assert synthetic.networks["dsl"].profile.min_rtt_ms == 24 and synthetic.synthetic


@pytest.mark.parametrize(("doc", "message"), [
    ({"sessions": [{"networks": {"dsl": {"profile": {"buffer_ms": "12"}}}}]},
     "key sessions.0.networks.dsl.profile.buffer_ms: expected a number, got str"),
    ({"sessions": [{"calibration": {"dsl": []}}]},
     "key sessions.0.calibration.dsl: expected an object, got list"),
    ({"sessions": [{"networks": {"dsl": {"video_fps": True}}}]},
     "key sessions.0.networks.dsl.video_fps: expected a whole number, got bool"),
    ({"sessions": [{"versions": {"kernel": 6}}]},
     "key sessions.0.versions.kernel: expected text, got int"),
    ({"sessions": [{"started_at": "yesterday"}]},
     "key sessions.0.started_at: expected an ISO 8601 date and time, got str"),
    ({"sessions": [{"lanes": {"dsl": {"lanes": 1}}}]},
     "key sessions.0.lanes.dsl.from: missing"),
    ({"campaign": {"settings": {"runs": {"min": 5, "max": "12", "precision": "2%"}}}},
     "key campaign.settings.runs.max: expected a whole number, got str"),
    ({"schema_version": 3}, "key schema_version: expected 1 or 2"),
    ([], r"\(top level\): expected a JSON object"),
])
def test_a_foreign_manifest_is_refused_in_one_line(tmp_path, capsys, monkeypatch, doc, message):
    (tmp_path / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(ManifestError, match=message) as e:
        load_manifest(tmp_path)
    assert str(e.value).startswith(f"{tmp_path / 'manifest.json'}: ") and "\n" not in str(e.value)
    out = tmp_path / "r"
    (tmp_path / "trials.csv").write_bytes((FIXTURES / "results" / "trials.csv").read_bytes())
    capsys.readouterr()
    monkeypatch.setattr(os, "geteuid", lambda: 1000)  # no sweep before the command
    with pytest.raises(SystemExit) as exited:
        main(["report", str(tmp_path), "--out", str(out)])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"testbed: error: {tmp_path / 'manifest.json'}: ") and err.count("\n") == 1
