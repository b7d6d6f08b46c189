"""Where recordings are found: the search path, names, relative paths and globs.

    --recordings DIR      (repeatable; a global option of `testbed`)
    TESTBED_RECORDINGS    (folders separated by os.pathsep)
    recordings/           (the checkout's)

How an argument is read (`find`; `base` is the current folder, or a campaign
file's folder for its `sites`):

- an absolute path, or one starting with `.`: that folder, nothing else;
- a relative path with a `/` (`corpus/news`): BASE/corpus/news, else each
  folder of the search path in turn;
- a bare name (`news`): each folder of the search path in turn, the first
  that holds it wins.

`glob` reads a pattern (`corpus/*`, `news-?`) the same way and returns every
recording folder it matches, sorted; in the search path a match found in an
earlier folder hides the same relative path in a later one.

The offline corpus has named sets, built into recordings/corpus/SET/NAME
(`make corpus`, corpus/sets.py): `paper/NAME` (or `paper/*`) is looked up as
written first, then as `corpus/paper/NAME` (`today/NAME` also as `corpus/NAME`); `corpus/NAME`, the name of a
corpus site before the corpus had sets, is looked up as written (a recording
an older build or a researcher put there), then as `corpus/today/NAME`.

Root reads what it finds here, and a folder of the search path may belong to
someone else. Below a search folder a symbolic link is followed only if the
folder holding it is trusted (root's or the invoking user's, and the testbed
user cannot write it); otherwise the lookup is refused with one line naming
the link, and nothing behind it is read. The recording folder's own files
are then opened as testbed.formats.recording does for any recording (no symbolic
link followed for manifest.json, bodies/ or a body).
"""

from __future__ import annotations

import glob as glob_mod
import os
import pwd
import stat
from collections.abc import Iterable
from pathlib import Path

from testbed.errors import InputError
from testbed.host import safefs
from testbed.host.paths import RECORDINGS_DIR

ENV = "TESTBED_RECORDINGS"
CORPUS = "corpus"
"""The offline corpus's folder below recordings/: built by `make corpus`, not in git."""
SETS = ("paper", "today")
"""The corpus's named sets: recordings/corpus/SET/NAME, named SET/NAME."""
LEGACY_SET = "today"
"""The set an older `corpus/NAME` names (the sites the corpus had before it had sets)."""
MAX_DEPTH = 4
"""How deep `walk` looks for recordings below a folder (recordings/corpus/NAME is 2)."""

_given: list[Path] = []


def use_dirs(dirs: Iterable[str | os.PathLike[str]]) -> None:
    """The folders of --recordings, searched first, in the order given."""
    found = []
    for d in dirs:
        p = Path(d)
        if not p.is_dir():
            raise InputError(f"--recordings {d}: expected a folder of recordings, "
                             "found no folder there")
        found.append(p)
    _given[:] = found


def search_dirs() -> list[Path]:
    """The search path: --recordings, then TESTBED_RECORDINGS, then recordings/."""
    out = list(_given)
    out += [Path(p) for p in os.environ.get(ENV, "").split(os.pathsep) if p]
    out.append(RECORDINGS_DIR)
    seen, unique = set(), []
    for d in out:
        key = os.path.abspath(d)
        if key not in seen:
            seen.add(key)
            unique.append(d)
    return unique


def corpus_hint(text: str | os.PathLike[str]) -> str:
    """The fix, as a message's tail, when `text` names something under corpus/ (the
    offline corpus, which a fresh checkout lacks until `make corpus`); else ""."""
    parts = Path(text).parts
    if CORPUS not in parts and not (parts and parts[0] in SETS):
        return ""
    return f"; `make corpus` builds {RECORDINGS_DIR.name}/{CORPUS}/"


def is_glob(text: str) -> bool:
    return any(c in text for c in "*?[")


def _as_given(text: str) -> bool:
    """An absolute path or one starting with '.': read as it is, never searched."""
    return text.startswith((".", "/"))


def _check_text(text: str) -> None:
    if not text or "\0" in text or "\n" in text:
        raise InputError(f"{text!r}: expected a recording name or path")


def aliases(text: str) -> list[str]:
    """What else a relative name or pattern may mean in the corpus's layout, tried
    after it: SET/REST is corpus/SET/REST (and today/REST also corpus/REST, where
    an older build put it); corpus/REST (REST not in a set) is corpus/today/REST."""
    if _as_given(text):
        return []
    head, _, rest = text.partition("/")
    if not rest:
        return []
    if head == LEGACY_SET:  # and where an older build put it
        return [f"{CORPUS}/{text}", f"{CORPUS}/{rest}"]
    if head in SETS:
        return [f"{CORPUS}/{text}"]
    if head == CORPUS and rest.split("/")[0] not in SETS:
        return [f"{CORPUS}/{LEGACY_SET}/{rest}"]
    return []


def find(text: str, base: Path | None = None) -> Path:
    """The recording folder `text` names (see the module's rules); InputError naming
    every place looked in if there is none."""
    try:
        return _find(text, base)
    except InputError:
        for other in aliases(text):
            try:
                return _find(other, base)
            except InputError:
                pass
        raise


