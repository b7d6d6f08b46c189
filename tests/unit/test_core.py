"""Unit tests for the run identity, subprocess helpers, user launcher and cleanup."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.needs import need_root

from testbed.errors import CommandFailed
from testbed.host import cleanup, proc, runstate
from testbed.host.enter import as_user


def test_command_failed_names_command_and_status():
    with pytest.raises(CommandFailed) as e:
        proc.run([sys.executable, "-c", "import sys; sys.stderr.write('boom\\n'); sys.exit(3)"])
    assert "exited with status 3" in str(e.value)
    assert "boom" in str(e.value)
    assert e.value.argv[0] == sys.executable


def test_missing_program_is_status_127():
    with pytest.raises(CommandFailed) as e:
        proc.run(["/nonexistent/program"])
    assert e.value.returncode == 127


def test_background_stops_its_children(tmp_path):
    marker = tmp_path / "child.pid"
    script = f"import subprocess,time; p=subprocess.Popen(['sleep','30']); open('{marker}','w').write(str(p.pid)); time.sleep(30)"
    with proc.Background([sys.executable, "-c", script]) as bg:
        for _ in range(100):
            if marker.exists() and marker.read_text():
                break
            import time

            time.sleep(0.05)
        child = int(marker.read_text())
        assert bg.alive()
    assert not bg.alive()
    import time

    deadline = time.monotonic() + 60  # the signal reaches the child asynchronously (a bound
    # on the wait, not a measure of speed: it usually takes milliseconds)
    while not (runstate.start_time(child) is None or _is_zombie(child)):
        assert time.monotonic() < deadline, "child of the stopped process still runs"
        time.sleep(0.02)


def _is_zombie(pid: int) -> bool:
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_run_names_carry_the_run_id(tmp_path, monkeypatch):
    run = runstate.Run(id="4242", dir=tmp_path)
    assert run.name("srv") == "tb-4242-srv"
    assert cleanup.NS_RE.match(run.name("srv")).group(1) == "4242"
    assert cleanup.NS_RE.match("other-4242-srv") is None


def test_owner_alive_detects_reused_pid(tmp_path):
    (tmp_path / "owner").write_text(f"{os.getpid()} {runstate.start_time(os.getpid())}\n")
    assert runstate.owner_alive(tmp_path)
    (tmp_path / "owner").write_text(f"{os.getpid()} 1\n")  # same pid, other start time
    assert not runstate.owner_alive(tmp_path)
    (tmp_path / "owner").unlink()
    assert not runstate.owner_alive(tmp_path)


def test_as_user_wraps_command_in_namespace_and_launcher(tmp_path):
    run = runstate.Run(id="7", dir=tmp_path)
    (tmp_path / "alternatives").mkdir()
    argv = as_user(["mm-delay", "10", "true"], netns="tb-7-cli", env={"A": "1"}, run=run)
    assert argv[:4] == ["ip", "netns", "exec", "tb-7-cli"]
    assert argv[argv.index("--run") + 1] == "7"
    assert "A=1" in argv
    assert argv[-4:] == ["--", "mm-delay", "10", "true"]


def test_alternatives_copy_points_iptables_at_the_shim(tmp_path):
    run = runstate.Run(id="8", dir=tmp_path)
    alt = run.alternatives
    target = os.readlink(alt / "iptables")
    assert target.endswith(".tools/libexec/mm-iptables-shim")
    others = [p for p in os.listdir("/etc/alternatives") if os.path.islink(f"/etc/alternatives/{p}")]
    for name in others:
        if name != "iptables":
            assert os.readlink(alt / name) == os.readlink(f"/etc/alternatives/{name}")


def test_tagged_processes_finds_only_the_run(tmp_path):
    import subprocess

    p = subprocess.Popen(["sleep", "5"], env={**os.environ, "TESTBED_RUN": "t-123"})
    try:
        assert p.pid in cleanup.tagged_processes({"t-123"})
        assert p.pid not in cleanup.tagged_processes({"t-999"})
    finally:
        p.kill()
        p.wait()


def test_sweep_leaves_a_testbed_user_process_someone_waits_for(tmp_path):
    """A testbed-user process started by a live program (here this test, through
    runuser) is nobody's leftover; the same process hanging from init would be."""
    need_root()
    p = subprocess.Popen(["runuser", "-u", runstate.USER, "--", "sleep", "30"])
    try:
        for _ in range(100):
            kids = [int(x) for x in Path(f"/proc/{p.pid}/task/{p.pid}/children").read_text().split()]
            if kids:
                break
            time.sleep(0.02)
        assert kids
        assert kids[0] not in cleanup.orphaned_user_processes()
    finally:
        p.kill()
        subprocess.run(["pkill", "-u", runstate.USER, "-f", "^sleep 30$"], check=False)
        p.wait()
