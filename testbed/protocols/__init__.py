"""Stage 4, protocol settings: TCP, TCP+, TCP+BBR, QUIC, QUIC+BBR.

profiles/protocols/*.toml (testbed.profiles.ProtocolProfile) → apply
(server namespace sysctls and route, nginx's environment, h3server's
options, Chromium's flags). `testbed validate protocols`
(testbed/validate/protocols.py) proves each setting in force during a replay.
"""


def server_options(setting):
    """See testbed.protocols.apply.server_options."""
    from testbed.protocols.apply import server_options as _server_options
    return _server_options(setting)
