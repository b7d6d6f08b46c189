"""Root's writes and reads around folders the testbed user controls (testbed.host.safefs).

Each test plants what a testbed-user process could plant (a symlink to a
root-only canary, a FIFO, a folder of its own) and checks that nothing is
written or read through it."""

from __future__ import annotations

import errno
import os
import pwd
import stat
from pathlib import Path

import pytest

from testbed.errors import InputError
from testbed.host import safefs

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root and the testbed user")

SECRET = "CANARY-root-only-content"


@pytest.fixture
def tb():
    return pwd.getpwnam(safefs.USER)


@pytest.fixture
def canary(tmp_path):
    d = tmp_path / "root-only"
    d.mkdir(mode=0o700)
    c = d / "canary"
    c.write_text(SECRET)
    c.chmod(0o600)
    return c


def unchanged(canary: Path, before: os.stat_result) -> bool:
    st = canary.stat()
    return (canary.read_text() == SECRET and st.st_mtime_ns == before.st_mtime_ns
            and st.st_mode == before.st_mode)


def given(path: Path, tb) -> Path:
    os.chown(path, tb.pw_uid, tb.pw_gid, follow_symlinks=False)
    return path


# --- root's own folders --------------------------------------------------------------

def test_write_file_refuses_a_folder_of_the_testbed_user(tmp_path, canary, tb):
    d = tmp_path / "theirs"
    d.mkdir()
    given(d, tb)
    (d / "nginx.conf").symlink_to(canary)
    before = canary.stat()
    with pytest.raises(safefs.UnsafePath, match="only root can write"):
        safefs.write_file(d / "nginx.conf", "x")
    assert unchanged(canary, before)


def test_write_file_refuses_a_group_writable_folder_of_the_testbed_group(tmp_path, tb):
    d = tmp_path / "shared"
    d.mkdir()
    os.chown(d, 0, tb.pw_gid)
    d.chmod(0o770)
    with pytest.raises(safefs.UnsafePath):
        safefs.write_file(d / "f", "x")
    assert not (d / "f").exists()


def test_write_file_replaces_a_symlink_instead_of_writing_through_it(tmp_path, canary):
    (tmp_path / "leaf.key").symlink_to(canary)
    before = canary.stat()
    safefs.write_file(tmp_path / "leaf.key", "key", mode=0o640, group=True)
    st = (tmp_path / "leaf.key").lstat()
    assert stat.S_ISREG(st.st_mode) and st.st_uid == 0
    assert st.st_gid == safefs.user_group() and stat.S_IMODE(st.st_mode) == 0o640
    assert unchanged(canary, before)


def test_root_dir_is_root_s_with_the_testbed_group_reading(tmp_path):
    d = safefs.root_dir(tmp_path / "replay", group=True)
    st = d.lstat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (0, safefs.user_group(), 0o750)
    with pytest.raises(FileExistsError):
        safefs.root_dir(tmp_path / "replay")


def test_user_dir_gives_the_folder_and_its_subfolders_away(tmp_path, tb):
    d = safefs.user_dir(tmp_path / "var", "tmp", mode=0o750)
    for p in (d, d / "tmp"):
        assert (p.stat().st_uid, stat.S_IMODE(p.stat().st_mode)) == (tb.pw_uid, 0o750)


def test_user_dir_is_the_testbed_user_s_alone_by_default(tmp_path, tb):
    d = safefs.user_dir(tmp_path / "browsertime", "video")
    for p in (d, d / "video"):
        assert (p.stat().st_uid, stat.S_IMODE(p.stat().st_mode)) == (tb.pw_uid, 0o700)


def test_user_dir_is_made_only_in_root_s_folders(tmp_path, tb):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    given(theirs, tb)
    with pytest.raises(safefs.UnsafePath):
        safefs.user_dir(theirs / "var")


# --- the testbed user's folders ---------------------------------------------------------

def test_write_at_replaces_a_planted_symlink(tmp_path, canary, tb):
    ctl = safefs.user_dir(tmp_path / "ctl")
    (ctl / "flags-1.json").symlink_to(canary)
    given(ctl / "flags-1.json", tb)
    before = canary.stat()
    fd = safefs.open_dir(ctl)
    try:
        safefs.write_at(fd, "flags-1.json", '{"flags": []}')
    finally:
        os.close(fd)
    assert not (ctl / "flags-1.json").is_symlink()
    assert (ctl / "flags-1.json").read_text() == '{"flags": []}'
    assert unchanged(canary, before)


