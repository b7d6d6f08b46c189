"""Which test runs each command the guide and the docs show.

test_docs_commands.py proves every documented `testbed ...` line names a command and
options that exist; this file says, for each of them, which test runs it (the same
verb with the same options, on a bundled recording or a namespace the test makes,
since tests reach no other machine) or why no test can. A command added to a page
without an entry here fails `test_every_documented_command_is_accounted_for`, and an
entry whose test no longer runs that verb fails `test_the_named_tests_run_the_verb`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.docs_commands import COMMANDS, resolve
from support.paths import TESTS

RUN_BY: dict[str, tuple[str, ...]] = {
    # verb path (+ the options that change what it does): the tests that run it
    "doctor": ("test_e2e_core.py",),
    "record": ("test_record_e2e.py",),
    "record --list": ("test_record_list_e2e.py",),
    "recording har": ("test_record_e2e.py",),
    "recording list": ("test_recording_search.py",),
    "recording show": ("test_record_e2e.py",),
    "replay": ("test_replay_e2e.py", "test_replay_network_e2e.py"),
    "validate network": ("test_host_unchanged_e2e.py",),
    "validate network --recalibrate": ("test_cli_json.py",),
    "validate protocols": ("test_quic_knobs_e2e.py",),
    "validate servers": ("test_replay_e2e.py",),
    "run": ("test_smoke_campaign.py", "test_documented_campaigns_e2e.py"),
    "run --dry-run": ("test_campaign_plan_output.py", "test_missing_corpus.py"),
    "run --retry-failed": ("test_campaign_outdir.py",),
    "run --workers": ("test_cluster_tls_e2e.py",),
    "run --scheduler": ("test_cluster_tls_e2e.py",),
    "worker": ("test_cluster_tls_e2e.py",),
    "cluster certs": ("test_cluster_tls_e2e.py",),
    "report": ("test_analysis_install.py", "test_analysis_report.py"),
    "compare": ("test_analysis_install.py", "test_compare.py"),
    "trial": ("test_trial_e2e.py", "test_analysis_install.py"),
    "trials": ("test_analysis_install.py",),
    "export": ("test_analysis_install.py", "test_smoke_campaign.py", "test_telemetry_e2e.py"),
    "cleanup": ("test_campaigns.py",),
    "checkpoint": ("test_campaign_reference.py",),
}
"""Each entry's tests are searched for the verb's words as strings ("validate",
"network"), in tests/ and its folders."""

NOT_RUN: dict[str, str] = {}
"""Commands no test runs as written, with the reason."""

OPTIONS_THAT_MATTER = {
    "run": ("--dry-run", "--retry-failed", "--workers", "--scheduler"),
    "record": ("--list",),
    "validate network": ("--recalibrate",),
}
"""Per verb, the options that make it another command (its entry says `verb --option`)."""


def _key(words: list[str]) -> str:
    path, _command, rest = resolve(words)
    matter = OPTIONS_THAT_MATTER.get(" ".join(path), ())
    flags = [w.split("=")[0] for w in rest if w.split("=")[0] in matter]
    return " ".join([*path, *flags[:1]])


DOCUMENTED = sorted({_key(words) for _where, words in COMMANDS})


def _test_file(name: str) -> Path | None:
    found = sorted(TESTS.rglob(name))
    return found[0] if found else None


def test_every_documented_command_is_accounted_for():
    missing = [k for k in DOCUMENTED if k not in RUN_BY and k not in NOT_RUN]
    assert not missing, (f"documented commands with no test named in RUN_BY (or a reason "
                         f"in NOT_RUN): {missing}")
    assert len(DOCUMENTED) >= 20


@pytest.mark.parametrize("key", sorted(RUN_BY))
def test_the_named_tests_run_the_verb(key):
    words = [w for w in key.split() if not w.startswith("--")]
    flag = next((w for w in key.split() if w.startswith("--")), None)
    for name in RUN_BY[key]:
        path = _test_file(name)
        assert path is not None, f"{key}: {name} does not exist"
        text = path.read_text()
        # the verb's words as strings the test passes to the command line (or as its
        # function name, for the Python entry points the unit tests call)
        said = all(re.search(rf"[\"'\s]{re.escape(w)}[\"'\s,\]]", text) for w in words)
        assert said, f"{key}: {name} does not run `testbed {' '.join(words)}`"
        if flag and name == RUN_BY[key][0]:
            assert flag in text or flag.lstrip("-").replace("-", "_") in text, \
                f"{key}: {name} does not use {flag}"


def test_not_run_entries_say_why():
    assert all(len(why.split()) >= 8 for why in NOT_RUN.values())
