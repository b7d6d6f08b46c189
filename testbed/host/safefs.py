"""Root's file writes: never through a path the testbed user controls.

Every process the testbed starts as the testbed user (the servers, Chromium,
Browsertime, mitmproxy, a replay's CMD) can replace any file in a folder it
may write with a symlink at any moment. So root:

- writes configuration, keys and its own logs only in folders it made and
  only it can write (`root_dir`: 0755, or 0750 with group testbed); a file the
  testbed user must read gets group testbed and mode 0640 or 0644, never its
  ownership (`write_file`);
- gives the testbed user folders of its own to write (`user_dir`, 0700) and
  afterwards writes into them only with `write_at`: relative to a folder fd
  opened with O_NOFOLLOW|O_DIRECTORY whose owner it checked (`open_dir`), a
  new file (O_CREAT|O_EXCL|O_NOFOLLOW) renamed into place;
- reads what the testbed user wrote with `read_user` / `open_user` (no
  symlink at any step, regular files only): a symlink to /etc/shadow is
  refused, never read, copied or printed;
- reads a folder someone else may rename and replace (a recording) from one
  descriptor (`open_folder`, O_NOFOLLOW|O_DIRECTORY, then dir_fd= reads), and a
  file of theirs it keeps (a trace) once, capped (`read_user_capped`);
- opens its processes' logs with `open_log` (O_NOFOLLOW, its own files only);
- removes trees the testbed user wrote in with `rmtree` (fd-based, does not
  follow symlinks);
- writes results, recordings and reports (`--out`) only where every folder
  on the way belongs to root or the invoking user and the testbed user cannot
  write (`check_out_dir`, `check_out_file`): checked component by component,
  symlinks included, before anything is written; the caches a campaign trusts
  (TESTBED_LANES_DIR, TESTBED_CALIBRATION_DIR) alike;
- runs a program named by its path (TESTBED_H3SERVER, the checkout's tools) only
  when it and every folder on its way are root's or the invoking user's and
  nobody else can change them (`check_root_program`).

The audit of root's writes and how each is safe is in
docs/isolation-and-security.md ("Root never follows a path the `testbed` user
controls").
"""

from __future__ import annotations

import errno
import os
import pwd
import secrets
import shutil
import stat
from pathlib import Path
from typing import BinaryIO

from testbed.errors import InputError, TestbedError
from testbed.host.paths import CHOSEN_BY, USER, chown_to_user, user, user_gids, user_group

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_LINKS = 40


class UnsafePath(TestbedError):
    """A path root refuses to write or read through (a symlink, another user's file)."""


# --- who may write (the testbed user itself: testbed.host.paths) ---------------------------

def trusted_uids() -> frozenset[int]:
    """Owners root writes below: root, this process's user and the user who ran sudo;
    never the testbed user."""
    uids = {0, os.getuid(), os.geteuid()}
    sudo = os.environ.get("SUDO_UID", "")
    if sudo.isdigit():
        uids.add(int(sudo))
    try:
        uids.discard(user().pw_uid)
    except TestbedError:
        pass
    return frozenset(uids)


def user_can_write(st: os.stat_result) -> bool:
    """Whether the testbed user may create, rename or replace entries in this folder."""
    try:
        pw = user()
    except TestbedError:
        return bool(st.st_mode & stat.S_IWOTH)
    if st.st_uid == pw.pw_uid or st.st_mode & stat.S_IWOTH:
        return True
    return bool(st.st_mode & stat.S_IWGRP) and st.st_gid in user_gids()


