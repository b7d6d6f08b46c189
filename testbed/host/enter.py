"""Run a command as the testbed user, with Mahimahi's iptables shim in place.

    testbed.host.enter.as_user(argv, netns="tb-123-replay")

builds `ip netns exec NS python -I -m testbed.host.enter --run ID -- argv` (isolated,
`proc.python`: it starts as root, from whatever folder root stood in). `ip netns
exec` gives the process a private mount namespace (/ is a slave), where this
module, still root, bind-mounts the run's copy of /etc/alternatives (in
which `iptables` is setup/mm-iptables-shim.c), then drops to the testbed
user and execs argv. Mahimahi's setuid shells started from there find the
shim; nothing outside that mount namespace changes.
"""

from __future__ import annotations

import argparse
import os
import pwd
import stat
import subprocess
import sys
from collections.abc import Mapping, Sequence

from testbed.host import proc
from testbed.host.runstate import USER, Run, current

SAFE_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
BINDABLE = ("/etc/hosts", "/etc/resolv.conf")
"""The only paths a command's mount namespace may have replaced (`binds`)."""


def as_user(argv: Sequence[str], netns: str | None = None, env: dict[str, str] | None = None,
            run: Run | None = None, cwd: str | None = None,
            binds: Mapping[str, os.PathLike[str] | str] | None = None) -> list[str]:
    """The argv that runs `argv` as the testbed user inside `netns` (or the host's).

    binds: files of root's (in the run's folder) bind-mounted over the given paths
    of BINDABLE in the command's mount namespace only (a Firefox replay's
    /etc/hosts and /etc/resolv.conf: testbed.host.firefox)."""
    run = run or current()
    inner = proc.python("-m", "testbed.host.enter", "--run", run.id,
                        "--alternatives", str(run.alternatives))
    for target, source in (binds or {}).items():
        if target not in BINDABLE:
            raise ValueError(f"{target}: not one of {', '.join(BINDABLE)}")
        inner += ["--bind", f"{target}={source}"]
    for k, v in (env or {}).items():
        inner += ["--env", f"{k}={v}"]
    if cwd:
        inner += ["--cwd", str(cwd)]
    inner += ["--", *map(str, argv)]
    if netns:
        return ["ip", "netns", "exec", netns, *inner]
    return ["unshare", "--mount", "--propagation", "slave", *inner]


def main(args: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m testbed.host.enter")
    ap.add_argument("--run", required=True)
    ap.add_argument("--alternatives", required=True)
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--cwd")
    ap.add_argument("--bind", action="append", default=[])
    ap.add_argument("argv", nargs=argparse.REMAINDER)
    ns = ap.parse_args(args)
    argv = ns.argv[1:] if ns.argv[:1] == ["--"] else ns.argv
    if not argv:
        ap.error("no command")
    if os.geteuid() != 0:
        sys.exit("testbed.host.enter: must start as root (it drops to the testbed user)")
    subprocess.run(["mount", "--bind", ns.alternatives, "/etc/alternatives"], check=True)
    for spec in ns.bind:
        target, _, source = spec.partition("=")
        if target not in BINDABLE:
            sys.exit(f"testbed.host.enter: --bind {target}: not one of {', '.join(BINDABLE)}")
        st = os.lstat(source)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != 0 or st.st_mode & 0o022:
            sys.exit(f"testbed.host.enter: --bind {source}: expected a regular file of root's "
                     "that only root may write")
        subprocess.run(["mount", "--bind", "--", source, target], check=True)
    pw = pwd.getpwnam(USER)
    env = {
        "PATH": SAFE_PATH,
        "HOME": pw.pw_dir,
        "USER": pw.pw_name,
        "LOGNAME": pw.pw_name,
        "LANG": "C.UTF-8",
        "TESTBED_RUN": ns.run,
    }
    for kv in ns.env:
        k, _, v = kv.partition("=")
        env[k] = v
    os.initgroups(pw.pw_name, pw.pw_gid)
    os.setgid(pw.pw_gid)
    os.setuid(pw.pw_uid)
    os.chdir(ns.cwd or pw.pw_dir)
    os.execvpe(argv[0], argv, env)


if __name__ == "__main__":
    main()
