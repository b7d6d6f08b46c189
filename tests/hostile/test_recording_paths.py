"""Hostile recording paths and list files: `record --list`, `recording list`, the
recordings search path and campaign sites.

A list file that is itself bad (missing, not UTF-8, a FIFO, a folder, over 1
MiB, without a URL, a link to the host's secret) is bad input: one line, exit
2, nothing recorded. A bad line inside a good list file is not: it is
reported with its number, the other lines are recorded, and the exit status
is 1 (tested below the table, outside the harness).

A search folder the testbed user owns may hold a symbolic link to a
recording only root can read; root must not follow it, whether the
recording is named, globbed by a campaign, or listed.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from support.hostile_harness import TESTBED, Case, Host, run_case

from testbed.formats import recording
from testbed.host import paths

ROW = {"scheme": "https", "host": "www.a.test", "port": 443, "ip": "203.0.113.5",
       "method": "GET", "target": "/", "request_headers": [["user-agent", "x"]],
       "status": 200, "response_headers": [["content-type", "text/html"]]}
LIST = ["record", "--list", "{dir}/sites.txt", "--out", "{dir}/out", "--loads", "1"]
RUN = ["run", "{dir}/c.toml", "--out", "{dir}/out"]


def campaign(sites: str) -> str:
    return f'sites = {sites}\nnetworks = ["dsl"]\nprotocols = ["tcp"]\nruns = 1\n'


def write_rec(folder: Path, name: str, url: str = "https://www.a.test/") -> Path:
    return recording.write(folder, {"name": name, "url": url,
                                    "recorded_at": "2026-01-01T00:00:00Z", "loads": 1},
                           [(dict(ROW), b"<html>hi</html>")])


def user_owns(path: Path) -> None:
    pw = paths.user()
    os.chown(path, pw.pw_uid, pw.pw_gid, follow_symlinks=False)


def planted_link(d: Path, host: Host) -> None:
    """{dir}/recs, the testbed user's, holds x: its symbolic link to a recording in the
    host's root-only folder whose URL carries the secret."""
    write_rec(host.secret.parent, "rec", f"https://www.a.test/{host.content}")
    recs = d / "recs"
    recs.mkdir()
    (recs / "x").symlink_to(host.secret.parent / "rec")
    user_owns(recs / "x")
    user_owns(recs)


def fifo(d: Path, host: Host) -> None:
    os.mkfifo(d / "sites.txt")


def secret_list(d: Path, host: Host) -> None:
    (d / "sites.txt").symlink_to(host.secret)


def two_x(d: Path, host: Host) -> None:
    write_rec(d / "one", "x", "https://www.one.test/")
    write_rec(d / "two", "x", "https://www.two.test/")


def user_out(d: Path, host: Host) -> None:
    (d / "out").mkdir()
    user_owns(d / "out")


LINK = ["{dir}/recs/x", "symbolic link", "not followed"]