def _owner(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


# --- root's folders and files --------------------------------------------------------

def check_root_dir(path: Path, st: os.stat_result | None = None) -> None:
    """UnsafePath unless path (not followed if a symlink) is a folder of root's (or the
    invoking user's) that the testbed user cannot write."""
    st = os.lstat(path) if st is None else st
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafePath(f"{path}: expected a folder, found "
                         f"{'a symlink' if stat.S_ISLNK(st.st_mode) else 'something else'}")
    if st.st_uid not in trusted_uids() or user_can_write(st):
        raise UnsafePath(f"{path}: expected a folder only root can write, found one owned by "
                         f"{_owner(st.st_uid)} with mode {stat.S_IMODE(st.st_mode):04o}")


def root_dir(path: Path, *, group: bool = False, exist_ok: bool = False) -> Path:
    """A new folder only root writes: 0755, or 0750 with group testbed (group=True: the
    testbed user reads it, nobody else). Its parent must be root's too."""
    path = Path(path)
    check_root_dir(path.parent)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        if not exist_ok:
            raise
    st = os.lstat(path)
    if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid():
        if group:
            chown_to_user(path, group_only=True)
        os.chmod(path, 0o750 if group else 0o755)  # a folder of ours in one of ours
    check_root_dir(path)
    return path


def user_dir(path: Path, *subdirs: str, mode: int = 0o700) -> Path:
    """A new folder the testbed user writes (made in one of root's folders and given
    away last, with `subdirs` made inside it first). Root never writes into it
    afterwards except with write_at. The testbed user's alone by default (0700), so
    what the browser, a server or the proxy writes there no other account reads."""
    path = Path(path)
    check_root_dir(path.parent)
    user()  # the user exists before anything is made
    os.mkdir(path, 0o700)  # root's until every subfolder is made and given away
    for sub in subdirs:
        d = path / sub
        os.mkdir(d, 0o700)
        chown_to_user(d)
        os.chmod(d, mode)
    chown_to_user(path)
    os.chmod(path, mode)
    return path


def write_file(path: Path, data: bytes | str, *, mode: int = 0o644,
               group: bool = False) -> Path:
    """Write path in one of root's folders (checked): a new file, fully written, renamed
    into place. group=True: group testbed (mode 0640 lets the testbed user read it)."""
    path = Path(path)
    fd = os.open(path.parent, _DIR_FLAGS)
    try:
        check_root_dir(path.parent, os.fstat(fd))
        _write_in(fd, path.name, data, mode, user_group() if group else -1)
    finally:
        os.close(fd)
    return path


def _write_in(dirfd: int, name: str, data: bytes | str, mode: int, gid: int = -1) -> None:
    if "/" in name or name in ("", ".", ".."):
        raise UnsafePath(f"{name!r}: expected a file name")
    tmp = f".{name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600, dir_fd=dirfd)
    try:
        with os.fdopen(fd, "wb", closefd=False) as f:
            f.write(data.encode() if isinstance(data, str) else data)
        if gid != -1:
            os.fchown(fd, -1, gid)
        os.fchmod(fd, mode)
    except BaseException:
        os.close(fd)
        os.unlink(tmp, dir_fd=dirfd)
        raise
    os.close(fd)
    os.rename(tmp, name, src_dir_fd=dirfd, dst_dir_fd=dirfd)  # replaces a symlink, never follows it


# --- the testbed user's folders --------------------------------------------------------

def open_dir(path: Path, *, owner: int | None = None) -> int:
    """A folder's fd, opened without following a symlink at its last step, whose owner
    is `owner` (default: the testbed user). Close it with os.close."""
    owner = user().pw_uid if owner is None else owner
    try:
        fd = os.open(path, _DIR_FLAGS)
    except OSError as e:
        raise UnsafePath(f"{path}: not opened as a folder ({e.strerror}); a symlink or "
                         f"something else was put in its place") from None
    st = os.fstat(fd)
    if st.st_uid != owner:
        os.close(fd)
        raise UnsafePath(f"{path}: owned by {_owner(st.st_uid)}, expected {_owner(owner)}")
    return fd


def write_at(dirfd: int, name: str, data: bytes | str, *, mode: int = 0o644) -> None:
    """Write `name` in the folder `dirfd` (one of the testbed user's, see open_dir): a
    new file (O_CREAT|O_EXCL|O_NOFOLLOW) renamed into place, so a symlink or file the
    user planted under either name is never written through."""
    _write_in(dirfd, name, data, mode)


def open_user(path: Path, *, beneath: Path | None = None) -> int:
    """An fd for reading a regular file the testbed user wrote. No step of `path` below
    `beneath` (default: its folder) may be a symlink; FileNotFoundError if it is not
    there; UnsafePath for a symlink, a FIFO, a device or a folder."""
    path = Path(path)
    base = Path(beneath) if beneath is not None else path.parent
    parts = path.relative_to(base).parts
    if not parts or ".." in parts:
        raise UnsafePath(f"{path}: expected a file below {base}")
    fd = os.open(base, _DIR_FLAGS)
    try:
        for part in parts[:-1]:
            nxt = _open_step(fd, part, _DIR_FLAGS, path)
            os.close(fd)
            fd = nxt
        f = _open_step(fd, parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
                       | os.O_CLOEXEC, path)
    finally:
        os.close(fd)
    if not stat.S_ISREG(os.fstat(f).st_mode):
        os.close(f)
        raise UnsafePath(f"{path}: not a regular file; not read")
    return f


def _open_step(dirfd: int, name: str, flags: int, path: Path) -> int:
    try:
        return os.open(name, flags, dir_fd=dirfd)
    except FileNotFoundError:
        raise
    except OSError as e:  # ELOOP (a symlink), ENOTDIR, ENXIO (a FIFO's other end)
        raise UnsafePath(f"{path}: a symlink or not a regular file ({e.strerror}); "
                         f"not read") from None


def read_user(path: Path, *, beneath: Path | None = None) -> bytes:
    """The bytes of a regular file the testbed user wrote (see open_user)."""
    with os.fdopen(open_user(path, beneath=beneath), "rb") as f:
        return f.read()


def read_user_text(path: Path, *, beneath: Path | None = None) -> str:
    return read_user(path, beneath=beneath).decode(errors="replace")


def read_user_capped(path: Path, limit: int, *, beneath: Path | None = None) -> bytes:
    """The bytes of a regular file someone else wrote (opened as open_user: no symlink
    at any step below `beneath`), which may hold at most `limit` of them (ValueError
    'N bytes, expected at most M' if it holds more)."""
    with os.fdopen(open_user(path, beneath=beneath), "rb") as f:
        return _read_upto(f, limit)


def open_folder(path: Path) -> int:
    """A folder's fd, whoever owns it, opened without following a symlink at its last
    step: work below it with dir_fd= (openat), so that every read is from this one
    folder even if its path is given to another afterwards. FileNotFoundError if it
    is missing; UnsafePath for a symlink or something else. Close it with os.close."""
    try:
        return os.open(path, _DIR_FLAGS)
    except FileNotFoundError:
        raise
    except OSError as e:  # ELOOP or ENOTDIR: a symlink, a file
        raise UnsafePath(f"{path}: a symlink or not a folder ({e.strerror}); "
                         "not opened") from None


def open_log(path: Path) -> BinaryIO:
    """Open one of root's log files for appending (a binary file object): created if
    missing, never through a symlink, never a file another user owns."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
                     | os.O_NONBLOCK, 0o644)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENXIO):  # a symlink; a FIFO nobody reads
            raise UnsafePath(f"{path}: a symlink or not a regular file; not written") from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
        os.close(fd)
        raise UnsafePath(f"{path}: not a log file of uid {os.geteuid()}; not written")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "ab")


def read_capped(path: Path, limit: int, *, follow_symlinks: bool = True) -> bytes:
    """The bytes of the regular file `path`, which may hold at most `limit` of them.
    A FIFO is never waited on; follow_symlinks=False: a symlink as its last step is
    not opened (OSError ELOOP). OSError if it cannot be opened or read; ValueError
    saying why ('not a regular file', 'N bytes, expected at most M') if it is not
    such a file."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_symlinks else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise ValueError("not a regular file")
    with os.fdopen(fd, "rb") as f:
        return _read_upto(f, limit)


def _read_upto(f: BinaryIO, limit: int) -> bytes:
    """All of the open regular file f, which may hold at most `limit` bytes."""
    size = os.fstat(f.fileno()).st_size
    if size > limit:
        raise ValueError(f"{size} bytes, expected at most {limit}")
    raw = f.read(limit + 1)
    if len(raw) > limit:  # it grew while being read
        raise ValueError(f"more than {limit} bytes, expected at most {limit}")
    return raw


def read_log(path: Path) -> str:
    """A log's text, not following a symlink (empty if it is missing or unsafe)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return ""
        return f.read().decode(errors="replace")


def rmtree(path: Path) -> None:
    """Remove a tree the testbed user may have written in, never following a symlink
    out of it (Python's fd-based rmtree). As root, its folders are taken back first
    (root's, 0700), so a testbed-user process still running cannot refill them."""
    if not shutil.rmtree.avoids_symlink_attacks:  # pragma: no cover - Linux has it
        raise UnsafePath("shutil.rmtree cannot avoid symlink attacks on this platform")
    if os.geteuid() == 0:
        try:
            fd = os.open(path, _DIR_FLAGS)
        except OSError:
            fd = None
        if fd is not None:
            try:
                _reclaim(fd)
            finally:
                os.close(fd)
    shutil.rmtree(path, ignore_errors=True)


def _reclaim(dirfd: int, depth: int = 0) -> None:
    """Make the folder `dirfd` and every folder below it root's, mode 0700 (by fd: a
    symlink put in a folder's place is skipped, never followed)."""
    st = os.fstat(dirfd)
    if st.st_uid != 0 or stat.S_IMODE(st.st_mode) & 0o077:
        os.fchown(dirfd, 0, 0)
        os.fchmod(dirfd, 0o700)
    if depth > 64:
        return
    for entry in os.scandir(dirfd):
        if not entry.is_dir(follow_symlinks=False):
            continue
        try:
            fd = os.open(entry.name, _DIR_FLAGS, dir_fd=dirfd)
        except OSError:
            continue
        try:
            _reclaim(fd, depth + 1)
        finally:
            os.close(fd)


# --- results, recordings, reports (--out) ----------------------------------------------

def _walk(path: Path, what: str) -> tuple[Path, list[str]]:
    """Resolve `path` one step at a time: (deepest existing folder, parts still missing).
    Every folder on the way belongs to a trusted user and is not the testbed user's to
    write (a sticky folder such as /tmp may be passed through: what is in it is checked
    by owner); every symlink followed belongs to a trusted user."""
    trusted = trusted_uids()
    todo = list(Path(os.path.join(os.getcwd(), path)).parts[1:])
    cur = Path("/")
    links = 0
    while todo:
        name = todo.pop(0)
        if name in ("", "."):
            continue
        if name == "..":
            cur = cur.parent
            continue
        nxt = cur / name
        try:
            st = os.lstat(nxt)
        except FileNotFoundError:
            return cur, [name, *todo]
        if st.st_uid not in trusted:
            raise InputError(f"{what} {path}: {nxt} belongs to {_owner(st.st_uid)}; expected "
                             f"a path only root or you can change")
        if stat.S_ISLNK(st.st_mode):
            links += 1
            if links > _MAX_LINKS:
                raise InputError(f"{what} {path}: too many symlinks")
            target = Path(os.readlink(nxt))
            if target.is_absolute():
                cur = Path("/")
            todo = [*target.parts[1 if target.is_absolute() else 0:], *todo]
            continue
        if not stat.S_ISDIR(st.st_mode):
            if todo:
                kind = "a file" if stat.S_ISREG(st.st_mode) else "not a folder"
                raise InputError(f"{what} {path}: {nxt} is {kind}, expected a folder")
            return cur, [name]
        if user_can_write(st) and not (st.st_mode & stat.S_ISVTX and todo):
            raise InputError(f"{what} {path}: {nxt} is writable by the {USER} user; expected "
                             f"a folder only root or you can write")
        cur = nxt
    return cur, []


def check_out_dir(path: Path, what: str = "--out") -> Path:
    """Check before root writes below folder `path` (results, recordings, reports);
    InputError (nothing written) if the testbed user could redirect or change it.
    Returns the resolved path. Not root: nothing to check."""
    path = Path(path)
    if os.geteuid() != 0:
        return path
    base, missing = _walk(path, what)
    if missing:
        if ".." in missing:
            raise InputError(f"{what} {path}: '..' after a missing folder")
        if len(missing) == 1 and _exists_not_dir(base / missing[0]):
            raise InputError(f"{what} {path}: expected a folder, found a file")
        # The folders still to be made: nobody else may make them first.
        if user_can_write(os.lstat(base)):
            raise InputError(f"{what} {path}: {base} is writable by the {USER} user; make the "
                             f"folder first or choose another")
        return base.joinpath(*missing)
    _check_contents(base, what, path)
    return base


def _exists_not_dir(p: Path) -> bool:
    try:
        return not stat.S_ISDIR(os.lstat(p).st_mode)
    except FileNotFoundError:
        return False


def _check_contents(folder: Path, what: str, path: Path, depth: int = 2) -> None:
    """What root writes over inside an existing results folder (two levels: trials/ID)
    must be trusted users' too."""
    trusted = trusted_uids()
    try:
        entries = list(os.scandir(folder))
    except OSError as e:
        raise InputError(f"{what} {path}: cannot list {folder} ({e.strerror})") from None
    for entry in entries:
        st = entry.stat(follow_symlinks=False)
        if st.st_uid not in trusted or entry.is_symlink():
            raise InputError(f"{what} {path}: {entry.path} is "
                             f"{'a symlink' if entry.is_symlink() else 'a file'} of "
                             f"{_owner(st.st_uid)}; expected only root's or yours inside")
        if stat.S_ISDIR(st.st_mode):
            if user_can_write(st):
                raise InputError(f"{what} {path}: {entry.path} is writable by the {USER} user")
            if depth > 1:
                _check_contents(Path(entry.path), what, path, depth - 1)


def check_out_file(path: Path, what: str = "--out") -> Path:
    """Check before root writes file `path` (an export, a JSON): its folder as
    check_out_dir, the file itself (if there) a trusted user's regular file, replaced
    by a rename (never written through). Returns the resolved path."""
    path = Path(path)
    if os.geteuid() != 0:
        return path
    base, missing = _walk(path, what)
    if not missing:
        raise InputError(f"{what} {path}: expected a file, found a folder")
    if len(missing) > 1:
        raise InputError(f"{what} {path}: no folder {base / missing[0]}")
    _check_own_dir_input(base, what, path)
    return base / missing[0]


def check_root_program(path: Path, what: str | None = None) -> None:
    """Check before root runs the program `path` (a build of h3server named by
    TESTBED_H3SERVER, a tool of the checkout): InputError, naming `what` (default: the
    variable that chose the path, paths.CHOSEN_BY, else "program") and the path, unless it and every folder on its way (symlinks followed only where they are
    trusted) belong to root or the invoking user and nobody else can change them (the
    file: no write for group or others). A path that is not there passes only where
    nobody else could put it. Not root: nothing to check."""
    path = Path(path)
    what = what or CHOSEN_BY.get(path, "program")
    if os.geteuid() != 0:
        return
    base, missing = _walk(path, what)
    if not missing:
        raise InputError(f"{what} {path}: expected a program, found a folder")
    if len(missing) > 1 or not os.path.lexists(base / missing[0]):
        if user_can_write(os.lstat(base)):
            raise InputError(f"{what} {path}: {base} is writable by the {USER} user; expected "
                             f"a folder only root or you can write")
        return
    mode = stat.S_IMODE(os.lstat(base / missing[0]).st_mode)
    if mode & 0o022:
        raise InputError(f"{what} {path}: mode {mode:04o}; expected a program only its owner "
                         "can change")


def _check_own_dir_input(folder: Path, what: str, path: Path) -> None:
    try:
        check_root_dir(folder)
    except UnsafePath as e:
        raise InputError(f"{what} {path}: {e}") from None


def write_out_file(path: Path, data: bytes | str, what: str = "--out") -> Path:
    """Write an output file the user named (checked with check_out_file when root)."""
    path = check_out_file(path, what)
    if os.geteuid() != 0:
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        tmp.write_bytes(data.encode() if isinstance(data, str) else data)
        tmp.replace(path)
        return path
    return write_file(path, data, mode=0o644)
