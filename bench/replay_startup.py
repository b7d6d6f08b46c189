"""Start-up time of the replay environment per stack (topology, certificate,
servers, readiness probe), on a small multi-origin recording. Needs root.

    bench/replay-startup [REPEATS]
"""

from __future__ import annotations

import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the tests' shared helpers (tests/support/)

from support import replay_site

from testbed.formats import recording as rec
from testbed.host import runstate
from testbed.host.paths import H3SERVER
from testbed.replay.env import ReplayEnv


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    path = replay_site.make()
    try:
        recording = rec.load(path)
        for stack in ("tcp", "quic"):
            if stack == "quic" and not H3SERVER.exists():
                print(f"quic: skipped ({H3SERVER} not built)")
                continue
            ready, total = [], []
            for _ in range(repeats):
                t0 = time.monotonic()
                with ReplayEnv(recording, stack) as env:
                    ready.append(env.startup_seconds)
                total.append(time.monotonic() - t0)
            print(f"{stack}: ready in median {statistics.median(ready):.2f} s "
                  f"(min {min(ready):.2f}, max {max(ready):.2f}); up and down "
                  f"{statistics.median(total):.2f} s; {repeats} starts, "
                  f"{len(recording.ips)} IPs, {len(recording.exchanges)} exchanges")
    finally:
        shutil.rmtree(path.parent, ignore_errors=True)
        runstate.release()


if __name__ == "__main__":
    main()
