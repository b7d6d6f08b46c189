"""Commands that span stages: `testbed doctor`, `report`, `trial`/`trials`
and `compare`, and the lazy command group every `cli` uses (groups).

A stage's own commands live in its `cli.py`; the top-level `testbed` command
(testbed.cli) lists them all.

May import: every stage, testbed.validate, testbed.campaign, testbed.host,
testbed.formats and the analysis package; nothing imports it but a `cli`.
"""
