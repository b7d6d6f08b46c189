"""Optional per-trial captures (the campaign's `capture` list), kept gzipped.

    with Captures(kinds, folder, server_netns, server_dev) as cap:   # one block
        flags = cap.chromium_flags(k)     # trial k's browser: net-log, TLS key log
        cap.start(k)                      # trial k's packet capture begins (pcap)
        ...
    files, sizes = cap.collect(k)         # {"pcap.pcap.gz": bytes, ...}, sizes

- netlog: Chromium's net-log of the trial (--log-net-log), netlog.json.gz;
- keylog: the TLS secrets Chromium used, TCP and QUIC (--ssl-key-log-file), in
  NSS key log format, keylog.txt.gz (with pcap, Wireshark decrypts the trial);
- pcap: every packet on the server namespace's link to the client, headers
  and payload (tcpdump from the trial's browser launch to the next one's),
  pcap.pcap.gz;
- mozlog: Firefox's HTTP log of the trial (MOZ_LOG=MOZLOG_MODULES, every
  process's file joined), mozlog.txt.gz: which connection, HTTP/2 or HTTP/3, each
  transaction was dispatched on (testbed.validate.firefox reads it);
- qlog: h3server's qlog of each QUIC connection of the trial (`<id>.sqlog`,
  JSON-SEQ), qlog.tar.gz; h3server writes them into the servers' qlog folder
  (testbed.campaign.run.servers), the trial's are those its summary added.

The browser writes its files as the testbed user into a folder of its own
(0700, in root's folder of the block's captures, 0750 group testbed);
root reads them without following a link (testbed.host.safefs) and gzips them (the
standard library's gzip: readable everywhere, no extra dependency). The
folder is removed when the block ends.
"""

from __future__ import annotations

import gzip
import io
import logging
import os
import tarfile
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Self

from results_contract import trial_folder
from testbed.errors import TestbedError
from testbed.host import safefs
from testbed.measure.tcpdump import Tcpdump

KINDS = ("netlog", "pcap", "keylog", "qlog", "mozlog")
FILES = trial_folder.CAPTURES
MOZLOG_MODULES = "timestamp,nsHttp:4,nsSocketTransport:4"
"""Firefox's log modules for `mozlog`: the HTTP transactions and connections (level 4,
Debug), each line with its time."""
"""Capture -> the file it becomes in the trial's folder."""
LEVEL = 6

log = logging.getLogger(__name__)