CASES = [
    # the list file itself
    Case("list: missing", LIST, ["{dir}/sites.txt", "cannot read the list file"]),
    Case("list: not UTF-8", LIST, ["{dir}/sites.txt", "not UTF-8"],
         prepare=lambda d, h: (d / "sites.txt").write_bytes(b"https://caf\xe9.test/\n")),
    Case("list: a FIFO", LIST, ["{dir}/sites.txt", "not a regular file"], prepare=fifo),
    Case("list: a folder", LIST, ["{dir}/sites.txt", "not a regular file"],
         prepare=lambda d, h: (d / "sites.txt").mkdir()),
    Case("list: over 1 MiB", LIST, ["{dir}/sites.txt", "expected at most 1048576"],
         files={"sites.txt": "https://a.test/\n" + "#" * (1024 * 1024) + "\n"}),
    Case("list: no URL, only comments", LIST, ["{dir}/sites.txt", "no URLs"],
         files={"sites.txt": "# nothing yet\n\n"}),
    Case("list: a link to the host's secret", LIST, ["{dir}/sites.txt", "no URLs"],
         prepare=secret_list),
    Case("list: with --name", [*LIST, "--name", "n"], ["--name", "not with --list"],
         files={"sites.txt": "https://a.test/\n"}),
    Case("record: neither a URL nor --list", ["record", "--out", "{dir}/out"],
         ["a URL or --list"]),
    Case("record: a URL and --list", ["record", "https://a.test/", *LIST[1:]],
         ["a URL or --list"], files={"sites.txt": "https://a.test/\n"}),
    Case("list: --out the testbed user can write", LIST, ["--out", "belongs to testbed"],
         files={"sites.txt": "https://a.test/\n"}, prepare=user_out, may_write=True),
    Case("list: --netns that does not exist", [*LIST, "--netns", "no-such-ns-x"],
         ["--netns no-such-ns-x", "no such network namespace"],
         files={"sites.txt": "https://a.test/\n"}),
    # the search path
    Case("--recordings: no such folder", ["--recordings", "{dir}/none", "recording", "show", "x"],
         ["--recordings {dir}/none", "no folder"]),
    Case("recording list: no such folder", ["recording", "list", "{dir}/none"],
         ["{dir}/none", "no such folder"]),
    Case("a missing name names every place looked in",
         ["--recordings", "{dir}", "recording", "show", "nope"],
         ["nope: no such recording", "looked in {dir}, ", "recordings"]),
    Case("search folder of the testbed user: show follows no link",
         ["--recordings", "{dir}/recs", "recording", "show", "x"], LINK, prepare=planted_link),
    Case("search folder of the testbed user: har follows no link",
         ["--recordings", "{dir}/recs", "recording", "har", "x"], LINK, prepare=planted_link),
    Case("search folder of the testbed user: replay follows no link",
         ["--recordings", "{dir}/recs", "replay", "x", "--stack", "tcp", "--", "true"], LINK,
         prepare=planted_link),
    Case("search folder of the testbed user: a campaign name follows no link",
         ["--recordings", "{dir}/recs", *RUN], ["c.toml", "sites.0", *LINK],
         files={"c.toml": campaign('["x"]')}, prepare=planted_link),
    Case("search folder of the testbed user: a campaign glob follows no link",
         ["--recordings", "{dir}/recs", *RUN], ["c.toml", "sites.1", *LINK],
         files={"c.toml": campaign('["local-news", "?"]')}, prepare=planted_link),
    # a path (not a name) ending in a link that a folder of the testbed user's holds: the
    # recording folder is opened once, without following it (its holder could swap it)
    Case("a path to a link in a folder of the testbed user: show follows no link",
         ["recording", "show", "{dir}/recs/x"], LINK, prepare=planted_link),
    Case("a path to a link in a folder of the testbed user: a campaign site follows no link",
         RUN, ["c.toml", "sites.0", *LINK], files={"c.toml": campaign('["./recs/x"]')},
         prepare=planted_link),
    # campaign sites
    Case("campaign: a glob matching nothing", RUN,
         ["c.toml", "sites.1", "corpus/none-*", "matched none"],
         files={"c.toml": campaign('["local-news", "corpus/none-*"]')}),
    Case("campaign: a relative path is its folder's, not the current one's",
         ["run", "{dir}/sub/c.toml", "--out", "{dir}/out"],
         ["sub/c.toml", "sites.0", "./x: no such recording folder ({dir}/sub/x)"],
         files={"sub/c.toml": campaign('["./x"]')},
         prepare=lambda d, h: write_rec(d, "x")),
    Case("campaign: two sites in folders of one name", RUN,
         ["c.toml", "sites.1", "is named x", "{dir}/one/x", "{dir}/two/x"],
         files={"c.toml": campaign('["./one/x", "./two/x"]')}, prepare=two_x),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_recording_path(case: Case, tmp_path: Path):
    run_case(case, tmp_path)


def _testbed(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([TESTBED, *argv], capture_output=True, text=True, cwd=tmp_path,
                          check=False, timeout=120, stdin=subprocess.DEVNULL,
                          env={**os.environ, "COLUMNS": "200"})


def test_bad_lines_are_reported_each_and_exit_1_recording_nothing(tmp_path):
    """Bad lines are one line each naming the file and line; the site already there is
    skipped; the table lists every line; exit status 1; nothing written."""
    out = tmp_path / "out"
    write_rec(out, "a.test")
    listing = tmp_path / "sites.txt"
    listing.write_text("# sites\nhttps://a.test/\nhtp:/broken\nhttps://b.test/ a.test\n"
                       "https://c.test/ x y\n")
    before = sorted(p.name for p in out.iterdir())
    cp = _testbed(tmp_path, "record", "--list", str(listing), "--out", str(out))
    assert cp.returncode == 1, cp.stderr
    reported = [line for line in cp.stderr.splitlines() if line.startswith(f"{listing}:")]
    assert [line.split(":")[1] for line in reported[:3]] == ["3", "4", "5"], cp.stderr
    assert "already used on line 2" in reported[1]
    assert reported[3] == f"{listing}: 3 of 4 lines failed (lines 3, 4, 5)"
    assert "Traceback" not in cp.stderr
    rows = [dict(kv.split(": ", 1) for kv in line.split("\t")) for line in cp.stdout.splitlines()
            if line.startswith("line: ")]
    assert [(r["line"], r["status"]) for r in rows] == [
        ("2", "skipped"), ("3", "bad line"), ("4", "bad line"), ("5", "bad line")]
    assert rows[0]["requests"] == "1"
    assert sorted(p.name for p in out.iterdir()) == before


def test_recording_list_skips_a_link_in_a_folder_the_testbed_user_owns(tmp_path):
    host_dir = tmp_path / "host"
    host_dir.mkdir(mode=0o700)
    write_rec(host_dir, "rec", "https://www.a.test/ROOT-ONLY")
    recs = tmp_path / "recs"
    recs.mkdir()
    write_rec(recs, "real")
    (recs / "x").symlink_to(host_dir / "rec")
    user_owns(recs)
    cp = _testbed(tmp_path, "recording", "list", str(recs))
    assert cp.returncode == 0, cp.stderr
    assert "ROOT-ONLY" not in cp.stdout + cp.stderr
    assert [line.split("\t")[0] for line in cp.stdout.splitlines()] == ["name: real",
                                                                       "summary: all"]
