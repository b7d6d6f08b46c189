"""Stage 1, record: Chromium loads a page through mitmproxy; the exchanges become a recording.

addon (mitmproxy addon that captures), proxy (mitmdump running it), cdp and
browser (Chromium driven over its debugging pipe), normalise (header rules),
recorder (orchestration), summary (what `recording show` prints), pinned_script
(the script that pins Math.random and Date in the pages recorded and replayed), cli.

May import: testbed.host and testbed.formats (and the top-level errors, console,
jsonout); no later stage, no command.
"""
