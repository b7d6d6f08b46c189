"""Hostile recordings with huge bodies: refused before anything is read or allocated.

Both replay servers hold every body in memory, so a recording states at most
256 MiB a body and 1 GiB in all (`body_size` and `bytes` in
schemas/recording.schema.json). A sparse file takes a few KB on disk whatever
its size, so a recording of a few KB could ask for gigabytes: `recording show`
and `replay` (both stacks) refuse it in one line, and so do h3server and
h3quinn started by hand, before they allocate (under an address-space limit
far below the body's size, the refusal is the only way to exit 2).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
from pathlib import Path

import pytest
from support.hostile_harness import Case, run_case
from support.hostile_recordings import GOOD, HAR, REPLAY, REPLAY_QUIC, SHOW, body_file, write_good
from support.needs import need

from testbed.host.paths import H3QUINN, H3SERVER
from testbed.replay import certs

GIB = 1 << 30
ZEROS_1_5_GIB = (3 * GIB // 2, "b7a1ca05cae9eefbf2deee895f4fb34c8d8ffc5d6665982424e0b2711c79ed1d")
ZEROS_300_MIB = (300 << 20, "")
"""(size, SHA-256 of that many zero bytes; computed once if empty)."""


def sparse_body(size: int, sha: str):
    """A good recording whose one body is `size` zero bytes, a sparse file."""
    def prepare(d: Path, host) -> Path:
        rec = write_good(d)
        body_file(rec).unlink()
        digest = sha or _zeros_sha(size)
        with open(rec / "bodies" / digest, "wb") as f:
            f.truncate(size)
        data = json.loads((rec / "manifest.json").read_text())
        data["exchanges"][0].update(body=digest, body_size=size)
        data["bytes"] = size
        (rec / "manifest.json").write_text(json.dumps(data))
        return rec
    return prepare


def _zeros_sha(size: int) -> str:
    import hashlib

    h, block = hashlib.sha256(), bytes(1 << 20)
    for _ in range(size >> 20):
        h.update(block)
    return h.hexdigest()


CASES = [
    Case("1.5 GiB sparse body via recording show", SHOW, ["manifest.json", "key bytes",
                                                          "at most 1073741824"],
         prepare=sparse_body(*ZEROS_1_5_GIB)),
    Case("1.5 GiB sparse body via replay tcp", REPLAY, ["manifest.json", "key bytes",
                                                        "at most 1073741824"],
         prepare=sparse_body(*ZEROS_1_5_GIB)),
    Case("300 MiB sparse body via replay quic", REPLAY_QUIC,
         ["manifest.json", "key exchanges/0/body_size", "at most 268435456"],
         prepare=sparse_body(*ZEROS_300_MIB)),
    Case("300 MiB sparse body via recording har", HAR,
         ["manifest.json", "key exchanges/0/body_size", "at most 268435456"],
         prepare=sparse_body(*ZEROS_300_MIB)),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_huge_body(case: Case, tmp_path: Path):
    run_case(case, tmp_path)


def _limit_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (768 << 20, 768 << 20))


@pytest.mark.parametrize("server", [H3SERVER, H3QUINN], ids=["h3server", "h3quinn"])
@pytest.mark.parametrize("size,sha", [ZEROS_1_5_GIB, ZEROS_300_MIB], ids=["1.5GiB", "300MiB"])
def test_quic_servers_refuse_a_huge_body_before_allocating(server, size, sha, tmp_path):
    """Started by hand (no Python loader before them), under 768 MiB of address space."""
    if not server.exists():
        need(f"{server} not built (make setup)")
    rec = sparse_body(size, sha)(tmp_path, None)
    leaf = certs.issue_leaf(["www.a.test"], tmp_path)
    cp = subprocess.run([str(server), "--recording", str(rec), "--listen", "127.0.0.1:0",
                         "--cert", str(leaf.chain_path), "--key", str(leaf.key_path)],
                        check=False, capture_output=True, text=True, timeout=60,
                        preexec_fn=_limit_address_space, stdin=subprocess.DEVNULL)
    lines = cp.stderr.strip().splitlines()
    assert cp.returncode == 2, (cp.returncode, cp.stderr[-2000:])
    assert len(lines) == 1 and str(rec / "manifest.json") in lines[0], lines
    assert "at most" in lines[0], lines[0]


def test_a_body_grown_past_the_limit_after_the_manifest_is_refused(tmp_path):
    """The size of the file itself is checked (it may change after the manifest was
    written): a body file longer than the limit, under a manifest claiming 18 bytes."""
    if not H3SERVER.exists():
        need(f"{H3SERVER} not built (make setup)")
    rec = write_good(tmp_path)
    body = body_file(rec)
    os.truncate(body, 300 << 20)
    leaf = certs.issue_leaf(["www.a.test"], tmp_path)
    cp = subprocess.run([str(H3SERVER), "--recording", str(rec), "--listen", "127.0.0.1:0",
                         "--cert", str(leaf.chain_path), "--key", str(leaf.key_path)],
                        check=False, capture_output=True, text=True, timeout=60,
                        preexec_fn=_limit_address_space, stdin=subprocess.DEVNULL)
    assert cp.returncode == 2, (cp.returncode, cp.stderr[-2000:])
    assert f"bodies/{body.name}" in cp.stderr and "at most 268435456" in cp.stderr, cp.stderr


@pytest.mark.e2e
def test_a_recording_put_in_place_of_the_loaded_one_is_not_served(readable_tmp):
    """The servers get the folder root checked, never its path: a recording loaded, then
    another put at its path (by the folder's owner, before the replay starts), is
    refused, not served."""
    from testbed.errors import InputError
    from testbed.formats import recording as rec
    from testbed.replay.env import ReplayEnv

    loaded = rec.load(write_good(readable_tmp))
    loaded.path.rename(readable_tmp / "was")
    (readable_tmp / "other").mkdir()
    other = write_good(readable_tmp / "other", [({**GOOD, "target": "/other"}, b"other")])
    other.rename(loaded.path)
    with pytest.raises(InputError, match="changed since it was loaded"), \
            ReplayEnv(loaded, "tcp"):
        pass
