"""A campaign's results folder: what is stored, and the only SQL of testbed.campaign.

- `store`: the SQLite store (one transaction per trial, the adaptive stops, counts and
  reads of a store from elsewhere through one bounded reader); every query of the
  campaign is a function or method here.
- `outdir`: the results folder made safely, held by one runner (run.lock), a full or
  read-only disk turned into one line, and folders reconciled with the stored rows.
- `commit`: a trial's files put into trials/<trial_id>/ in the transaction that stores
  its row.
- `manifest`: manifest.json: each session's versions, files, calibrations and what the
  settings changed.
- `versions`: a results folder keeps one set of measuring parts (the versions check
  before a resume).
- `reference`: `testbed checkpoint` (a store and manifest kept apart, even while a
  runner writes) and `--resume-from` (a new folder seeded with those rows).

May import: testbed.host, testbed.formats, every stage, testbed.validate, analysis and
testbed.campaign.plan; not run, cluster or the runner.
"""
