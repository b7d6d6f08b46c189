"""Hostile paths: outputs root would write through a folder or symlink the testbed
user controls (results, recordings, reports, exports). Each is refused before
anything is written: exit 2, one line naming the option and the path."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest
from support.hostile_harness import Case, Host, run_case

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs testbed as root")

USER = os.environ.get("TESTBED_USER", "testbed")


def _theirs(path: Path) -> None:
    pw = pwd.getpwnam(USER)
    os.chown(path, pw.pw_uid, pw.pw_gid, follow_symlinks=False)


def link_to_secret_folder(name: str):
    """A symlink the testbed user planted, to the root-only folder of the host secret."""
    def prepare(d: Path, host: Host) -> None:
        (d / name).symlink_to(host.secret.parent)
        _theirs(d / name)
    return prepare


def link_to_secret(name: str):
    """A symlink the testbed user planted, to the host secret itself."""
    def prepare(d: Path, host: Host) -> None:
        (d / name).symlink_to(host.secret)
        _theirs(d / name)
    return prepare


def their_folder(d: Path, host: Host) -> None:
    (d / "tb").mkdir()
    _theirs(d / "tb")


def results_with_planted_link(d: Path, host: Host) -> None:
    (d / "results" / "trials").mkdir(parents=True)
    (d / "results" / "trials" / "manifest.json").symlink_to(host.secret)
    _theirs(d / "results" / "trials" / "manifest.json")


def shared_sticky_folder(d: Path, host: Host) -> None:
    (d / "shared").mkdir()
    (d / "shared").chmod(0o1777)


CASES = [
    Case("run --out: the testbed user's symlink to a root-only folder",
         ["run", "smoke", "--out", "{dir}/out"], ["--out", "{dir}/out", "belongs to testbed"],
         prepare=link_to_secret_folder("out")),
    Case("run --out: inside a folder of the testbed user",
         ["run", "smoke", "--out", "{dir}/tb/results"], ["--out", "{dir}/tb belongs to testbed"],
         prepare=their_folder),
    Case("run --out: results holding a symlink the testbed user planted",
         ["run", "smoke", "--out", "{dir}/results"],
         ["--out", "{dir}/results/trials/manifest.json", "symlink"],
         prepare=results_with_planted_link),
    Case("run --out: a new folder in a folder everyone may write",
         ["run", "smoke", "--out", "{dir}/shared/results"],
         ["--out", "{dir}/shared", "make the folder first"], prepare=shared_sticky_folder),
    Case("record --out: through the testbed user's symlink",
         ["record", "https://www.example.test/", "--out", "{dir}/recs"],
         ["--out", "{dir}/recs", "belongs to testbed"], prepare=link_to_secret_folder("recs")),
    Case("record --out: inside a folder of the testbed user",
         ["record", "https://www.example.test/", "--out", "{dir}/tb"],
         ["--out", "{dir}/tb", "belongs to testbed"], prepare=their_folder),
    Case("report --out: a file", ["report", "{dir}/nothing", "--out", "{dir}/file"],
         ["--out", "{dir}/file", "is a file"], files={"file": "not a folder\n"}),
    Case("report --out: the testbed user's symlink to a root-only folder",
         ["report", "{dir}/nothing", "--out", "{dir}/rep"], ["--out", "{dir}/rep", "testbed"],
         prepare=link_to_secret_folder("rep")),
    Case("export --csv: the testbed user's symlink to a root-only file",
         ["export", "{dir}", "--csv", "{dir}/t.csv"], ["--csv", "{dir}/t.csv", "testbed"],
         prepare=link_to_secret("t.csv")),
    Case("export --parquet: inside a folder of the testbed user",
         ["export", "{dir}", "--parquet", "{dir}/tb/t.parquet"],
         ["--parquet", "{dir}/tb belongs to testbed"], prepare=their_folder),
    Case("recording har --output: the testbed user's symlink to a root-only file",
         ["recording", "har", "local-news", "--output", "{dir}/x.har"],
         ["--output", "{dir}/x.har", "testbed"], prepare=link_to_secret("x.har")),
    Case("validate servers --output: inside a folder of the testbed user",
         ["validate", "servers", "--output", "{dir}/tb/parity.json"],
         ["--output", "{dir}/tb belongs to testbed"], prepare=their_folder),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_paths(case: Case, tmp_path: Path):
    run_case(case, tmp_path)
