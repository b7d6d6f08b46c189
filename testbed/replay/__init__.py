"""Stage 2, replay: serve a recording from memory over TCP+TLS1.3+HTTP/2 (nginx + uWSGI)
or QUIC/HTTP/3 (h3server) inside the replay topology.

    with ReplayEnv(recording, stack="quic") as env:
        ... chromium env.chromium_flags() in env.client_netns ...

deterministic: the copy of a recording both servers serve, its HTML running the pinned
script (testbed.record.pinned_script). layout: which hosts share an address and a
certificate, as recorded or split (docs/layout.md); a laid-out recording is served as is.

May import: testbed.host, testbed.formats and the record stage; no later stage,
no command.
"""