def test_write_at_creates_its_temporary_file_exclusively(tmp_path, canary, monkeypatch):
    ctl = safefs.user_dir(tmp_path / "ctl")
    monkeypatch.setattr(safefs.secrets, "token_hex", lambda n: "guessed")
    (ctl / ".go-1.json.guessed.tmp").symlink_to(canary)
    before = canary.stat()
    fd = safefs.open_dir(ctl)
    try:
        with pytest.raises(FileExistsError):
            safefs.write_at(fd, "go-1.json", "{}")
    finally:
        os.close(fd)
    assert unchanged(canary, before)
    assert not (ctl / "go-1.json").exists()


def test_write_at_takes_a_file_name_only(tmp_path):
    fd = safefs.open_dir(safefs.user_dir(tmp_path / "ctl"))
    try:
        with pytest.raises(safefs.UnsafePath):
            safefs.write_at(fd, "../escape", "x")
    finally:
        os.close(fd)
    assert not (tmp_path / "escape").exists()


def test_open_dir_refuses_a_symlink_and_another_owner(tmp_path, tb):
    real = safefs.user_dir(tmp_path / "real")
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(safefs.UnsafePath, match="symlink"):
        safefs.open_dir(tmp_path / "link")
    (tmp_path / "roots").mkdir()
    with pytest.raises(safefs.UnsafePath, match="owned by root"):
        safefs.open_dir(tmp_path / "roots")


def test_read_user_refuses_a_symlink_without_reading_it(tmp_path, canary):
    (tmp_path / "done-1.json").symlink_to(canary)
    with pytest.raises(safefs.UnsafePath) as e:
        safefs.read_user(tmp_path / "done-1.json")
    assert SECRET not in str(e.value)


def test_read_user_refuses_a_symlinked_folder_on_the_way(tmp_path, canary):
    out = tmp_path / "out"
    out.mkdir()
    (out / "video").symlink_to(canary.parent)
    with pytest.raises(safefs.UnsafePath):
        safefs.read_user(out / "video" / "canary", beneath=out)
    with pytest.raises(safefs.UnsafePath):
        safefs.read_user(out / ".." / "root-only" / "canary", beneath=out)


def test_read_user_refuses_a_fifo_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "summary.json")
    with pytest.raises(safefs.UnsafePath):
        safefs.read_user(tmp_path / "summary.json")


def test_read_user_reads_a_regular_file_and_reports_a_missing_one(tmp_path):
    (tmp_path / "a").write_bytes(b"data")
    assert safefs.read_user(tmp_path / "a") == b"data"
    with pytest.raises(FileNotFoundError):
        safefs.read_user(tmp_path / "b")


def test_logs_are_neither_opened_nor_read_through_a_symlink(tmp_path, canary, tb):
    (tmp_path / "nginx.log").symlink_to(canary)
    before = canary.stat()
    with pytest.raises(safefs.UnsafePath):
        safefs.open_log(tmp_path / "nginx.log")
    assert safefs.read_log(tmp_path / "nginx.log") == ""
    theirs = tmp_path / "theirs.log"
    theirs.write_text("")
    given(theirs, tb)
    with pytest.raises(safefs.UnsafePath, match="not a log file"):
        safefs.open_log(theirs)
    assert unchanged(canary, before)


def test_rmtree_removes_the_tree_not_what_its_symlinks_point_at(tmp_path, canary, tb):
    d = safefs.user_dir(tmp_path / "profile")
    (d / "out").symlink_to(canary.parent)
    (d / "file").symlink_to(canary)
    safefs.rmtree(d)
    assert not d.exists() and canary.read_text() == SECRET


def test_background_logs_refuse_a_planted_symlink(tmp_path, canary):
    from testbed.host import proc

    (tmp_path / "uwsgi.log").symlink_to(canary)
    before = canary.stat()
    with pytest.raises(safefs.UnsafePath), proc.Background(["true"], log=tmp_path / "uwsgi.log"):
        pass
    assert unchanged(canary, before)


# --- results, recordings, reports -----------------------------------------------------------

