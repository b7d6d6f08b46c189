"""Campaigns: a matrix of trials from a TOML file, run in a fair order, stored as they end.

- config: the campaign file (profiles/campaigns/*.toml), validated
- plan: the order of the trials (seeded, nested shuffle per run) and resume
- settings: protocol settings as the runner switches them
- runner: replay topology, servers, shells and Browsertime per block of trials
- store: the SQLite store (one transaction per trial); manifest: what ran
- cli: `testbed run`, `testbed worker` and `testbed export`

May import: testbed.host, testbed.formats, every stage and validate; not a
command (testbed.commands) or testbed.cli.
"""
