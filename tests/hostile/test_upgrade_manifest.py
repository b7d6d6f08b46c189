"""`testbed upgrade-manifest RESULTS...` is root rewriting a file in someone's folder:
a folder the testbed user can write, a manifest that is a symlink (to the host's
secret), one that is missing, not JSON or of an unknown version: one line, exit 2,
nothing written."""

from __future__ import annotations

import os

import pytest
from support.hostile_harness import Case, run_case
from support.paths import ROOT

MANIFEST = (ROOT / "reference" / "manifest.json").read_text()


def open_folder(folder, host):
    (folder / "r").mkdir()
    (folder / "r" / "manifest.json").write_text(MANIFEST)
    (folder / "r").chmod(0o777)


def link_to_secret(folder, host):
    (folder / "r").mkdir()
    os.symlink(host.secret, folder / "r" / "manifest.json")


CASES = [
    Case("upgrade-in-a-folder-the-testbed-user-writes", ["upgrade-manifest", "{dir}/r"],
         ["RESULTS {dir}/r", "writable by the testbed user"], prepare=open_folder),
    Case("upgrade-manifest-a-symlink-to-a-host-file", ["upgrade-manifest", "{dir}/r"],
         ["{dir}/r/manifest.json", "symlink"], prepare=link_to_secret),
    Case("upgrade-no-manifest", ["upgrade-manifest", "{dir}/r"],
         ["{dir}/r/manifest.json", "no such file"], files={"r/x": ""}),
    Case("upgrade-not-json", ["upgrade-manifest", "{dir}/r"],
         ["{dir}/r/manifest.json"], files={"r/manifest.json": "{not json\r\n"}),
    Case("upgrade-unknown-version", ["upgrade-manifest", "{dir}/r"],
         ["{dir}/r/manifest.json", "key schema_version"],
         files={"r/manifest.json": '{"schema_version": 99999999999999999999}'}),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_hostile_upgrade_manifest(case, tmp_path):
    run_case(case, tmp_path)  # one line, exit 2, nothing written in or out of its folder
