"""What the testbed may have left on the host: used by tests and `testbed cleanup --check`.

Things that belong to a run whose owner is still alive are in use, not left
over, and are not listed.
"""

from __future__ import annotations

from pathlib import Path

from testbed import netns, proc, runstate


def _live(run_id: str | None) -> bool:
    from testbed.cleanup import _alive

    return bool(run_id) and _alive(run_id)


def namespaces() -> list[str]:
    from testbed.cleanup import NS_RE

    found = []
    for n in netns.list_names():
        m = NS_RE.match(n)
        if n.startswith(runstate.PREFIX) and not (m and _live(m.group(1))):
            found.append(n)
    return found


def user_processes() -> list[str]:
    """Processes of the testbed user that no live run owns."""
    from testbed.cleanup import orphaned_user_processes

    found = []
    for pid in orphaned_user_processes():
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found.append(f"{pid} {cmd.strip()[:80]}")
    return found


def host_nat_rules() -> list[str]:
    """NAT rules in the host's namespace that mention Mahimahi's 100.64.0.0/10."""
    out = proc.run(["iptables", "-t", "nat", "-S"], check=False).stdout
    return [line for line in out.splitlines() if "100.64." in line]


def host_interfaces() -> list[str]:
    out = proc.output(["ip", "-o", "link", "show"])
    return [line.split(":")[1].strip() for line in out.splitlines()
            if line.split(":")[1].strip().startswith("tb")]


def state_dirs(exclude: str | None = None) -> list[str]:
    if not runstate.STATE_ROOT.is_dir():
        return []
    return [str(d) for d in runstate.STATE_ROOT.iterdir()
            if d.name != exclude and not runstate.owner_alive(d)]


def find(exclude_run: str | None = None) -> list[str]:
    """Every leftover, one line each; empty when the host is clean."""
    items = [f"namespace {n}" for n in namespaces()]
    items += [f"process {p}" for p in user_processes()]
    items += [f"host NAT rule {r}" for r in host_nat_rules()]
    items += [f"interface {i}" for i in host_interfaces()]
    items += [f"state {d}" for d in state_dirs(exclude_run)]
    return items
