"""Stage 4, protocol settings: TCP, TCP+, TCP+BBR, QUIC, QUIC+BBR.

profiles/protocols/*.toml (testbed.formats.profiles.ProtocolProfile) → server_options
(one frozen ServerOptions: nginx's environment, h3server's options, Chromium's
flags, the server namespace's sysctls and route) → applied (a context manager:
the setting in force in the server namespace, undone and read back on exit;
netstate holds the snapshot it restores). `testbed validate protocols`
(testbed/validate/protocols.py) proves each setting in force during a replay.

May import: testbed.host, testbed.formats and the stages before it (record,
replay, emulate); not measure, validate, campaign or a command.
"""

from testbed.protocols.apply import Change, ServerOptions, applied, replay_env, server_options

__all__ = ["Change", "ServerOptions", "applied", "replay_env", "server_options"]
