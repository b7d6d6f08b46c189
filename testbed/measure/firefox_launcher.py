#!/usr/bin/python3 -I
"""Firefox as Browsertime's `--firefox.binaryPath`: the trial's preferences, trust and
log settings put into the fresh profile at launch.

geckodriver makes a new profile for every browser (in the block's TMPDIR) and
starts this launcher in Firefox's place with `-profile DIR`. With the Chromium
launcher's code (launcher.py, `await_answer`) it announces launch N (`launch-N` in
$TESTBED_TRIAL_CTL) and waits for the runner's answer (`flags-N.json`): the trial's preferences
(appended to DIR/user.js, after geckodriver's and Browsertime's, so they win),
the replay's CA (a trust anchor in DIR's own NSS database, made with certutil:
never another profile's), and environment variables
(Firefox's HTTP log, for the validations); Firefox's home and caches are the block's
temporary folder. Then it execs Firefox, which keeps
geckodriver's pid, pipes and sandbox. Standard library only: it runs as the
testbed user before every page load.
"""

import importlib.util
import json
import os
import subprocess
import sys
import types

CERTUTIL = "/usr/bin/certutil"
END = "-----END CERTIFICATE-----"


def _chromium_launcher() -> types.ModuleType:
    """launcher.py beside this file (its claim of a launch and wait for the answer),
    loaded by path: `python -I` puts no folder of the script's on sys.path."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "launcher.py")
    spec = importlib.util.spec_from_file_location("testbed_chromium_launcher", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def profile_of(args: list[str]) -> str:
    for i, a in enumerate(args):
        if a in ("-profile", "--profile") and i + 1 < len(args):
            return args[i + 1]
    sys.exit("testbed firefox launcher: no -profile on the command line")


def user_js(prefs: dict) -> str:
    return "".join(f"user_pref({json.dumps(k)}, {json.dumps(v)});\n" for k, v in prefs.items())


def trust(profile: str, chain: str) -> None:
    """The chain's last certificate (the replay's CA, which issued its leaf) a trust
    anchor for TLS servers in the profile's NSS database, made here (Firefox finds it
    at start). Firefox does not accept a leaf marked as a trusted peer."""
    with open(chain) as f:
        text = f.read()
    certs = [c + END + "\n" for c in text.split(END) if "BEGIN CERTIFICATE" in c]
    pem = os.path.join(profile, "testbed-replay-ca.pem")
    with open(pem, "w") as f:
        f.write(certs[-1].lstrip())
    db = f"sql:{profile}"
    for argv in ([CERTUTIL, "-N", "-d", db, "--empty-password"],
                 [CERTUTIL, "-A", "-d", db, "-n", "testbed-replay", "-t", "C,,", "-a", "-i", pem]):
        cp = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            check=False)
        if cp.returncode != 0:
            sys.exit(f"testbed firefox launcher: {' '.join(argv[:2])} failed: "
                     f"{(cp.stderr or cp.stdout).strip()[:200]}")
    os.unlink(pem)


def main() -> None:
    ctl = os.environ["TESTBED_TRIAL_CTL"]
    firefox = os.environ.get("TESTBED_FIREFOX", "/usr/lib/firefox-esr/firefox-esr")
    if not any(a in ("-profile", "--profile") for a in sys.argv[1:]):
        # geckodriver asks the binary its version (`--version`) before it starts one:
        # no browser, no launch
        os.execv(firefox, [firefox, *sys.argv[1:]])
    message = _chromium_launcher().await_answer(ctl, "testbed firefox launcher")
    args = sys.argv[1:]
    profile = profile_of(args)
    with open(os.path.join(profile, "user.js"), "a") as f:
        f.write(user_js(message.get("prefs", {})))
    if message.get("trust"):
        trust(profile, message["trust"])
    env = dict(os.environ)
    # Firefox's (and its libraries') home, cache and configuration in the block's own
    # temporary folder, removed with it, instead of the testbed user's home
    tmp = env.get("TMPDIR")
    if tmp:
        env.update(HOME=tmp, XDG_CACHE_HOME=tmp, XDG_CONFIG_HOME=tmp, XDG_DATA_HOME=tmp)
    env.update(message.get("env", {}))
    os.execve(firefox, [firefox, *args], env)


if __name__ == "__main__":
    main()
