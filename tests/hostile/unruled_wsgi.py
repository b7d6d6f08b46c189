"""uWSGI's entry point for tests/hostile/test_server_directives.py: the replay app with
the rule that refuses server directives in recordings lifted, so that a test can
serve one and measure what nginx's own configuration does with it."""

from testbed.formats import recording_rules

recording_rules.SERVER_DIRECTIVES = ()

from testbed.replay.wsgi import application  # noqa: F401
