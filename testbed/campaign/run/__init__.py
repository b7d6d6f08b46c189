"""One block of a campaign measured: the part the runner's own process and a Dask worker
share.

- `block`: one block (one run, site and network) measured in one Browsertime process,
  and its results packed for the coordinator.
- `servers`: the servers of one replay topology, switched between protocol settings.
- `rows`: a trial's stored row and its trial.json, from what its page load left behind.
- `retry`: when a finished trial runs again, and when failures stop the campaign.
- `progress`: the progress bar with ETA, or one line per finished trial.

May import: testbed.host, testbed.formats, every stage, testbed.validate, analysis,
testbed.campaign.plan and testbed.campaign.store; not cluster or the runner.
"""
