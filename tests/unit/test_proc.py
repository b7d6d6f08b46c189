"""testbed.host.proc's one way to read a tool's version, to run a command in the
foreground, and the one tcpdump wrapper (testbed.measure.tcpdump) on a stand-in
tcpdump: no root, no network."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed import errors
from testbed.errors import CommandFailed, TimedOut
from testbed.host import proc
from testbed.measure.tcpdump import Tcpdump


def py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


@pytest.mark.parametrize("code, expected", [
    ("print('tool 1.2\\nbuilt today')", "tool 1.2"),
    ("import sys; sys.stderr.write('nginx version: nginx/1.22\\n')", "nginx version: nginx/1.22"),
    ("import sys; print('usage: tool'); sys.exit(2)", None),
    ("pass", None),
])
def test_version_is_the_first_line_of_a_tool_that_answers(code, expected):
    assert proc.version(py(code)) == expected


def test_version_of_a_missing_or_hanging_tool_is_none():
    assert proc.version(["/nonexistent/tool", "--version"]) is None
    assert proc.version(py("import time; time.sleep(30)"), timeout=0.2) is None


def test_a_timeout_is_its_own_error():
    with pytest.raises(TimedOut) as e:
        proc.run(py("import time; time.sleep(30)"), timeout=0.2)
    assert isinstance(e.value, CommandFailed) and e.value.timeout == 0.2


def test_call_returns_the_exit_status_and_127_for_a_missing_program():
    assert proc.call(py("import sys; sys.exit(5)")) == 5
    assert proc.call(["/nonexistent/program"]) == 127


def test_call_passes_signals_on_and_restores_the_handlers(tmp_path):
    ready = tmp_path / "ready"
    child = ("import signal, sys, time, pathlib\n"
             "signal.signal(signal.SIGTERM, lambda *a: sys.exit(7))\n"
             f"pathlib.Path({str(ready)!r}).touch()\n"
             "time.sleep(60)\n")
    middle = ("import signal, sys\nfrom testbed.host import proc\n"
              f"rc = proc.call([sys.executable, '-c', {child!r}], forward=(signal.SIGTERM,))\n"
              "assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL\n"
              "sys.exit(rc)\n")
    runner = subprocess.Popen(py(middle))
    while not ready.exists():
        assert runner.poll() is None, "the command ended before it was ready"
        time.sleep(0.02)
    runner.send_signal(signal.SIGTERM)
    assert runner.wait() == 7


def test_background_passes_the_fds_it_is_given():
    r, w = os.pipe()
    try:
        with proc.Background(py(f"import os; os.write({w}, b'hello')"), pass_fds=(w,)) as bg:
            os.close(w)
            w = -1
            assert os.read(r, 5) == b"hello"
        assert not bg.alive()
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)


def _fake_tcpdump(tmp_path: Path, body: str, monkeypatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "tcpdump"
    fake.write_text(f"#!{sys.executable}\nimport os, sys, time, pathlib\n"
                    f"pathlib.Path({str(tmp_path / 'argv')!r}).write_text(' '.join(sys.argv[1:]))\n"
                    f"pathlib.Path({str(tmp_path / 'pid')!r}).write_text(str(os.getpid()))\n"
                    + body)
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return tmp_path / "argv"


def test_tcpdump_runs_while_the_block_runs(tmp_path, monkeypatch):
    argv = _fake_tcpdump(tmp_path, "sys.stderr.write('tcpdump: listening on veth0\\n')\n"
                                   "sys.stderr.flush()\ntime.sleep(60)\n", monkeypatch)
    dump = Tcpdump(["env"], "veth0", tmp_path / "x.pcap", log=tmp_path / "x.log", snaplen=128,
                   options=("-n",), expression=("udp", "port", "443"))
    with dump:
        assert argv.read_text() == f"-i veth0 -s 128 -U -n -w {tmp_path / 'x.pcap'} udp port 443"
        pid = int((tmp_path / "pid").read_text())
        os.kill(pid, 0)  # running
    with pytest.raises(ProcessLookupError):  # stopped and reaped when the block ended
        os.kill(pid, 0)


def test_a_tcpdump_that_does_not_start_is_an_error_naming_it(tmp_path, monkeypatch):
    _fake_tcpdump(tmp_path, "sys.stderr.write('tcpdump: veth9: No such device\\n')\n"
                            "sys.exit(1)\n", monkeypatch)
    dump = Tcpdump([], "veth9", tmp_path / "x.pcap", log=tmp_path / "x.log")
    with pytest.raises(errors.TestbedError, match="tcpdump did not start: .*No such device"), dump:
        pytest.fail("the block ran without tcpdump")
