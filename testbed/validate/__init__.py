"""Validation: checks that the testbed measures what it claims (above the stages).

`testbed validate network|protocols|servers` (cli) and the doctor share one
verdict type and renderer (verdict). network measures each network profile
through its real Mahimahi shells; protocols proves each protocol setting in
force during a replay (capture, then a pure judge over the evidence parsers in
evidence); servers is the paper's server-parity check. site is the synthetic
file-download site protocols and servers replay.

This package imports the stages and the bottom layer; no stage imports it.

May import: testbed.host, testbed.formats and every stage; not campaign or a
command.
"""
