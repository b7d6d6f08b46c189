"""When a run is alive (runstate.alive) and what the sweep and `cleanup --check` make of it.

Both the sweep (what it removes) and `cleanup --check` (what it lists) ask
runstate.alive; these tests hold them to one answer, including for a state
folder that has no owner file yet.
"""

from __future__ import annotations

import os

import pytest

from testbed import cleanup, runstate

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
