"""`reclaunch check [FILE]`: what this machine has for `up` (providers/check.py)."""

from __future__ import annotations

import sys

import click

from reclaunch.cli.base import _emit_json, _load, cli

MARK = {True: "ok", False: "MISSING", None: "cannot tell"}


@cli.command()
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="One JSON list on stdout.")
def check(file: str | None, as_json: bool) -> None:
    """Preflight of this machine: the Pulumi CLI, the SDK extras, credentials per cloud and,
    with FILE, the GPU quota for its instance in its region and what `up` would need.

    Exits 1 when something FILE needs is missing ("cannot tell" is not a failure).
    """
    from reclaunch.providers.check import exit_code, run_checks

    plan = None
    if file:
        from reclaunch.planner import make_plan

        spec, catalog = _load(file)
        plan = make_plan(spec, catalog)
    checks = run_checks(plan)
    if as_json:
        from dataclasses import asdict

        _emit_json([asdict(c) for c in checks])
    else:
        width = max(len(c.topic) for c in checks)
        for c in checks:
            mark = "to do" if c.topic == "needs a person" else MARK[c.ok]
            line = f"{c.topic:<{width}}  {mark:<11}  {c.detail}"
            if c.fix and c.ok is not True:
                line += f"  ->  {c.fix}"
            if not c.needed and c.ok is False:
                line += "  (not needed for this spec)" if plan is not None else ""
            click.echo(line)
        if plan is not None:
            bad = [c.topic for c in checks if c.ok is False and c.needed]
            click.echo(f"`reclaunch up {file}`: " + ("ready as far as this machine can tell"
                       if not bad else f"would stop: fix {', '.join(bad)} first"))
    sys.exit(exit_code(checks))
