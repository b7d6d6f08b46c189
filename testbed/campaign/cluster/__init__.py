"""A campaign's blocks measured on a Dask cluster (`testbed run --workers/--scheduler`,
lanes, `testbed worker`, `testbed cluster certs`).

- `cluster`: the coordinator's side: connects (TLS), submits the blocks in plan order,
  stores what the workers send back, records the workers in the manifest.
- `worker`: the worker's side: loads the campaign, checks its files are the
  coordinator's, measures a block (testbed.campaign.run.block) and sends it back packed.
  Its functions are shipped to the workers by reference, so both sides import them
  from this same module path.
- `credentials`: the cluster's own CA and each process's certificate (mutual TLS).

May import: testbed.host, testbed.formats, every stage, testbed.validate, analysis,
testbed.campaign.plan, testbed.campaign.store and testbed.campaign.run; not the runner.
"""
