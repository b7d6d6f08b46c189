#!/usr/bin/python3 -I
"""Chromium as Browsertime's `--chrome.binaryPath`: the trial's flags added at launch.

Browsertime starts one Chromium per iteration with the same arguments. This
launcher, started by chromedriver in Chromium's place, announces launch N
(`launch-N` in $TESTBED_TRIAL_CTL) and waits for the runner's answer
(`flags-N.json`: the trial's flags, or an abort). It drops the arguments the
trial's flags replace (host resolver rules, certificate and QUIC switches),
joins a trial's --enable-features / --disable-features with Browsertime's
(Chromium takes the last of each only), and execs Chromium, so Chromium keeps chromedriver's pid, pipes and sandbox.
Standard library only: it runs as the testbed user before every page load.
"""

import json
import os
import sys
import time

REPLACED = ("--host-resolver-rules=", "--ignore-certificate-errors", "--enable-quic",
            "--disable-quic", "--origin-to-force-quic-on=")
WAIT_S = 120.0


def claim(ctl: str) -> int:
    """The next launch number (1, 2, ...), claimed by creating launch-N."""
    n = 1
    while True:
        try:
            fd = os.open(os.path.join(ctl, f"launch-{n}"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            n += 1
            continue
        os.write(fd, f"{os.getpid()}\n".encode())
        os.close(fd)
        return n


def await_answer(ctl: str, who: str) -> dict:
    """Claim the next launch, wait for the runner's answer to it (`flags-N.json`) and
    return it; exit naming `who` when none comes in time or the launch is aborted.
    The Firefox launcher uses it too (loaded by path: both run as `python -I`)."""
    n = claim(ctl)
    answer = os.path.join(ctl, f"flags-{n}.json")
    deadline = time.monotonic() + WAIT_S
    while not os.path.exists(answer):
        if time.monotonic() > deadline:
            sys.exit(f"{who}: no answer for launch {n} within {WAIT_S:.0f} s")
        time.sleep(0.005)
    with open(answer) as f:
        message: dict = json.load(f)
    if message.get("abort"):
        sys.exit(f"{who}: launch {n} aborted: {message['abort']}")
    return message


def main() -> None:
    ctl = os.environ["TESTBED_TRIAL_CTL"]
    chromium = os.environ.get("TESTBED_CHROMIUM", "/usr/bin/chromium")
    message = await_answer(ctl, "testbed launcher")
    args = [a for a in sys.argv[1:] if not a.startswith(REPLACED)]
    os.execv(chromium, [chromium, *merged(args, message["flags"])])


MERGED = ("--enable-features=", "--disable-features=")
"""Switches Chromium takes once (the last wins): a trial's list joins Browsertime's."""


def merged(args: list[str], flags: list[str]) -> list[str]:
    """args then flags, each of MERGED once with both lists joined."""
    out = list(args)
    for flag in flags:
        switch = next((m for m in MERGED if flag.startswith(m)), None)
        have = next((i for i, a in enumerate(out) if switch and a.startswith(switch)), None)
        if have is None:
            out.append(flag)
        else:
            assert switch is not None  # found by it
            out[have] = out[have] + "," + flag[len(switch):]
    return out


if __name__ == "__main__":
    main()
