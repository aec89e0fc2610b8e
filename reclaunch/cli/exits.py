"""How the CLI ends: exit codes (0 ok, 1 runtime failure, 2 bad input, 130 interrupted) and one
line on stderr for every error, ours or click's, never a traceback unless RECLAUNCH_DEBUG=1."""

from __future__ import annotations

import os
import sys

import click

from reclaunch.errors import ReclaunchError


def quiet_sdk_warnings() -> None:
    """Third-party deprecation notices are for the SDK's own developers, not for our users:
    google.api_core alone prints five FutureWarnings per command once Google stops supporting
    the running Python (a date it decides), burying the one line we print. RECLAUNCH_DEBUG=1
    shows them again; warnings raised by our own modules always show."""
    if os.environ.get("RECLAUNCH_DEBUG"):
        return
    import warnings

    for category in (FutureWarning, DeprecationWarning, PendingDeprecationWarning):
        warnings.filterwarnings("ignore", category=category, module=r"(?!reclaunch\b)")


def run(cli: click.Group, argv: list[str] | None = None) -> None:
    """Run the click group; every outcome becomes one line on stderr and an exit code."""
    quiet_sdk_warnings()
    try:  # which file stdout is, to tell a reader that went away (`| head -1`) later
        stdout_id = os.fstat(1)[1:3]
    except OSError:
        stdout_id = None
    try:
        from reclaunch.cli.envpins import check

        check()     # every RECLAUNCH_* pin, before any command reads one
        cli.main(args=argv, prog_name="reclaunch", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.exceptions.UsageError as exc:
        if isinstance(exc, getattr(click.exceptions, "NoArgsIsHelpError", ())):
            exc.show()  # bare `reclaunch`: the help, as before
            sys.exit(2)
        # One line like every other error (click's own is four: usage, try, blank, error).
        where = exc.ctx.command_path if exc.ctx is not None else "reclaunch"
        click.echo(f"error: {' '.join(exc.format_message().split())} (see `{where} --help`)",
                   err=True)
        sys.exit(2)
    except click.exceptions.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except ReclaunchError as exc:
        from reclaunch.errors import SpecError

        # Spec problems already read `file:line: field: message`; the rest get a prefix.
        from reclaunch.ui.text import visible   # a job's or a file's text: escapes made visible

        lines = exc.problems if isinstance(exc, SpecError) else [f"error: {exc}"]
        for line in lines:
            click.echo(visible(line, limit=4000), err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:  # `reclaunch catalog | head`
        try:  # Python's final flush of stdout would fail again (and exit 120)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        sys.exit(0)
    except SystemExit as exc:
        # On EPIPE click (wrapping stdout) and rich (pointing fd 1 at /dev/null) exit 1; a reader
        # that stopped early (`reclaunch catalog | head -1`) is not a failure of ours.
        if exc.code == 1:
            try:
                swapped = stdout_id is not None and os.fstat(1)[1:3] != stdout_id
            except OSError:
                swapped = False
            if swapped or isinstance(sys.stdout, getattr(click.utils, "_PacifyFlushWrapper", ())):
                sys.exit(0)
        raise
    except OSError as exc:  # the machine, not a bug: a full disk, an unreadable file
        if os.environ.get("RECLAUNCH_DEBUG"):
            raise
        where = f": {exc.filename}" if exc.filename else ""
        click.echo(f"error: {exc.strerror or exc}{where}", err=True)
        sys.exit(1)
    except Exception as exc:  # a bug of ours: still one line unless asked for the traceback
        if os.environ.get("RECLAUNCH_DEBUG"):
            raise
        from reclaunch.ui.text import visible
        click.echo(f"internal error: {type(exc).__name__}: {visible(exc, limit=1000)} "
                   "(set RECLAUNCH_DEBUG=1 for the traceback, and please report it)", err=True)
        sys.exit(1)
    sys.exit(0)
