"""Files and folders named by environment variables are checked like any other root
uses: a program root runs (TESTBED_H3SERVER, TESTBED_H3QUINN) and a folder whose
files steer a campaign (TESTBED_LANES_DIR, TESTBED_CALIBRATION_DIR) must belong to
root (or the user who ran sudo), on a path nobody else can change. Anything else is
refused in one line naming the variable and the path (exit 2), and never run or read.
The replay servers get nothing of root's environment but what they need (no
SSLKEYLOGFILE: TLS secrets go only where a trial asks for them)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from support.hostile_harness import TESTBED, Case, Host, run_case

from testbed.errors import InputError
from testbed.host import proc

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs testbed as root")


def _nobodys(path: Path) -> None:
    pw = pwd.getpwnam("nobody")
    os.chown(path, pw.pw_uid, pw.pw_gid, follow_symlinks=False)


def program(path: Path) -> Path:
    """A program that leaves `<its folder>/../ran-uid<uid>` behind whenever it runs and
    answers --version like h3server."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n"
                    f"touch {path.parent.parent}/ran-uid$(id -u) 2>/dev/null\n"
                    "echo 'h3server 9.9.9'\n")
    path.chmod(0o755)
    return path


def nobodys_program(d: Path, host: Host) -> None:
    p = program(d / "bin" / "h3server")
    _nobodys(p)
    _nobodys(p.parent)


def nobodys_folder(name: str):
    def prepare(d: Path, host: Host) -> None:
        (d / name).mkdir()
        _nobodys(d / name)
    return prepare


