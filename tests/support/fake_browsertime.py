"""A stand-in for Browsertime + launcher + hooks speaking the control files of
testbed.measure.browser_process, for its unit tests without a browser.

    python fake_browsertime.py CTL OUT KIND,KIND,...

KIND per iteration: ok (measured), fail (navigation failed after go), nostart
(the browser did not start: launch, no ready), crash (exit 3 after go), hang
(no answer after go), giveup (exit 1 0.5 s after go, as Browsertime after a
load past its timeout). A go-N.json naming `warm` (a warm visit) is answered
with warmed-N.json, then the fake waits for measure-N.json; a kind `warmfail`
reports a failed warm-up (and the iteration fails). Writes OUT/browsertime.har with a page per measured
iteration, as Browsertime does.
"""

import json
import os
import sys
import time

ctl, out, kinds = sys.argv[1], sys.argv[2], sys.argv[3].split(",")


def wait(name):
    while not os.path.exists(os.path.join(ctl, name)):
        time.sleep(0.002)
    with open(os.path.join(ctl, name)) as f:
        return json.load(f)


def put(name, data):
    tmp = os.path.join(ctl, "." + name)
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.rename(tmp, os.path.join(ctl, name))


pages, entries = [], []
for i, kind in enumerate(kinds, 1):
    open(os.path.join(ctl, f"launch-{i}"), "w").close()
    answer = wait(f"flags-{i}.json")
    if "abort" in answer or kind == "nostart":
        continue
    put(f"ready-{i}.json", {"index": i})
    go = wait(f"go-{i}.json")
    if go.get("warm"):
        put(f"warmed-{i}.json", {"index": i, "warm": go["warm"],
                                 "error": "net::ERR_FAILED" if kind == "warmfail" else None})
        if kind == "warmfail":
            continue
        wait(f"measure-{i}.json")
    if kind == "crash":
        sys.exit(3)
    if kind == "hang":
        time.sleep(3600)
    if kind == "giveup":  # the load outlasted the timeout; Browsertime exits
        time.sleep(0.5)
        sys.exit(1)
    if kind == "ok":
        flags = answer["flags"]
        put(f"done-{i}.json", {"index": i, "result": [{"browserScripts": {"timings": {
            "pageTimings": {"pageLoadTime": 100 * i}, "loadEventEnd": 100 * i, "ttfb": 10,
            "flags": flags}}}]})
        pid = f"page_{i}"
        pages.append({"id": pid, "title": f"https://a.test/ run {i}"})
        proto = "h3" if "--enable-quic" in flags else "h2"
        entries += [{"pageref": pid, "request": {"url": f"https://a.test/{j}"},
                     "response": {"httpVersion": proto}} for j in range(3)]
with open(os.path.join(out, "browsertime.har"), "w") as f:
    json.dump({"log": {"pages": pages, "entries": entries}}, f)
