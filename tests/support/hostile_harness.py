"""Hostile input through the real command line: what every case must hold.

A case writes its files into a fresh scratch folder (`{dir}` in its files and
argv), may prepare more there with a Python function (a recording to break, a
symlink to plant), runs `testbed ...` as root and checks:

- exit status 2 and exactly one non-empty line on stderr, no traceback;
- the line contains the case's expected substrings (the file and the key);
- no byte of the host's secret (a root-only file outside the scratch folder
  that cases point symlinks and `..` paths at) in stdout or stderr;
- nothing written or changed outside the scratch folder (results/, reports/,
  recordings/ of the checkout, the secret's folder, /run/testbed) and, unless
  the case says otherwise, nothing new inside it either.

Each family of hostile input has its own test file in this folder; the table
here is the shared shape, so each file is a list of cases.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from support.paths import ROOT, TESTBED

STATE = Path(os.environ.get("TESTBED_STATE_DIR", "/run/testbed"))


@dataclass
class Host:
    """A file on the host that no case may read: its content must never be printed."""

    secret: Path
    content: str


@dataclass
class Case:
    name: str
    argv: list[str]
    expect: list[str]
    """Substrings the one-line message must contain (file and key); `{dir}` allowed."""
    files: dict[str, str] = field(default_factory=dict)
    prepare: Callable[[Path, Host], None] | None = None
    """Called with the scratch folder and the host secret after `files` are written."""
    may_write: bool = False
    """The case may leave files in its own scratch folder (never outside it)."""
    env: dict[str, str] = field(default_factory=dict)
    timeout: float = 120.0
    user: str | None = None
    """Run the command as this user (runuser) instead of root."""

    def __str__(self) -> str:
        return self.name


def make_host(tmp: Path) -> Host:
    d = tmp / "host"
    d.mkdir(mode=0o700)
    content = f"HOST-SECRET-{secrets.token_hex(8)}"
    secret = d / "secret"
    secret.write_text(content + "\n" + content + "\n")
    secret.chmod(0o600)
    return Host(secret, content)


def snapshot(*roots: Path) -> dict[str, tuple]:
    seen: dict[str, tuple] = {}
    for root in roots:
        if not root.exists() and not root.is_symlink():
            continue
        for p in [root, *root.rglob("*")]:
            try:
                st = p.lstat()
            except FileNotFoundError:
                continue
            seen[str(p)] = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_uid)
    return seen


def run_case(case: Case, tmp: Path) -> subprocess.CompletedProcess:
    host = make_host(tmp)
    d = tmp / "case"
    d.mkdir()
    d.chmod(0o755)
    for name, text in case.files.items():
        p = d / name.replace("{dir}", str(d))
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text.replace("{dir}", str(d)).replace("{secret}", str(host.secret)))
    if case.prepare:
        case.prepare(d, host)
    argv = [a.replace("{dir}", str(d)).replace("{secret}", str(host.secret)) for a in case.argv]
    outside = [ROOT / "results", ROOT / "reports", ROOT / "recordings", host.secret.parent]
    before_out, before_in, runs = snapshot(*outside), snapshot(d), _runs()
    prefix = ["runuser", "-u", case.user, "--"] if case.user else []
    with subprocess.Popen([*prefix, TESTBED, *argv], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, cwd=d, stdin=subprocess.DEVNULL,
                          env={**os.environ, "COLUMNS": "200", **case.env}) as proc:
        try:
            out, err = proc.communicate(timeout=case.timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise AssertionError(f"{case.name}: no answer within {case.timeout:.0f} s") from None
    cp = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    lines = [line for line in cp.stderr.splitlines() if line.strip()]
    assert cp.returncode == 2, (cp.returncode, cp.stderr[-2000:])
    assert "Traceback" not in cp.stderr + cp.stdout, cp.stderr[-2000:]
    assert len(lines) == 1, cp.stderr[-2000:]
    for needle in case.expect:
        assert needle.replace("{dir}", str(d)) in lines[0], (needle, lines[0])
    assert host.content not in cp.stdout + cp.stderr, "host file content in the output"
    assert _changed(before_out, snapshot(*outside)) == [], "written outside the scratch folder"
    assert _left_behind(runs, proc.pid) == set(), "run state left behind"
    if not case.may_write:
        assert _changed(before_in, snapshot(d)) == [], "bad input wrote into its folder"
    shutil.rmtree(tmp / "case", ignore_errors=True)
    return cp


def _changed(before: dict, after: dict) -> list[str]:
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def _runs() -> set[str]:
    """Run state folders (a command removes its own when it ends)."""
    return set(os.listdir(STATE)) if STATE.is_dir() else set()


def _left_behind(before: set[str], pid: int) -> set[str]:
    """The case's command's run state folder (a run's folder is named by its process id),
    if it is still there after the command exited: only what the case made is looked at,
    so another testbed command on the machine, starting or ending meanwhile, is not
    counted."""
    return {r for r in _runs() - before if r == str(pid)}
