"""Which commit of the testbed's own source is running, for the manifest.

Read from the checkout's git files (`.git/HEAD`, the branch it names, `packed-refs`;
a worktree's `.git` file and `commondir` too), never by running git: root does not
run a program, or read a configuration, that someone else may have put in a
checkout. Each file is read capped and without following a symlink at its last
step, and only a value of the expected form is kept (40 hex digits, a ref name
under refs/), so a planted file can make the answer "unknown", never copy another
file into a manifest. Whether the tree has uncommitted changes needs git's index
and is not said.
"""

from __future__ import annotations

import re
from pathlib import Path

from testbed import __version__
from testbed.host.paths import ROOT
from testbed.host.safefs import read_capped

_SHA = re.compile(r"[0-9a-f]{40}")
_REF = re.compile(r"refs/[A-Za-z0-9._/-]{1,200}")
_SMALL = 4096
_PACKED = 1 << 20


def _read(path: Path, limit: int = _SMALL) -> str | None:
    try:
        return read_capped(path, limit, follow_symlinks=False).decode("ascii")
    except (OSError, ValueError):  # ValueError: not a regular file, too long, not ASCII
        return None


def _git_dirs(root: Path) -> tuple[Path, Path] | None:
    """(the folder holding HEAD, the folder holding refs) of the checkout at root."""
    dot = root / ".git"
    if dot.is_dir() and not dot.is_symlink():
        return dot, dot
    text = _read(dot)  # a worktree: "gitdir: <path>"
    if text is None or not text.startswith("gitdir: "):
        return None
    head_dir = (root / text[len("gitdir: "):].strip()).resolve()
    common = _read(head_dir / "commondir")
    refs_dir = (head_dir / common.strip()).resolve() if common else head_dir
    return head_dir, refs_dir


def commit(root: Path = ROOT) -> tuple[str | None, str | None]:
    """(the checked-out commit, the branch's ref or None when detached); (None, None)
    when root is not a git checkout or its files are not of the expected form."""
    dirs = _git_dirs(root)
    if dirs is None:
        return None, None
    head_dir, refs_dir = dirs
    head = (_read(head_dir / "HEAD") or "").strip()
    if _SHA.fullmatch(head):
        return head, None
    if not head.startswith("ref: ") or not _REF.fullmatch(ref := head[5:]) or ".." in ref:
        return None, None
    loose = (_read(refs_dir / ref) or "").strip()
    if _SHA.fullmatch(loose):
        return loose, ref
    for line in (_read(refs_dir / "packed-refs", _PACKED) or "").splitlines():
        sha, _, name = line.partition(" ")
        if name == ref and _SHA.fullmatch(sha):
            return sha, ref
    return None, ref


def version(root: Path = ROOT) -> str:
    """The manifest's `testbed` version: "0.1.0 <commit> (<branch>)", "0.1.0 <commit>"
    when detached, "0.1.0" outside a git checkout."""
    sha, ref = commit(root)
    if sha is None:
        return __version__
    branch = ref.removeprefix("refs/heads/") if ref else None
    return f"{__version__} {sha}" + (f" ({branch})" if branch else "")
