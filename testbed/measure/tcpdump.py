"""tcpdump writing a pcap file while a `with` block runs: the one wrapper.

    with Tcpdump(topology.server.exec([]), dev, out, log=out.with_suffix(".log")):
        ...                                   # packets on `dev` go to `out`

In force once tcpdump says it is listening (TestbedError, with its log's tail,
if it exits or takes longer than `ready_s`); stopped when the block ends,
`linger` seconds later (the last packets written), its process group
SIGTERMed, then SIGKILLed after `grace`. `-U` writes each packet as it comes,
so the file is complete up to the moment it stops. Users: the per-trial
packet capture (testbed.measure.captures) and `testbed validate protocols`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Self

from testbed.host import proc


class Tcpdump:
    def __init__(self, exec_prefix: Sequence[str], dev: str, out: Path, *, log: Path,
                 snaplen: int = 0, options: Sequence[str] = (), expression: Sequence[str] = (),
                 ready_s: float = 10.0, linger: float = 0.0, grace: float = 3.0):
        """exec_prefix: what runs it in the namespace of `dev` (e.g. `ip netns exec NS`);
        snaplen: bytes kept of each packet (0: all); options: more of tcpdump's options;
        expression: its filter (`udp port 443`)."""
        self.argv = [*exec_prefix, "tcpdump", "-i", dev, "-s", str(snaplen), "-U",
                     *options, "-w", str(out), *expression]
        self.out, self.log = Path(out), Path(log)
        self.ready_s, self.linger, self.grace = ready_s, linger, grace
        self._exits = ExitStack()

    def __enter__(self) -> Self:
        with ExitStack() as exits:
            bg = exits.enter_context(proc.Background(self.argv, log=self.log, grace=self.grace))
            bg.wait_for_log("listening on", "tcpdump", timeout=self.ready_s)
            self._exits = exits.pop_all()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.linger:
            time.sleep(self.linger)
        self._exits.close()