class Captures:
    """One block's captures (kinds: a subset of KINDS; empty: nothing at all)."""

    def __init__(self, kinds, folder: Path, server_netns: str, server_dev: str):
        self.kinds = tuple(kinds)
        self.folder = Path(folder)
        self.server_netns = server_netns
        self.server_dev = server_dev
        self.browser_dir: Path | None = None
        self._pcap: ExitStack | None = None

    def __enter__(self) -> Self:
        if self.kinds:
            safefs.root_dir(self.folder, group=True)  # no other account's to enter
            if {"netlog", "keylog", "mozlog"} & set(self.kinds):
                self.browser_dir = safefs.user_dir(self.folder / "browser")
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._stop_pcap()
        finally:
            if self.kinds:
                safefs.rmtree(self.folder)

    def chromium_flags(self, k: int) -> list[str]:
        flags = []
        if "netlog" in self.kinds and self.browser_dir is not None:
            flags.append(f"--log-net-log={self.browser_dir / f'netlog-{k}.json'}")
        if "keylog" in self.kinds and self.browser_dir is not None:
            flags.append(f"--ssl-key-log-file={self.browser_dir / f'keylog-{k}.txt'}")
        return flags

    def firefox_env(self, k: int) -> dict[str, str]:
        """Trial k's Firefox environment (its launcher sets it): the HTTP log."""
        if "mozlog" in self.kinds and self.browser_dir is not None:
            return {"MOZ_LOG": MOZLOG_MODULES,
                    "MOZ_LOG_FILE": str(self.browser_dir / f"mozlog-{k}")}
        return {}

    def start(self, k: int) -> None:
        """Trial k's packet capture begins (the previous trial's ends); a tcpdump that
        does not start leaves the trial without a pcap, as a capture it did not leave."""
        if "pcap" not in self.kinds:
            return
        self._stop_pcap()
        out = self.folder / f"pcap-{k}.pcap"
        # -Z root: the file stays root's
        dump = Tcpdump(["ip", "netns", "exec", self.server_netns], self.server_dev, out,
                       log=self.folder / f"pcap-{k}.log", options=("-Z", "root", "-q"),
                       ready_s=5.0, grace=2.0)
        exits = ExitStack()
        try:
            exits.enter_context(dump)
        except TestbedError as e:
            log.warning("trial %d: no packet capture: %s", k, e)
            return
        self._pcap = exits

    def _stop_pcap(self) -> None:
        exits, self._pcap = self._pcap, None
        if exits is not None:
            exits.close()

    def stop(self) -> None:
        """The capture running now ends (the block's last trial)."""
        self._stop_pcap()

    def collect(self, k: int, qlogs: Sequence[Path] = ()) -> tuple[dict[str, bytes],
                                                               dict[str, dict[str, int]]]:
        """Trial k's captures gzipped (file name -> bytes) and, per capture, its size
        before and after compression; a capture the trial did not leave is absent.
        qlogs: the qlog files of trial k's QUIC connections (read, then removed)."""
        files, sizes = {}, {}
        for kind in self.kinds:
            if kind == "qlog":
                got = self._qlogs(qlogs)
                if got is not None:
                    files[FILES[kind]], sizes[kind] = got
                continue
            raw = self._read(kind, k)
            if raw is None:
                continue
            packed = gzip.compress(raw, LEVEL)
            files[FILES[kind]] = packed
            sizes[kind] = {"bytes": len(raw), "stored_bytes": len(packed)}
        return files, sizes

    @staticmethod
    def _qlogs(paths: Sequence[Path]) -> tuple[bytes, dict[str, int]] | None:
        """The qlogs (the testbed user's files, read without following a link) in one
        gzipped tar, and their sizes; None when the trial has none."""
        buf, total, n = io.BytesIO(), 0, 0
        with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=LEVEL) as tar:
            for path in sorted(paths):
                try:
                    raw = safefs.read_user(path, beneath=path.parent)
                except (FileNotFoundError, safefs.UnsafePath):
                    continue
                info = tarfile.TarInfo(path.name)
                info.size, info.mode = len(raw), 0o644
                tar.addfile(info, io.BytesIO(raw))
                total += len(raw)
                n += 1
                path.unlink(missing_ok=True)  # a name in the user's folder: no link followed
        if n == 0:
            return None
        packed = buf.getvalue()
        return packed, {"bytes": total, "stored_bytes": len(packed), "files": n}

    def _read(self, kind: str, k: int) -> bytes | None:
        try:
            if kind == "pcap":
                path = self.folder / f"pcap-{k}.pcap"
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
                with os.fdopen(fd, "rb") as f:
                    return f.read()
            if kind == "mozlog" and self.browser_dir is not None:
                # one file per process: mozlog-K.moz_log, mozlog-K.child-N.moz_log, ...
                parts = sorted(p for p in self.browser_dir.iterdir()
                               if p.name == f"mozlog-{k}"
                               or p.name.startswith(f"mozlog-{k}."))
                if not parts:
                    return None
                return b"".join(f"==> {p.name} <==\n".encode() + safefs.read_user(
                    p, beneath=self.browser_dir) for p in parts)
            if kind in ("netlog", "keylog") and self.browser_dir is not None:
                name = f"netlog-{k}.json" if kind == "netlog" else f"keylog-{k}.txt"
                return safefs.read_user(self.browser_dir / name, beneath=self.browser_dir)
        except (FileNotFoundError, safefs.UnsafePath):  # none, or not a plain file
            return None
        return None