def test_out_dir_through_a_symlink_of_the_testbed_user_is_refused(tmp_path, canary, tb):
    (tmp_path / "results").symlink_to(canary.parent)
    given(tmp_path / "results", tb)
    with pytest.raises(InputError, match="belongs to testbed"):
        safefs.check_out_dir(tmp_path / "results" / "smoke")


def test_out_dir_through_a_symlink_of_root_is_followed_and_checked(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to("real")
    assert safefs.check_out_dir(tmp_path / "link" / "new") == tmp_path / "real" / "new"


def test_out_dir_in_a_folder_of_the_testbed_user_is_refused(tmp_path, tb):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    given(theirs, tb)
    with pytest.raises(InputError, match="theirs belongs to testbed"):
        safefs.check_out_dir(theirs / "results")


def test_out_dir_to_be_made_in_a_sticky_shared_folder_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    with pytest.raises(InputError, match="make the folder first"):
        safefs.check_out_dir(shared / "results")
    (shared / "mine").mkdir()
    assert safefs.check_out_dir(shared / "mine") == shared / "mine"


def test_out_dir_holding_a_file_of_the_testbed_user_is_refused(tmp_path, canary, tb):
    out = tmp_path / "results"
    (out / "trials").mkdir(parents=True)
    (out / "trials" / "manifest.json").symlink_to(canary)
    with pytest.raises(InputError, match="symlink"):
        safefs.check_out_dir(out)
    (out / "trials" / "manifest.json").unlink()
    (out / "trials" / "x").write_text("")
    given(out / "trials" / "x", tb)
    with pytest.raises(InputError, match="of testbed"):
        safefs.check_out_dir(out)


def test_out_file_is_written_by_rename_in_a_checked_folder(tmp_path, canary, tb):
    out = safefs.write_out_file(tmp_path / "t.csv", "a,b\n", "--csv")
    assert out.read_text() == "a,b\n"
    with pytest.raises(InputError, match="expected a file"):
        safefs.check_out_file(tmp_path, "--csv")
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    given(theirs, tb)
    (theirs / "t.csv").symlink_to(canary)
    given(theirs / "t.csv", tb)
    before = canary.stat()
    with pytest.raises(InputError):
        safefs.write_out_file(theirs / "t.csv", "x", "--csv")
    assert unchanged(canary, before)


def test_read_capped_reads_only_small_regular_files(tmp_path):
    f = tmp_path / "f"
    f.write_bytes(b"x" * 10)
    assert safefs.read_capped(f, 10) == b"x" * 10
    with pytest.raises(ValueError, match="^11 bytes, expected at most 10$"):
        f.write_bytes(b"x" * 11)
        safefs.read_capped(f, 10)
    os.mkfifo(tmp_path / "fifo")  # nobody writes it: a blocking open would wait for ever
    with pytest.raises(ValueError, match="not a regular file"):
        safefs.read_capped(tmp_path / "fifo", 10)
    (tmp_path / "link").symlink_to(f)
    assert safefs.read_capped(tmp_path / "link", 100) == b"x" * 11
    with pytest.raises(OSError) as e:
        safefs.read_capped(tmp_path / "link", 100, follow_symlinks=False)
    assert e.value.errno == errno.ELOOP


def test_open_folder_does_not_follow_a_symlink(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    fd = safefs.open_folder(real)
    try:
        assert os.path.samestat(os.fstat(fd), real.stat())
    finally:
        os.close(fd)
    with pytest.raises(safefs.UnsafePath, match="a symlink or not a folder"):
        safefs.open_folder(tmp_path / "link")
    with pytest.raises(FileNotFoundError):
        safefs.open_folder(tmp_path / "none")


def test_read_user_capped_follows_no_symlink_and_reads_at_most_the_cap(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "f").write_bytes(b"12345")
    (tmp_path / "via").symlink_to(tmp_path / "sub")
    assert safefs.read_user_capped(tmp_path / "sub" / "f", 5, beneath=tmp_path) == b"12345"
    with pytest.raises(ValueError, match="5 bytes, expected at most 4"):
        safefs.read_user_capped(tmp_path / "sub" / "f", 4)
    with pytest.raises(safefs.UnsafePath):
        safefs.read_user_capped(tmp_path / "via" / "f", 5, beneath=tmp_path)
