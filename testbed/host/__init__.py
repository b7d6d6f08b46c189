"""The host: what the testbed does to this machine and who it runs as.

Files and folders opened without following links (safefs), the checkout's
paths and installed tools (paths), child processes (proc), the run's
root-only state folder and its cleanup (runstate, cleanup), network
namespaces, veth pairs and the replay topology (netns, topology), entering a
namespace as the unprivileged user (enter), kernel TCP telemetry (tcpdiag)
and the Chromium binary's flags and per-run profile (chromium).

May import: testbed.errors, testbed.console and its own modules; nothing of
a stage, a file format or a command.
"""
