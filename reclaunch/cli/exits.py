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


def _silence(stream) -> None:
    """Point a stream whose reader went away at /dev/null: Python's own flush of its buffer at
    exit would fail again, print "Exception ignored ... BrokenPipeError" and exit 120, whatever
    code we chose."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, stream.fileno())
        finally:
            os.close(null)
    except (OSError, ValueError):   # no real file behind it (a test's capture): nothing to flush
        pass


# Set once echo_quietly silenced a stream: the command carried on past its reader, so the code it
# then exits with is its verdict (plan's 1: the model does not fit), not click's or rich's 1 for
# EPIPE, which run() turns into `| head -1` success.
_carried_on = False


def echo_quietly(message: str, err: bool = False) -> None:
    """click.echo for a command that decides its exit code after printing (validate, plan: the
    code is the verdict): a reader that went away (`2>&1 | head -1`) silences the stream, and
    the command carries on to its verdict instead of ending as `| head -1` success."""
    global _carried_on
    try:
        click.echo(message, err=err)
    except BrokenPipeError:
        _silence(sys.stderr if err else sys.stdout)
        _carried_on = True


def _fail(code: int, *lines: str, show=None) -> None:
    """Write a failure's lines (or call click's `show`) on stderr and exit with its code, even when
    they cannot be written (the reader of `reclaunch plan bad.yaml 2>&1 | head -1` went away, a
    full disk): a failure never becomes exit 0, nor a traceback about its report."""
    try:
        if show is not None:
            show()
        for line in lines:
            click.echo(line, err=True)
    except OSError:
        _silence(sys.stderr)
    try:   # stdout's unflushed rest, if its reader went too, would turn `code` into 120 at exit
        sys.stdout.flush()
    except BrokenPipeError:
        _silence(sys.stdout)
    except (OSError, ValueError):
        pass
    sys.exit(code)


def run(cli: click.Group, argv: list[str] | None = None) -> None:
    """Run the click group; every outcome becomes one line on stderr and an exit code."""
    global _carried_on
    _carried_on = False   # a previous in-process run's silenced stream is not this run's
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
        _fail(130, "aborted")
    except click.exceptions.UsageError as exc:
        if isinstance(exc, getattr(click.exceptions, "NoArgsIsHelpError", ())):
            _fail(2, show=exc.show)  # bare `reclaunch`: the help, as before
        # One line like every other error (click's own is four: usage, try, blank, error).
        where = exc.ctx.command_path if exc.ctx is not None else "reclaunch"
        _fail(2, f"error: {' '.join(exc.format_message().split())} (see `{where} --help`)")
    except click.exceptions.ClickException as exc:
        _fail(exc.exit_code, show=exc.show)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except ReclaunchError as exc:
        from reclaunch.errors import SpecError

        # Spec problems already read `file:line: field: message`; the rest get a prefix.
        from reclaunch.ui.text import visible   # a job's or a file's text: escapes made visible

        lines = exc.problems if isinstance(exc, SpecError) else [f"error: {exc}"]
        _fail(exc.exit_code, *(visible(line, limit=4000) for line in lines))
    except KeyboardInterrupt:
        _fail(130, "interrupted")
    except BrokenPipeError:  # `reclaunch catalog | head`
        _silence(sys.stdout)
        sys.exit(0)
    except SystemExit as exc:
        # On EPIPE click (wrapping stdout) and rich (pointing fd 1 at /dev/null) exit 1; a reader
        # that stopped early (`reclaunch catalog | head -1`) is not a failure of ours. A command
        # that carried on past that reader (echo_quietly) exits with its own verdict.
        if exc.code == 1 and not _carried_on:
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
        _fail(1, f"error: {exc.strerror or exc}{where}")
    except Exception as exc:  # a bug of ours: still one line unless asked for the traceback
        if os.environ.get("RECLAUNCH_DEBUG"):
            raise
        from reclaunch.ui.text import visible
        _fail(1, f"internal error: {type(exc).__name__}: {visible(exc, limit=1000)} "
                 "(set RECLAUNCH_DEBUG=1 for the traceback, and please report it)")
    sys.exit(0)