CASES = [
    Case("replay: TESTBED_H3SERVER names a program of nobody's",
         ["replay", "local-news", "--stack", "quic", "--", "true"],
         ["TESTBED_H3SERVER", "{dir}/bin", "nobody"], prepare=nobodys_program,
         env={"TESTBED_H3SERVER": "{dir}/bin/h3server"}, timeout=60),
    Case("replay: TESTBED_H3QUINN names a program of nobody's",
         ["replay", "local-news", "--setting", "quic-quinn", "--", "true"],
         ["TESTBED_H3QUINN", "{dir}/bin", "nobody"], prepare=nobodys_program,
         env={"TESTBED_H3QUINN": "{dir}/bin/h3server"}, timeout=60),
    Case("run --lanes auto: TESTBED_LANES_DIR is a folder of nobody's",
         ["run", "smoke", "--lanes", "auto", "--out", "{dir}/out"],
         ["TESTBED_LANES_DIR", "{dir}/lanes", "nobody"], prepare=nobodys_folder("lanes"),
         env={"TESTBED_LANES_DIR": "{dir}/lanes"}, timeout=60),
    Case("run: TESTBED_CALIBRATION_DIR is a folder of nobody's",
         ["run", "smoke", "--out", "{dir}/out"],
         ["TESTBED_CALIBRATION_DIR", "{dir}/cal", "nobody"], prepare=nobodys_folder("cal"),
         env={"TESTBED_CALIBRATION_DIR": "{dir}/cal"}, timeout=60),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_refused(case: Case, tmp_path: Path) -> None:
    case = Case(case.name, case.argv, case.expect, case.files, case.prepare, case.may_write,
                {k: v.replace("{dir}", str(tmp_path / "case")) for k, v in case.env.items()},
                case.timeout, case.user)
    run_case(case, tmp_path)


def test_root_never_asks_a_program_of_nobodys_for_its_version(tmp_path):
    """`testbed run --dry-run` over a results folder reads the HTTP/3 servers' versions
    (to compare them with the stored ones): a TESTBED_H3SERVER of nobody's is named
    as the reason, and never run."""
    d = tmp_path / "case"
    d.mkdir()
    nobodys_program(d, Host(d, ""))
    (d / "out").mkdir()
    (d / "out" / "manifest.json").write_text("{}")
    cp = subprocess.run([TESTBED, "run", "smoke", "--dry-run", "--out", d / "out"],
                        cwd=d, capture_output=True, text=True, check=False, timeout=120,
                        env={**os.environ, "TESTBED_H3SERVER": str(d / "bin/h3server")})
    assert sorted(p.name for p in d.glob("ran-*")) == [], cp.stdout + cp.stderr
    assert f"TESTBED_H3SERVER {d}/bin/h3server" in cp.stdout + cp.stderr


def test_version_runs_only_programs_nobody_else_can_change(tmp_path):
    ok = program(tmp_path / "root" / "bin" / "tool")
    assert proc.version([ok, "--version"]) == "h3server 9.9.9"
    theirs = program(tmp_path / "theirs" / "bin" / "tool")
    _nobodys(theirs)
    with pytest.raises(InputError, match=f"{theirs}: {theirs} belongs to nobody"):
        proc.version([theirs, "--version"])
    writable = program(tmp_path / "writable" / "bin" / "tool")
    writable.chmod(0o777)
    with pytest.raises(InputError, match="mode 0777"):
        proc.version([writable, "--version"])
    open_folder = program(tmp_path / "open" / "bin" / "tool")
    open_folder.parent.chmod(0o777)
    with pytest.raises(InputError, match="writable by"):
        proc.version([open_folder, "--version"])
    ran = sorted(p.parent.name for p in tmp_path.glob("*/ran-*"))
    assert ran == ["root"]


@pytest.mark.e2e
def test_the_quic_server_gets_no_keylog_file_from_roots_environment():
    """SSLKEYLOGFILE in root's environment is not handed to the HTTP/3 server (which
    would append every session's secrets, the readiness probe's included, wherever it
    names, as the testbed user); a trial's keys are Chromium's, in its own folder
    (testbed.measure.captures)."""
    shared = Path(tempfile.mkdtemp(prefix="keylog-", dir="/tmp"))  # the testbed user may write
    try:
        shared.chmod(0o1777)
        keys = shared / "keys.txt"
        cp = subprocess.run([TESTBED, "replay", "local-news", "--stack", "quic", "--", "true"],
                            capture_output=True, text=True, check=False, timeout=180,
                            stdin=subprocess.DEVNULL,
                            env={**os.environ, "SSLKEYLOGFILE": str(keys)})
        assert cp.returncode == 0, cp.stderr[-2000:]
        assert not keys.exists()
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def _theirs_now(folder: Path) -> None:
    for p in [folder, *folder.iterdir()]:
        _nobodys(p)


def test_a_lanes_measurement_of_nobodys_is_never_used(tmp_path, monkeypatch):
    """A measurement in a TESTBED_LANES_DIR another account owns would set how many
    trials run at once: refused, not read."""
    from testbed.campaign.plan import lanes
    from testbed.formats.profiles import load_network

    monkeypatch.setattr(lanes, "CACHE", tmp_path / "lanes")
    dsl = load_network("dsl")
    lanes.store(dsl, 16, 0.02, [])
    assert lanes.resolve("auto", {"dsl": dsl})[0] == {"dsl": 16}
    _theirs_now(tmp_path / "lanes")
    with pytest.raises(InputError, match=f"TESTBED_LANES_DIR {tmp_path}/lanes: .* nobody"):
        lanes.resolve("auto", {"dsl": dsl})


def test_a_calibration_of_nobodys_is_never_used(tmp_path, monkeypatch):
    """A calibration in a TESTBED_CALIBRATION_DIR another account owns would set every
    trial's delays: refused, not read."""
    from testbed.emulate import calibrate
    from testbed.formats.profiles import load_network

    monkeypatch.setattr(calibrate, "CACHE", tmp_path / "cal")
    dsl = load_network("dsl")
    made = calibrate.Calibration(
        profile=dsl.name, profile_digest=dsl.digest, delay_ms=1, method=calibrate.METHOD,
        chain_offset_ms=0.0, min_rtt_ms=2.0, median_rtt_ms=2.0, probes=1,
        measured_at="2026-11-28T00:00:00", **calibrate.machine())
    calibrate.store(made, dsl)
    assert calibrate.cached(dsl) == made
    _theirs_now(tmp_path / "cal")
    with pytest.raises(InputError, match=f"TESTBED_CALIBRATION_DIR {tmp_path}/cal: .* nobody"):
        calibrate.cached(dsl)
