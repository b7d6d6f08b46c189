"""The `testbed` command line: one subcommand per stage, loaded on first use."""

from __future__ import annotations

import os
import signal
import sys

import click

from testbed.commands.groups import LazyGroup, is_extra_missing, not_installed
from testbed.errors import TestbedError

# name -> "module:attribute"; modules are imported only when their command runs,
# so `testbed doctor` does not pay for mitmproxy or pandas.
COMMANDS = {  # in pipeline order: `testbed --help` lists them so
    "record": "testbed.record.cli:record",
    "recording": "testbed.record.cli:recording",
    "replay": "testbed.replay.cli:replay",
    "validate": "testbed.validate.cli:validate",
    "run": "testbed.campaign.cli:run",
    "worker": "testbed.campaign.cli:worker",
    "cluster": "testbed.campaign.cli:cluster",
    "trials": "testbed.commands.trial:trials",
    "trial": "testbed.commands.trial:trial",
    "export": "testbed.campaign.cli:export",
    "checkpoint": "testbed.campaign.cli:checkpoint",
    "upgrade-manifest": "testbed.campaign.cli:upgrade_manifest",
    "report": "testbed.commands.report:report",
    "compare": "testbed.commands.compare:compare",
    "doctor": "testbed.commands.doctor:doctor",
    "cleanup": "testbed.commands.cleanup:cleanup",
}


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(None, "-V", "--version", package_name="testbed")
@click.option("--recordings", "recordings", multiple=True, metavar="DIR",
              help="Look for recordings named by name in DIR first (repeatable; then "
                   "TESTBED_RECORDINGS, then recordings/).")
def cli(recordings):
    """Record websites, replay them under emulated networks over TCP+TLS+HTTP/2
    and QUIC/HTTP/3 to a real Chromium, measure, and analyse."""
    if recordings:
        from testbed.formats import recording_search

        recording_search.use_dirs(recordings)


def _terminate(signum, frame):
    # SIGTERM unwinds like Ctrl-C, so every `with` block undoes what it did.
    raise KeyboardInterrupt


def _reads_only(args: list[str]) -> bool:
    """Whether the command only looks (`cleanup --check`, help, version): no sweep first."""
    while args[:1] == ["--recordings"]:
        args = args[2:]
    return (bool({"-h", "--help", "-V", "--version"} & set(args))
            or (args[:1] == ["cleanup"] and "--check" in args[1:]))


def main(argv: list[str] | None = None) -> None:
    signal.signal(signal.SIGTERM, _terminate)
    if os.geteuid() == 0 and not _reads_only(sys.argv[1:] if argv is None else list(argv)):
        from testbed.host.cleanup import sweep

        sweep()
    try:
        cli.main(args=argv, prog_name="testbed", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("testbed: interrupted", err=True)
        sys.exit(130)
    except click.UsageError as e:  # a bad option or argument: one line, like any bad input
        where = e.ctx.command_path if e.ctx else "testbed"
        click.echo(f"testbed: error: {where}: {' '.join(e.format_message().split())} "
                   f"(see `{where} --help`)", err=True)
        sys.exit(2)
    except click.ClickException as e:
        e.show()
        sys.exit(2)
    except TestbedError as e:  # its message may quote a stored string: cleaned, and
        # on one line (a server's log tail after "its log ends:" joined by spaces)
        from testbed.console import one_line

        click.echo(f"testbed: error: {one_line(e)}", err=True)
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        click.echo("testbed: interrupted", err=True)
        sys.exit(130)
    except ModuleNotFoundError as e:  # a measurement package in the analysis-only install
        if not is_extra_missing(e):
            raise
        click.echo(f"testbed: error: {not_installed(e.name)}", err=True)
        sys.exit(1)
    finally:
        from testbed.host import runstate

        runstate.release()
