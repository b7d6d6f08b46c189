"""A replay topology with measurement servers, for calibration and validation.

    with ProbeSite() as site:
        with site.probe_server() as dump:           # UDP echo / sink / stream source
            out = site.client(chain, ["rtt", ...])  # probe client inside the shells
        dump.result()                               # what the server saw

The server side (probe server, iperf3 -s) runs as root in the server
namespace on PROBE_IP; clients run inside the Mahimahi shells in the client
namespace as the testbed user, as a browser does.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from testbed.emulate.shells import ShellChain
from testbed.errors import TestbedError
from testbed.host import enter, proc, safefs
from testbed.host.paths import ROOT
from testbed.host.runstate import current
from testbed.host.topology import ReplayTopology

PROBE_IP = "198.18.1.1"
"""The measurement servers' address in the server namespace (RFC 2544 range)."""
PROBE_PORT = 9000
IPERF_PORT = 5201
NICE = ["nice", "-n", "-10"]
"""Measurement processes and the shells run ahead of unrelated load: Mahimahi
keeps time in whole ms and its timing suffers when it waits for a CPU."""


@dataclass
class ServerDump:
    path: Path

    def result(self) -> dict:
        if not self.path.exists():
            raise TestbedError(f"probe server wrote no results ({self.path})")
        return json.loads(self.path.read_text())


class ProbeSite:
    """The topology, a folder for traces and logs, and the measurement servers started
    on demand; all removed on exit."""

    def __init__(self):
        self.topology = ReplayTopology([PROBE_IP])
        self.dir: Path | None = None
        self._exits = ExitStack()
        self._n = 0

    def __enter__(self) -> Self:
        for tool in ("mm-link", "mm-delay", "mm-loss", "iperf3"):
            if shutil.which(tool, path=enter.SAFE_PATH) is None:
                raise TestbedError(f"{tool} not found; run `make setup`")
        with ExitStack() as exits:
            exits.enter_context(self.topology)
            self.dir = Path(tempfile.mkdtemp(prefix="emulate-", dir=current().dir))
            exits.callback(safefs.rmtree, self.dir)
            os.chmod(self.dir, 0o755)
            self.userdir = safefs.user_dir(self.dir / "user")  # mm-link's logs
            # iperf3's TCP measures the link, not the congestion control: BBR, named
            # explicitly (the namespace would inherit the host's default).
            self.topology.server.sysctl("net.ipv4.tcp_congestion_control", "bbr")
            self._exits = exits.pop_all()
        return self

    def __exit__(self, *exc: object) -> None:
        self._exits.close()

    def work_dir(self) -> Path:
        """The site's temporary folder (while the `with` block runs)."""
        assert self.dir is not None, "entered first"
        return self.dir

    @contextmanager
    def probe_server(self):
        """A fresh probe server for one measurement; its dump is readable after the block."""
        self._n += 1
        dump = self.work_dir() / f"probe-{self._n}.json"
        log = self.work_dir() / f"probe-{self._n}.log"
        bg = proc.Background(NICE + self.topology.server.exec(
            proc.python("-m", "testbed.emulate.udp_probe", "server", "--bind", PROBE_IP,
                        "--port", str(PROBE_PORT), "--dump", str(dump))), log=log, cwd=str(ROOT))
        with bg:
            bg.wait_for_log("probe server on", "probe server")
            yield ServerDump(dump)
            bg.stop()
        if not dump.exists():
            raise TestbedError(f"probe server ended without results: {bg.tail()}")

    def client_argv(self, chain: ShellChain, argv: list[str]) -> list[str]:
        """argv run as the testbed user inside the chain in the client namespace."""
        return NICE + enter.as_user(chain.argv(argv), netns=self.topology.client.name,
                                    cwd=str(ROOT))

    def probe(self, chain: ShellChain, args: list[str], timeout: float) -> dict:
        """Run the probe client inside the shells; its JSON output."""
        cp = proc.run(self.client_argv(chain, proc.python("-m", "testbed.emulate.udp_probe",
                                                          *args)), timeout=timeout)
        try:
            return json.loads(cp.stdout)
        except json.JSONDecodeError:
            raise TestbedError(f"probe client printed no result: {cp.stderr.strip()[-300:]}") from None

    def iperf(self, chain: ShellChain, seconds: float, omit: float, reverse: bool,
              timeout: float) -> dict:
        """iperf3 TCP (BBR) from inside the shells, against a fresh one-off server (a
        server whose client gave up on a lossy link may not take the next test);
        the client's JSON report."""
        self._n += 1
        log = self.work_dir() / f"iperf3-{self._n}.log"
        server = proc.Background(NICE + self.topology.server.exec(
            ["iperf3", "-s", "-1", "--forceflush", "-B", PROBE_IP, "-p", str(IPERF_PORT)]), log=log)
        with server:
            server.wait_for_log("Server listening", "iperf3 server")
            return self._iperf_client(chain, seconds, omit, reverse, timeout)

    def _iperf_client(self, chain: ShellChain, seconds: float, omit: float, reverse: bool,
                      timeout: float) -> dict:
        argv = ["iperf3", "-c", PROBE_IP, "-p", str(IPERF_PORT), "-t", f"{seconds:g}",
                "-O", f"{omit:g}", "-C", "bbr", "-J"]
        if reverse:
            argv.append("-R")
        cp = proc.run(self.client_argv(chain, argv), timeout=timeout, check=False)
        try:
            report = json.loads(cp.stdout)
        except json.JSONDecodeError:
            raise TestbedError(f"iperf3 failed: {cp.stderr.strip()[-300:]}") from None
        if "error" in report:
            raise TestbedError(f"iperf3 failed: {report['error']}")
        return report
