"""The files other people hand the testbed, read and validated on load.

TOML files (tomlfile), network and protocol profiles (profiles), link traces
(traces), recordings and their rules (recording, recording_rules) and finding
them by name (recording_search). Bad input raises one TestbedError naming
the file, the key and what was expected.

May import: testbed.errors, testbed.console and testbed.host (to open files
safely); nothing of a stage or a command.
"""
