"""The testbed's commit as the manifest records it (testbed.host.source): read from a
checkout's git files without running git, and only when they hold what git writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from testbed import __version__
from testbed.host import source

A = "a" * 40
B = "0123456789abcdef0123456789abcdef01234567"


def checkout(tmp_path: Path, head: str, refs: dict[str, str] | None = None,
             packed: str | None = None) -> Path:
    git = tmp_path / "repo" / ".git"
    git.mkdir(parents=True)
    (git / "HEAD").write_text(head)
    for name, sha in (refs or {}).items():
        (git / name).parent.mkdir(parents=True, exist_ok=True)
        (git / name).write_text(sha + "\n")
    if packed is not None:
        (git / "packed-refs").write_text(packed)
    return git.parent


def test_a_branch_with_a_loose_ref(tmp_path):
    root = checkout(tmp_path, "ref: refs/heads/main\n", {"refs/heads/main": A})
    assert source.commit(root) == (A, "refs/heads/main")
    assert source.version(root) == f"{__version__} {A} (main)"


def test_a_branch_only_in_packed_refs(tmp_path):
    packed = f"# pack-refs with: peeled fully-peeled sorted\n{B} refs/heads/other\n{A} refs/heads/main\n"
    root = checkout(tmp_path, "ref: refs/heads/main\n", packed=packed)
    assert source.commit(root) == (A, "refs/heads/main")


def test_a_detached_head(tmp_path):
    root = checkout(tmp_path, B + "\n")
    assert source.version(root) == f"{__version__} {B}"


def test_a_worktree_reads_its_head_and_the_common_refs(tmp_path):
    main = checkout(tmp_path, "ref: refs/heads/main\n", {"refs/heads/main": A})
    wt_git = main / ".git" / "worktrees" / "wt"
    wt_git.mkdir(parents=True)
    (wt_git / "HEAD").write_text("ref: refs/heads/topic\n")
    (wt_git / "commondir").write_text("../..\n")
    (main / ".git" / "refs/heads/topic").write_text(B + "\n")
    wt = tmp_path / "wt"
    wt.mkdir()
    (wt / ".git").write_text(f"gitdir: {wt_git}\n")
    assert source.commit(wt) == (B, "refs/heads/topic")


def test_outside_a_checkout_only_the_package_version(tmp_path):
    assert source.commit(tmp_path) == (None, None)
    assert source.version(tmp_path) == __version__


@pytest.mark.parametrize("head", [
    "ref: refs/../../../etc/passwd\n",  # a ref that climbs out
    "ref: HEAD\n",                       # not under refs/
    "not git at all\n",
    "A" * 40 + "\n",                     # git writes lower case
    "",
])
def test_a_head_of_another_form_gives_no_commit(tmp_path, head):
    root = checkout(tmp_path, head, {"refs/heads/main": A})
    assert source.commit(root)[0] is None
    assert source.version(root) == __version__


def test_a_symlink_is_not_followed_nor_another_files_text_kept(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text(A + "\n")
    root = checkout(tmp_path, "ref: refs/heads/main\n")
    (root / ".git" / "refs" / "heads").mkdir(parents=True)
    os.symlink(secret, root / ".git" / "refs" / "heads" / "main")
    assert source.commit(root) == (None, "refs/heads/main")
    (root / ".git" / "HEAD").unlink()
    os.symlink(secret, root / ".git" / "HEAD")
    assert source.commit(root) == (None, None)


def test_a_ref_file_of_other_content_or_size_is_ignored(tmp_path):
    root = checkout(tmp_path, "ref: refs/heads/main\n", {"refs/heads/main": "x" * 10_000})
    assert source.commit(root) == (None, "refs/heads/main")
    (root / ".git" / "refs/heads/main").unlink()
    os.mkfifo(root / ".git" / "refs/heads/main")  # never waited on
    assert source.commit(root) == (None, "refs/heads/main")


def test_this_checkout_is_read_as_git_reads_it():
    """The checkout the tests run in: a clone in CI, no .git in the image."""
    sha, _ = source.commit()
    if (source.ROOT / ".git").exists():
        assert sha is not None and len(sha) == 40
    else:
        assert sha is None
