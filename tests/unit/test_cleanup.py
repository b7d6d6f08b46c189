"""When a run is alive (runstate.alive) and what the sweep and `cleanup --check` make of it.

Both the sweep (what it removes) and `cleanup --check` (what it lists) ask
runstate.alive; these tests hold them to one answer, including for a state
folder that has no owner file yet.
"""

from __future__ import annotations

import os

import pytest

from testbed.host import cleanup, runstate

GONE = "999999999"
"""A pid above any pid_max: no process has it."""


@pytest.fixture
def state(tmp_path, monkeypatch):
    monkeypatch.setattr(runstate, "STATE_ROOT", tmp_path)
    monkeypatch.setattr(cleanup.netns, "list_names", list)
    return tmp_path


def _run_dir(state, run_id: str, owner: str | None):
    d = state / run_id
    d.mkdir()
    if owner is not None:
        (d / "owner").write_text(owner)
    return d


def test_a_run_is_alive_while_its_owner_runs(state):
    me = str(os.getpid())
    _run_dir(state, me, f"{me} {runstate.start_time(os.getpid())}\n")
    assert runstate.alive(me)
    (state / me / "owner").write_text(f"{me} 1\n")  # the pid, reused by another process
    assert not runstate.alive(me)
    (state / me / "owner").write_text("garbage\n")
    assert not runstate.alive(me)


def test_without_an_owner_file_a_run_is_alive_while_its_pid_exists(state):
    assert runstate.alive(str(os.getpid()))  # no folder at all (another state root)
    _run_dir(state, str(os.getpid()), None)  # folder made, owner not written yet
    assert runstate.alive(str(os.getpid()))
    assert not runstate.alive(GONE)
    _run_dir(state, GONE, None)
    assert not runstate.alive(GONE)
    assert not runstate.alive("not-a-pid")


def test_check_lists_exactly_the_state_folders_a_sweep_removes(state):
    """A folder without an owner file named after a live process (a run being made):
    the sweep always kept it; `--check` used to list it as left over. Now neither
    touches it, and a dead run's folder is both listed and removed."""
    parent = os.getppid()  # alive, and not this process (which both skip)
    being_made = _run_dir(state, str(parent), None)
    dead = _run_dir(state, GONE, f"{GONE} 1\n")
    stale = _run_dir(state, "12345678", None)  # above pid_max too: no owner, no process
    assert cleanup._dead_runs() == {GONE, "12345678"}
    assert sorted(cleanup._state_dirs()) == sorted([str(dead), str(stale)])
    assert str(being_made) not in cleanup._state_dirs()


def test_check_skips_its_own_run(state):
    dead = _run_dir(state, GONE, f"{GONE} 1\n")
    assert cleanup._state_dirs(exclude=GONE) == []
    assert cleanup._state_dirs() == [str(dead)]


def test_a_stray_file_or_link_in_the_state_root_is_listed_and_swept(state, tmp_path_factory,
                                                                    monkeypatch):
    """`--check` lists every entry of a dead run; the sweep used to remove folders only,
    so a stray file stayed listed for ever. A link goes, its target stays."""
    # this test's state root hides the machine's live runs: kill nothing
    monkeypatch.setattr(cleanup, "orphaned_user_processes", list)
    monkeypatch.setattr(cleanup, "tagged_processes", lambda run_ids: [])
    target = tmp_path_factory.mktemp("elsewhere") / "keep"
    target.write_text("not the testbed's")
    (state / GONE).write_text("stray")
    (state / "12345678").symlink_to(target)
    assert sorted(cleanup._state_dirs()) == sorted([str(state / GONE), str(state / "12345678")])
    swept = cleanup.sweep()
    assert swept.processes == [] and swept.namespaces == []
    assert sorted(swept.state_dirs) == sorted([str(state / GONE), str(state / "12345678")])
    assert list(state.iterdir()) == []
    assert target.read_text() == "not the testbed's"
    assert cleanup._state_dirs() == []


def test_a_tb_namespace_without_a_run_id_is_listed_with_what_to_do(state, monkeypatch):
    monkeypatch.setattr(cleanup.netns, "list_names", lambda: ["tb-stray", f"tb-{GONE}-site", "other"])
    found = cleanup._namespaces()
    assert found[0].startswith("tb-stray (no run's") and "ip netns delete tb-stray" in found[0]
    assert found[1] == f"tb-{GONE}-site"
    assert len(found) == 2
