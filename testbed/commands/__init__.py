"""Commands that span stages: `testbed doctor`, `report`, `trial`/`trials`,
`compare` and `cleanup` (the host's), and the lazy command group every `cli`
uses (groups).

A stage's own commands live in its `cli.py`; the top-level `testbed` command
(testbed.cli) lists them all. Only these command modules (and console and
jsonout, for `click.echo`) import click; the work is in plain functions.

May import: every stage, testbed.validate, testbed.campaign, testbed.host,
testbed.formats and the analysis package; nothing imports it but a `cli`.
"""
