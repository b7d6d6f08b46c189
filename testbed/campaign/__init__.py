"""Campaigns: a matrix of trials from a TOML file, run in a fair order, stored as they end.

Four jobs, a subpackage each, each importing only those before it in this list:

- `plan`: what a campaign is and in which order its trials run (the campaign file,
  the seeded order, protocol settings, adaptive runs, lanes, the estimate);
- `store`: the results folder (the SQLite store, the only place that speaks SQL;
  the folder's lock, the manifest, a trial's files committed with its row, the
  versions check, checkpoints);
- `run`: one block of trials measured (its servers, its rows, retries, progress);
- `cluster`: blocks measured on Dask workers (the coordinator, the worker, TLS
  credentials).

Beside them, above all four:

- `runner`: `testbed run` as a whole: loads and checks the campaign, holds the results
  folder, and runs the plan's blocks in this process or on a cluster.
- `cli`: the commands `testbed run`, `worker`, `cluster certs`, `export`,
  `checkpoint` and `upgrade-manifest`.

May import: testbed.host, testbed.formats, every stage, testbed.validate and analysis;
not a command (testbed.commands) or testbed.cli.
"""
