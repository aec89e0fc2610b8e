"""`reclaunch calibrate`: this host for cloud: local plans; export/import of measured runs."""

from __future__ import annotations

import click

from reclaunch.cli.base import _emit_json, cli


@cli.group(invoke_without_command=True)
@click.option("--if-needed", is_flag=True,
              help="Only when there is no calibration for this host yet (or the host changed).")
@click.option("--trainer", type=click.Path(dir_okay=False, exists=True),
              help="The reference trainer (default: examples/trainer/train.py of this checkout).")
@click.option("--repeats", type=click.IntRange(1, 9),
              help="Runs per batch size, interleaved; the median step is kept (default 3).")
@click.option("--json", "as_json", is_flag=True, help="The calibration as one JSON object.")
@click.pass_context
def calibrate(ctx: click.Context, if_needed: bool, trainer: str | None, repeats: int,
              as_json: bool) -> None:
    """Measure this host: the reference trainer for a few dozen steps at two batch sizes
    (TorchRec on CPU over gloo, 2 processes, as `cloud: local` runs), cached with the host's
    identity in ~/.reclaunch/calibration/host.json. `plan` of a local spec then predicts from it.

    \b
    reclaunch calibrate export FILE    every measured-run record, for a teammate
    reclaunch calibrate import FILE    theirs, validated record by record
    """
    if ctx.invoked_subcommand:
        return
    from pathlib import Path

    from reclaunch.runtime import calibrate as cal

    say = (lambda s: None) if as_json else (lambda s: click.echo(s, err=True))
    current, why = cal.load_for_this_host()
    if if_needed and current is not None:
        say(f"calibration for this host is from {current.measured_at} ({cal.cache_path()}); "
            "`reclaunch calibrate` re-runs it")
        result = current
    else:
        say(f"calibrating this host ({why or 'on demand'}) ...")
        result = cal.calibrate(trainer=Path(trainer) if trainer else None, repeats=repeats or cal.REFERENCE_REPEATS, say=say)
        say(f"saved {cal.cache_path()}")
    if as_json:
        _emit_json(cal.to_doc(result))
        return
    from reclaunch.planner.calibration import describe, fit
    from reclaunch.planner import make_plan

    f = fit(result, lambda ref: make_plan(ref).step.total_seconds)
    click.echo(describe(result, f))


@calibrate.command("export")
@click.argument("file", type=click.Path(dir_okay=False))
def calibrate_export(file: str) -> None:
    """Write every measurement record (~/.reclaunch/measurements) to FILE."""
    from reclaunch.runtime.measurements import export

    n = export(file)
    click.echo(f"exported {n} measurement record(s) to {file}")


@calibrate.command("import")
@click.argument("file", type=click.Path(dir_okay=False))
def calibrate_import(file: str) -> None:
    """Add the records of an exported FILE; a file with one bad record imports none (exit 2)."""
    from reclaunch.runtime.measurements import import_file

    new, dup = import_file(file)
    click.echo(f"imported {new} measurement record(s) from {file}" + (f" ({dup} already here)" if dup else ""))
