"""uWSGI's entry point (`--module testbed.replay.wsgi:application`): loads the
recording named in the environment when uWSGI starts."""

from testbed.replay.app import from_environ

application = from_environ()
