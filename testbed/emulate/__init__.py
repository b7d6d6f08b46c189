"""Stage 3, emulate: Mahimahi shells between the servers and the browser.

profiles (testbed.formats.profiles) → traces (exact link schedules) → shells (the
chain's argv) → calibrate (the chain's own delay, measured and taken off
mm-delay). probe and probesite are the measurement tools calibration and
`testbed validate network` (testbed/validate/network.py) use.

May import: testbed.host, testbed.formats, record and replay; not protocols,
measure or anything above them.
"""
