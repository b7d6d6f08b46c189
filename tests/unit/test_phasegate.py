"""The phase gate against a scripted stand-in for mm-link: every wait bounded, no start
let through that was not seen in phase, and a report when it gives up.

The stand-in writes the two log headers with the phase its script gives for each
start (a number, `none` for no header, `hang` for a start that writes none and
ignores SIGTERM) and then runs its command, as mm-link does. The real mm-link
is in tests/e2e/test_emulate_e2e.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from testbed.emulate import phasegate

FAKE = textwrap.dedent('''\
    #!{python}
    import os, signal, subprocess, sys, time
    from pathlib import Path
    here = Path(__file__).parent
    args = sys.argv[1:]
    logs = {{a.split("=", 1)[0]: a.split("=", 1)[1] for a in args if a.startswith("--")
             and "=" in a}}
    cmd = args[args.index("--") + 1:]
    script = (here / "script").read_text().split()
    n = len(list(here.glob("start-*")))
    (here / f"start-{{n}}").write_text(str(os.getpid()))
    what = script[min(n, len(script) - 1)]
    if what == "hang":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child = subprocess.Popen([sys.executable, "-c", "import signal, time;"
                                  "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"])
        (here / f"child-{{n}}").write_text(str(child.pid))
        time.sleep(60)
    if what != "none":
        for key, base in (("--uplink-log", 100), ("--downlink-log", 100 + int(what))):
            with open(logs[key], "w") as f:
                f.write(f"# init timestamp: 1\\n# base timestamp: {{base}}\\n")
    sys.exit(subprocess.call(cmd))
''')


@pytest.fixture
def fake(tmp_path, monkeypatch):
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    link = bin_ / "mm-link"
    link.write_text(FAKE.format(python=sys.executable))
    link.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_}:{os.environ['PATH']}")
    return bin_


def gate(fake: Path, script: str, *, deadline: float = 20, header_s: float | None = None,
         ) -> subprocess.CompletedProcess:
    (fake / "script").write_text(script)
    ran = fake / "ran"
    code = ("import sys; from testbed.emulate import phasegate as g; "
            + (f"g.HEADER_WAIT_S = {header_s}; " if header_s else "")
            + "g.STOP_WAIT_S = 0.5; g.main(sys.argv[1:])")
    return subprocess.run([sys.executable, "-c", code, "--deadline", str(deadline), "--dir",
                           str(fake), "--", "mm-link", "up", "down", "--",
                           "sh", "-c", f"echo ran >> {ran}"],
                          check=False, capture_output=True, text=True, timeout=60)


def starts(fake: Path) -> int:
    return len(list(fake.glob("start-*")))


def test_starts_again_until_in_phase(fake):
    cp = gate(fake, "2 -1 1 0")
    assert cp.returncode == 0, cp.stderr
    assert starts(fake) == 4
    assert (fake / "ran").read_text() == "ran\n"  # only the start in phase ran the command


def test_gives_up_at_the_deadline_and_says_what_it_saw(fake):
    t0 = time.monotonic()
    cp = gate(fake, "3", deadline=2)
    took = time.monotonic() - t0
    assert cp.returncode == phasegate.GAVE_UP
    assert not (fake / "ran").exists()
    line, = cp.stderr.strip().splitlines()
    assert "no start of mm-link in phase" in line and "3, 3" in line, line
    assert f"after {starts(fake)} starts" in line
    assert took >= 2, took  # not before the deadline (after it: the run's own timeout)


def test_a_start_without_headers_is_not_let_through(fake):
    cp = gate(fake, "none 0", header_s=0.5)
    assert cp.returncode == 0, cp.stderr
    assert starts(fake) == 2 and (fake / "ran").read_text() == "ran\n"


def test_a_hung_start_is_killed_with_its_children(fake):
    """A start whose shells ignore SIGTERM (and whose child does too) is killed whole:
    nothing of it survives to run the command once the gate's lock is released."""
    cp = gate(fake, "hang 0", header_s=0.5)
    assert cp.returncode == 0, cp.stderr
    assert (fake / "ran").read_text() == "ran\n"
    for f in [fake / "start-0", fake / "child-0"]:
        pid = int(f.read_text())
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]


def test_shells_that_fail_to_start_end_the_gate_at_once(fake):
    (fake / "mm-link").write_text("#!/bin/sh\necho 'mm-link: cannot open trace' >&2\nexit 3\n")
    cp = gate(fake, "0", deadline=3600)  # the run's 60 s timeout fails a gate that waits
    assert cp.returncode == 3
    assert "exited 3 before both logs had a header" in cp.stderr
    assert not (fake / "ran").exists()


def test_partial_header_line_is_not_read(tmp_path):
    log = tmp_path / "log"
    log.write_text("# init timestamp: 1\n# base timestamp: 12")  # the number may go on
    assert phasegate.base_timestamp(str(log)) is None
    log.write_text("# init timestamp: 1\n# base timestamp: 12\n")
    assert phasegate.base_timestamp(str(log)) == 12
