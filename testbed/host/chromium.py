"""The one Chromium driver: a headless Chromium driven over the DevTools protocol
on a pipe, its profiles, and the flags each part of the testbed gives it.

Used by the recorder (through the recording proxy), the validations, the
doctor and the replay's end-to-end tests (trials themselves are measured by
Browsertime, which gets STACK_FLAGS through the replay environment). Chromium
runs as the testbed user in a namespace (testbed.host.enter.as_user), with its
sandbox, optionally inside Mahimahi shells (`wrap=["mm-delay", "5"]`);
--remote-debugging-pipe means no port is opened: commands go in on fd 3,
replies come out on fd 4 (the pipes survive the execs of ip netns,
testbed.host.enter and Mahimahi's shells).

    with Chromium(env.client_netns, env.chromium_flags()) as browser:
        page = browser.new_page()
        page.navigate("https://example.test/")
        page.evaluate("document.title")
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Self

from testbed.errors import TestbedError
from testbed.host import enter, safefs
from testbed.host.paths import chown_to_user
from testbed.host.runstate import current

BASE_FLAGS = (
    "--headless=new", "--no-first-run", "--no-default-browser-check",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--password-store=basic",
    "--use-mock-keychain", "--mute-audio", "--disable-features=MediaRouter",
)
"""Every Chromium the testbed starts itself gets these (Browsertime adds its own)."""

STACK_FLAGS: dict[str, tuple[str, ...]] = {
    "tcp": ("--disable-quic",),
    "quic": ("--enable-quic", "--origin-to-force-quic-on=*"),
}
"""What makes Chromium use one stack: TCP+TLS+HTTP/2 only, or QUIC/HTTP/3 to every
origin without waiting for an alternative service. The one definition: the replay
environment, the protocol settings, Browsertime's trials (through the replay
environment), the recorder (QUIC off) and the doctor take them from here."""


def make_profile(prefix: str = "chromium-", parent: Path | None = None) -> Path:
    """A fresh, empty profile folder owned by the testbed user (Chromium runs as
    that user), in the run's own folder unless `parent` is given. The caller
    removes it (safefs.rmtree: the testbed user's tree)."""
    profile = Path(tempfile.mkdtemp(prefix=prefix, dir=parent or current().dir))
    chown_to_user(profile)
    return profile


def temp_env(tmp: Path) -> dict[str, str]:
    """The environment that keeps Chromium's temporary files (its
    `org.chromium.Chromium.*` and `scoped_dir*` folders) and what it keeps in its home
    (crash reports, shader and font caches) in `tmp`, a folder of the testbed user's
    alone (make_profile, or a block's tmp/) removed with the profile, instead of /tmp
    and the testbed user's home, where other accounts could read them and a Chromium
    that is killed would leave them behind."""
    return {"TMPDIR": str(tmp), "HOME": str(tmp), "XDG_CACHE_HOME": str(tmp),
            "XDG_CONFIG_HOME": str(tmp)}


def launch_argv(profile: Path, tmp: Path, flags: Sequence[str] = (), *, netns: str | None,
                wrap: Sequence[str] = (), binary: str = "chromium") -> list[str]:
    """The argv that starts Chromium (command(profile, flags)) as the testbed user in
    netns, inside the shells `wrap`, its temporary files in `tmp` and its files its
    user's alone (private_env)."""
    inner = [*wrap, *private_env(tmp), *command(profile, flags, binary)]
    return enter.as_user(inner, netns=netns, env=temp_env(tmp))


PRIVATE = ("/bin/sh", "-c", 'umask 077 && exec env "$@"', "sh")
"""A shell that sets umask 077 and execs `env NAME=VALUE... COMMAND...` (its arguments)."""


def private_env(tmp: Path) -> list[str]:
    """What to put just before a browser-side command (Chromium, or Browsertime with its
    drivers, browser and Xvfb): temp_env(tmp) and umask 077, so that every file and
    folder it makes (profiles, screen recordings, caches) is the testbed user's
    alone. Inside Mahimahi's shells, not around them: they are setuid, so the C
    library drops TMPDIR from the environment they pass on, and the logs they write
    as root (mm-link's, which testbed.emulate.phasegate reads as the testbed user)
    keep their modes."""
    return [*PRIVATE, *(f"{k}={v}" for k, v in temp_env(tmp).items())]


def command(profile: Path, flags: Sequence[str] = (), binary: str = "chromium") -> list[str]:
    """Chromium's command line (before testbed.host.enter.as_user): the base flags, the
    profile, then `flags`."""
    return [binary, *BASE_FLAGS, f"--user-data-dir={profile}", *flags]


class CDPError(TestbedError):
    pass


class Chromium:
    """`with Chromium(netns, flags) as b:` a headless Chromium; closed on exit."""

    def __init__(self, netns: str | None, flags: Sequence[str] = (), *,
                 wrap: Sequence[str] = (), binary: str = "chromium", timeout: float = 60.0) -> None:
        self.netns = netns
        self.flags = list(flags)
        self.wrap = list(wrap)
        self.binary = binary
        self.timeout = timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self._next_id = 0
        self._lock = threading.Condition()
        self._replies: dict[int, dict[str, Any]] = {}
        self._events: list[dict[str, Any]] = []
        self._closed = False
        self.profile: Path | None = None
        self.tmp: Path | None = None
        self.log: Path | None = None

    def __enter__(self) -> Self:
        self.profile = make_profile()
        self.tmp = make_profile(prefix="chromium-tmp-")
        self.log = self.profile.with_suffix(".log")
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        # Move the child's ends out of the way of 3 and 4 before dup2-ing them there.
        cr = fcntl.fcntl(to_child_r, fcntl.F_DUPFD_CLOEXEC, 10)
        cw = fcntl.fcntl(from_child_w, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(to_child_r)
        os.close(from_child_w)

        def child_fds() -> None:
            os.dup2(cr, 3)
            os.dup2(cw, 4)

        argv = launch_argv(self.profile, self.tmp,
                           ["--remote-debugging-pipe", *self.flags, "about:blank"],
                           netns=self.netns, wrap=self.wrap, binary=self.binary)
        try:
            with safefs.open_log(self.log) as log:  # root's folder; never through a symlink
                self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                             stderr=subprocess.STDOUT, preexec_fn=child_fds,  # noqa: PLW1509 (no threads yet)
                                             close_fds=False,
                                             start_new_session=True)
        except BaseException:
            for fd in (cr, cw, to_child_w, from_child_r):
                os.close(fd)
            self.__exit__(None, None, None)  # the profile and temporary folder go
            raise
        os.close(cr)
        os.close(cw)
        self._out = os.fdopen(to_child_w, "wb", buffering=0)
        self._in = os.fdopen(from_child_r, "rb", buffering=0)
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()
        try:
            self.call("Browser.getVersion")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                try:
                    self.call("Browser.close", timeout=5)
                except TestbedError:
                    pass
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, 9)
                    self.proc.wait()
            for f in (self._out, self._in):
                try:
                    f.close()
                except OSError:
                    pass
        if self.tmp is not None:
            safefs.rmtree(self.tmp)  # the testbed user's tree
        if self.profile is not None:
            safefs.rmtree(self.profile)  # the testbed user's tree
            if self.log is not None and not any(exc):
                self.log.unlink(missing_ok=True)

    def netns_pid(self) -> int:
        """A pid in the network namespace the browser runs in (inside Mahimahi's
        shells when wrapped): the first `chromium` process below this one."""
        for pid, comm in self._below():
            if comm == "chromium":
                return pid
        raise CDPError("no chromium process found below the launcher")

    def shell_netns_pids(self) -> list[int]:
        """One pid in each network namespace from the launcher's down to the
        browser's (each Mahimahi shell makes one), outermost first."""
        seen: dict[int, int] = {}
        assert self.proc is not None
        for pid, comm in [(self.proc.pid, ""), *self._below()]:
            try:
                ns = os.stat(f"/proc/{pid}/ns/net").st_ino
            except OSError:
                continue
            seen.setdefault(ns, pid)
            if comm == "chromium":
                break
        return list(seen.values())

    def _below(self) -> Iterator[tuple[int, str]]:
        """(pid, comm) of the launcher's descendants, breadth first."""
        assert self.proc is not None
        todo = [self.proc.pid]
        while todo:
            pid = todo.pop(0)
            try:
                children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                try:
                    comm = Path(f"/proc/{child}/comm").read_text().strip()
                except OSError:
                    continue
                yield child, comm
                todo.append(child)

    # --- protocol ----------------------------------------------------------------
    def _read_loop(self) -> None:
        buf = b""
        while True:
            try:
                chunk = self._in.read(1 << 16)
            except (OSError, ValueError):
                chunk = b""
            if not chunk:
                break
            buf += chunk
            *msgs, buf = buf.split(b"\0")
            with self._lock:
                for m in msgs:
                    msg = json.loads(m)
                    if "id" in msg:
                        self._replies[msg["id"]] = msg
                    else:
                        self._events.append(msg)
                self._lock.notify_all()
        with self._lock:
            self._closed = True
            self._lock.notify_all()

    def _tail(self) -> str:
        if self.log and self.log.exists():
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-10:])
        return ""

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None,
             timeout: float | None = None) -> dict[str, Any]:
        with self._lock:
            self._next_id += 1
            msg_id = self._next_id
        msg = {"id": msg_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        try:
            self._out.write(json.dumps(msg).encode() + b"\0")
        except (BrokenPipeError, ValueError):
            raise CDPError(f"chromium is gone (calling {method}); its log ends:\n"
                           f"{self._tail()}") from None
        deadline = time.monotonic() + (timeout or self.timeout)
        with self._lock:
            while msg_id not in self._replies:
                left = deadline - time.monotonic()
                if self._closed:
                    raise CDPError(f"chromium closed the pipe (calling {method}); its log "
                                   f"ends:\n{self._tail()}")
                if left <= 0:
                    raise CDPError(f"chromium did not answer {method} within "
                                   f"{timeout or self.timeout:.0f} s")
                self._lock.wait(left)
            reply = self._replies.pop(msg_id)
        if "error" in reply:
            raise CDPError(f"{method}: {reply['error'].get('message')}")
        result: dict[str, Any] = reply.get("result", {})
        return result

    def wait_event(self, method: str, session: str | None = None,
                   timeout: float | None = None) -> dict[str, Any]:
        """The params of the first not yet consumed event `method` (of `session`)."""
        deadline = time.monotonic() + (timeout or self.timeout)
        with self._lock:
            while True:
                for i, ev in enumerate(self._events):
                    if ev["method"] == method and (session is None
                                                   or ev.get("sessionId") == session):
                        del self._events[i]
                        params: dict[str, Any] = ev.get("params", {})
                        return params
                left = deadline - time.monotonic()
                if self._closed or left <= 0:
                    raise CDPError(f"no {method} event within {timeout or self.timeout:.0f} s")
                self._lock.wait(left)

    def take_events(self, method: str, session: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            keep: list[dict[str, Any]] = []
            taken: list[dict[str, Any]] = []
            for ev in self._events:
                (taken if ev["method"] == method and (session is None or ev.get(
                    "sessionId") == session) else keep).append(ev)
            self._events = keep
        return [ev.get("params", {}) for ev in taken]

    # --- pages ---------------------------------------------------------------------
    def new_page(self, *, isolated: bool = False) -> Page:
        """A new tab; isolated=True gives it a fresh browser context (own cache, cookies
        and connections), disposed with the page."""
        context = self.call("Target.createBrowserContext")["browserContextId"] if isolated \
            else None
        params = {"url": "about:blank"}
        if context:
            params["browserContextId"] = context
        target = self.call("Target.createTarget", params)["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"]
        return Page(self, target, session, context)


class Page:
    def __init__(self, browser: Chromium, target: str, session: str, context: str | None) -> None:
        self.browser, self.target, self.session, self.context = browser, target, session, context
        self.call("Page.enable")
        self.call("Network.enable")
        self.call("Network.setCacheDisabled", {"cacheDisabled": True})

    def call(self, method: str, params: dict[str, Any] | None = None,
             timeout: float | None = None) -> dict[str, Any]:
        return self.browser.call(method, params, self.session, timeout)

    def navigate(self, url: str, timeout: float = 60.0) -> None:
        """Load url and wait for its load event."""
        self.browser.take_events("Page.loadEventFired", self.session)
        reply = self.call("Page.navigate", {"url": url}, timeout)
        if reply.get("errorText"):
            raise CDPError(f"loading {url}: {reply['errorText']}")
        self.browser.wait_event("Page.loadEventFired", self.session, timeout)

    def evaluate(self, expression: str, timeout: float = 60.0) -> Any:
        """The value of a JavaScript expression (promises awaited)."""
        reply = self.call("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                               "returnByValue": True}, timeout)
        if "exceptionDetails" in reply:
            d = reply["exceptionDetails"]
            raise CDPError(f"JavaScript error: {d.get('exception', {}).get('description') or d}")
        return reply["result"].get("value")

    def responses(self) -> list[dict[str, Any]]:
        """Network.responseReceived so far: [{"url", "status", "protocol"}...]."""
        return [{"url": e["response"]["url"], "status": e["response"]["status"],
                 "protocol": e["response"].get("protocol", "")}
                for e in self.browser.take_events("Network.responseReceived", self.session)]

    def close(self) -> None:
        self.browser.call("Target.closeTarget", {"targetId": self.target})
        if self.context:
            self.browser.call("Target.disposeBrowserContext",
                              {"browserContextId": self.context})
