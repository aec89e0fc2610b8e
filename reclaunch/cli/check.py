"""`reclaunch check [FILE]`: what this machine has for `up` (providers/check.py)."""

from __future__ import annotations

import sys

import click

from reclaunch.cli.base import _emit_json, cli

MARK = {True: "ok", False: "MISSING", None: "cannot tell"}


@cli.command()
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="One JSON list on stdout.")
def check(file: str | None, as_json: bool) -> None:
    """Preflight of this machine: the Pulumi CLI, the SDK extras, credentials per cloud and,
    with FILE, the GPU quota for its instance in its region and what `up` would need.

    Exits 1 when something FILE needs is missing ("cannot tell" is not a failure).
    """
    from reclaunch.providers.check import Check, exit_code, run_checks

    plan, unreachable = None, None
    if file:
        from reclaunch.catalog import load_catalog
        from reclaunch.errors import ProviderError
        from reclaunch.planner import make_plan
        from reclaunch.providers import planning_catalog
        from reclaunch.spec import load_spec

        catalog = load_catalog()
        spec = load_spec(file, catalog)
        try:   # cloud: kubernetes reads the cluster's nodes: a missing kubeconfig is a row
            plan = make_plan(spec, planning_catalog(spec, catalog))
        except ProviderError as exc:
            unreachable = Check("cluster", False, exc.message, exc.hint, needed=True)
    checks = run_checks(plan) + ([unreachable] if unreachable else [])
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
        if file:
            bad = [c.topic for c in checks if c.ok is False and c.needed]
            click.echo(f"`reclaunch up {file}`: " + ("ready as far as this machine can tell"
                       if not bad else f"would stop: fix {', '.join(bad)} first"))
    sys.exit(exit_code(checks))