def _find(text: str, base: Path | None = None) -> Path:
    _check_text(text)
    base = Path.cwd() if base is None else Path(base)
    if _as_given(text):
        p = base / text
        if p.is_dir():
            return p
        raise InputError(f"{text}: no such recording folder ({p}){corpus_hint(text)}")
    looked = []
    if "/" in text:
        looked.append(str(base))
        if (base / text).is_dir():
            return base / text
    parts = Path(text).parts
    if ".." in parts:
        raise InputError(f"{text}: expected a recording name or a path below a folder of "
                         "the search path, got '..' in it")
    for d in search_dirs():
        looked.append(str(d))
        hit = _below(d, parts)
        if hit is not None:
            return hit
    hint = ""
    if "/" not in text and (base / text).is_dir():
        hint = f"; for the folder {base / text} write ./{text}"
    raise InputError(f"{text}: no such recording (looked in {', '.join(looked)}){hint}"
                     f"{corpus_hint(text)}")


def glob(pattern: str, base: Path | None = None) -> list[Path]:
    """Every recording folder (one holding manifest.json) the pattern matches, sorted;
    [] if none. With the corpus's aliases (`paper/*`, `corpus/*`): what the pattern
    matches as written, then what its alias matches that is not named alike (a
    recording's folder name is its name in a campaign), sorted by name."""
    found = _glob(pattern, base)
    more = [p for other in aliases(pattern) for p in _glob(other, base)]
    if not more:
        return found
    names = {p.name for p in found}
    for p in more:
        if p.name not in names:
            names.add(p.name)
            found.append(p)
    return sorted(found, key=lambda p: p.name)


def _glob(pattern: str, base: Path | None = None) -> list[Path]:
    _check_text(pattern)
    base = Path.cwd() if base is None else Path(base)
    if _as_given(pattern) or "/" in pattern:
        here = _matches(base, pattern, search=False)
        if here or _as_given(pattern):
            return here
    if ".." in Path(pattern).parts:
        raise InputError(f"{pattern}: expected a pattern below a folder of the search path, "
                         "got '..' in it")
    found: dict[str, Path] = {}
    for d in search_dirs():
        for p in _matches(d, pattern, search=True):
            found.setdefault(str(p.relative_to(d)), p)
    return [found[k] for k in sorted(found)]


def _matches(base: Path, pattern: str, search: bool) -> list[Path]:
    if not base.is_dir():
        return []
    out = []
    for m in sorted(glob_mod.glob(pattern, root_dir=base)):
        rel = Path(m)
        p = _below(base, rel.parts) if search else base / rel
        if p is not None and p.is_dir() and os.path.lexists(p / "manifest.json"):
            out.append(base / rel if search else p)
    return out


def walk(base: Path, depth: int = MAX_DEPTH) -> list[Path]:
    """The recording folders below `base` (a folder holding manifest.json is one and is
    not looked into), sorted by their path below base. Hidden entries are skipped
    (a recording being written), and so is a symbolic link in an untrusted folder."""
    out: list[Path] = []
    try:
        entries = sorted(os.scandir(base), key=lambda e: e.name)
    except OSError:
        return out
    trusted = None
    for e in entries:
        if e.name.startswith("."):
            continue
        p = Path(e.path)
        if e.is_symlink():
            trusted = _trusted(base) if trusted is None else trusted
            if not trusted:
                continue
        if not p.is_dir():
            continue
        if os.path.lexists(p / "manifest.json"):
            out.append(p)
        elif depth > 1:
            out += walk(p, depth - 1)
    return out


def _below(d: Path, parts: tuple[str, ...]) -> Path | None:
    """d/parts if it is a folder, reached without following a symbolic link that an
    untrusted folder holds (InputError naming it); None if there is no such folder."""
    if not d.is_dir():
        return None
    cur = d
    for part in parts:
        nxt = cur / part
        try:
            st = os.lstat(nxt)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if stat.S_ISLNK(st.st_mode):
            if not _trusted(cur):
                raise InputError(f"{nxt}: a symbolic link in {cur}, which {_who(cur)} can "
                                 "change; not followed (expected a recording folder)")
            nxt = Path(os.path.realpath(nxt))
            try:
                st = os.stat(nxt)
            except OSError:
                return None
        if not stat.S_ISDIR(st.st_mode):
            return None
        cur = nxt
    return cur


def _trusted(folder: Path) -> bool:
    """Root's or the invoking user's folder that the testbed user (or anyone) cannot write."""
    try:
        st = os.stat(folder)
    except OSError:
        return False
    return st.st_uid in safefs.trusted_uids() and not safefs.user_can_write(st) \
        and not st.st_mode & stat.S_IWOTH


def _who(folder: Path) -> str:
    st = os.stat(folder)
    if st.st_uid not in safefs.trusted_uids():
        try:
            return pwd.getpwuid(st.st_uid).pw_name
        except KeyError:
            return f"uid {st.st_uid}"
    return "another user"
