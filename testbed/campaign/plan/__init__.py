"""A campaign's plan: what it measures and in which order, before anything runs.

- `config`: the campaign file (profiles/campaigns/*.toml) as a frozen, validated model,
  its labels resolved to the files behind them.
- `plan`: the order of the trials (seeded, nested shuffle per run) in blocks, and
  which of them are still to run.
- `settings`: a protocol setting as the runner switches it, checked against its profile.
- `adaptive`: adaptive runs: when a site x network group is precise enough to stop
  (the decision; the stops are kept in the store through the Store it is given).
- `lanes`: how many blocks of a network run at once on one machine, and the gate
  that lets a block start.
- `estimate`: how long a campaign will take (`testbed run --dry-run`).

May import: testbed.host, testbed.formats, every stage, testbed.validate, analysis;
nothing else of testbed.campaign (the layer below store, run and cluster).
"""
