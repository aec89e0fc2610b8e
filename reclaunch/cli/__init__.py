"""The `reclaunch` command. One function per verb; each imports its layer lazily.

Start-up time is a feature: this module imports click and nothing heavy. Errors users can
act on (ReclaunchError) print as one line with the command's exit code, never a traceback.
"""

from __future__ import annotations

import json
import os
import sys

import click

from reclaunch.errors import ReclaunchError, UsageError

from reclaunch.providers import KUBE_CLOUDS, REGISTRY  # data only: no provider package is imported

CLOUDS = list(REGISTRY)


def _console(stderr: bool = False):
    from reclaunch.ui.console import console
    return console(stderr)


def _emit_json(obj) -> None:
    """Strict JSON: a NaN or inf that got this far becomes null (Python would print `NaN`,
    which no JSON parser accepts)."""
    click.echo(json.dumps(_finite(obj), indent=2, sort_keys=False, default=str, allow_nan=False))


def _finite(obj):
    import math

    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="reclaunch", prog_name="reclaunch")
def cli() -> None:
    """Plan, launch and tear down recommender-model training on GPU clusters.

    \b
    reclaunch plan examples/aws-deepfm-p4d.yaml      what it costs, whether it fits
    reclaunch up examples/local-deepfm.yaml          run it (cloud: local needs no account)
    reclaunch down NAME                              back to zero spend
    """


# ------------------------------------------------------------------ validate / schema

@cli.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
def validate(files: tuple[str, ...]) -> None:
    """Check cluster.yaml files; print every problem as file:line: field: message."""
    from reclaunch.catalog import load_catalog
    from reclaunch.errors import SpecError
    from reclaunch.spec import load_spec

    catalog = load_catalog()
    bad = 0
    for f in files:
        try:
            spec = load_spec(f, catalog)
        except SpecError as exc:
            bad += 1
            for line in exc.problems:
                click.echo(line, err=True)
            continue
        where = spec.instance_type or spec.gpu or "this machine"
        click.echo(f"{f}: ok ({spec.name}: {spec.cloud}, {spec.nodes} x {spec.gpus_per_node} on {where})")
    if bad:
        sys.exit(2)


@cli.command()
@click.option("--out", type=click.Path(dir_okay=False), help="Write to a file instead of stdout.")
def schema(out: str | None) -> None:
    """JSON Schema of cluster.yaml (for editors: yaml-language-server)."""
    from reclaunch.spec import json_schema

    text = json.dumps(json_schema(), indent=2) + "\n"
    if out:
        try:
            with open(out, "w") as fh:
                fh.write(text)
        except OSError as exc:
            from reclaunch.errors import output_error

            raise output_error(out, exc) from None
    else:
        click.echo(text, nl=False)


# ------------------------------------------------------------------ catalog

@cli.group(invoke_without_command=True)
@click.option("--cloud", type=click.Choice(KUBE_CLOUDS))
@click.option("--gpu", help="e.g. H100-80GB, A100")
@click.option("--region")
@click.option("--json", "as_json", is_flag=True, help="One JSON list on stdout.")
@click.pass_context
def catalog(ctx: click.Context, cloud, gpu, region, as_json) -> None:
    """Instances and prices, with the date and source of every price."""
    if ctx.invoked_subcommand:
        return
    from reclaunch.catalog import load_catalog
    from reclaunch.ui.catalog import offers_json, offers_table, select_offers

    cat = load_catalog()
    rows = select_offers(cat, cloud=cloud, gpu=gpu, region=region)
    if as_json:
        _emit_json(offers_json(rows, cat))
    else:
        _console().print(offers_table(rows, cat))


# ------------------------------------------------------------------ plan / render

def _cheaper_region(spec, the_plan, catalog) -> dict | None:
    """The same job in a cheaper region, if any; also a plan warning so `plan` prints it."""
    from reclaunch.planner.regions import cheaper_region, cheaper_region_line

    alt = None if spec.runs_here else cheaper_region(spec, the_plan, catalog)
    if alt is not None:
        the_plan.warnings.append(cheaper_region_line(alt))
    return alt


def _known_regions(regions: list[str], catalog) -> None:
    """A filter naming a region no catalog row is in would silently show nothing: refuse it."""
    import difflib

    known = catalog.regions()
    for r in regions:
        if r not in known:
            close = difflib.get_close_matches(r, known, n=1, cutoff=0.8)
            raise UsageError(f"--region {r!r}: no catalog offer is in that region"
                             + (f" — did you mean {close[0]}?" if close else "")
                             + " (`reclaunch catalog` lists them)")


def _load(file: str):
    from reclaunch.catalog import load_catalog
    from reclaunch.spec import load_spec

    catalog = load_catalog()
    return load_spec(file, catalog), catalog


@cli.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--compare", is_flag=True, help="Rank every catalog offer that can run the job by whole-job cost.")
@click.option("--same-cloud", is_flag=True, help="With --compare: only the spec's cloud.")
@click.option("--region", "region_opt", multiple=True, metavar="R",
              help="With --compare: only this region (repeatable).")
@click.option("--regions", "regions_opt", metavar="R1,R2", help="With --compare: only these regions.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout (design.md contract).")
def plan(file: str, compare: bool, same_cloud: bool, region_opt: tuple[str, ...],
         regions_opt: str | None, as_json: bool) -> None:
    """Before any money is spent: fit, parallelism, throughput, all-reduce time and cost.

    Names a cheaper region for the same job when the catalog has one. Exits 1 (after printing
    the plan) when the model cannot fit the cluster.
    """
    from reclaunch import planner
    from reclaunch.ui import plan as plan_view

    spec, catalog = _load(file)
    if same_cloud and not compare:
        raise UsageError("--same-cloud goes with --compare")
    regions = [*region_opt, *(r.strip() for r in (regions_opt or "").split(",") if r.strip())]
    if regions and not compare:
        raise UsageError("--region/--regions go with --compare")
    _known_regions(regions, catalog)
    the_plan = planner.make_plan(spec, catalog)
    alt = _cheaper_region(spec, the_plan, catalog)
    rows = (planner.compare(spec, catalog, same_cloud=same_cloud, regions=regions or None)
            if compare else None)
    if as_json:
        out = the_plan.to_json()
        out["cheaper_region"] = alt
        if rows is not None:
            out["compare"] = [r.to_json() for r in rows]
        _emit_json(out)
    else:
        console = _console()
        console.print(plan_view.render_plan(the_plan))
        if rows is not None:
            console.print(plan_view.render_compare(rows))
    if not the_plan.memory.fits:
        sys.exit(1)


@cli.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--out", "out_dir", type=click.Path(file_okay=False),
              help="Write one file per object into this directory instead of stdout.")
@click.option("--preflight", is_flag=True,
              help="Also render the NCCL all-reduce check (every GPU of every node); with "
                   "--out it goes to DIR/preflight/, applied on its own before DIR.")
def render(file: str, out_dir: str | None, preflight: bool) -> None:
    """Kubernetes manifests for the job (Namespace, plan ConfigMap, storage, PyTorchJob)."""
    from pathlib import Path

    from reclaunch import planner
    from reclaunch.manifests.job import (file_name, preflight_job, prerequisites,
                                         render as render_plan, to_yaml)

    spec, catalog = _load(file)
    the_plan = planner.make_plan(spec, catalog)
    objs = render_plan(the_plan)
    pre = [*prerequisites(the_plan), preflight_job(the_plan)] if preflight else []
    if not out_dir:
        click.echo(to_yaml(objs + pre[-1:]), nl=False)
        return
    # Two folders: `kubectl apply -f DIR` must not start the preflight beside the training
    # job (both want every GPU). DIR/preflight holds what the preflight needs to run alone.
    out = Path(out_dir)
    written = 0
    try:
        for folder, group in ((out, objs), (out / "preflight", pre)):
            if not group:
                continue
            folder.mkdir(parents=True, exist_ok=True)
            for i, obj in enumerate(group):
                (folder / file_name(i, obj)).write_text(to_yaml([obj]))
                written += 1
    except OSError as exc:
        from reclaunch.errors import output_error

        raise output_error(out_dir, exc) from None
    click.echo(f"wrote {written} files to {out}" + (
        f" (the preflight in {out / 'preflight'}: apply it first, alone)" if pre else ""),
        err=True)


# ------------------------------------------------------------------ catalog refresh / preview

@catalog.command("refresh")
@click.option("--cloud", type=click.Choice(KUBE_CLOUDS))
@click.option("--region")
@click.option("--instance")
@click.option("--dry-run", is_flag=True, help="Show the old -> new diff; write nothing.")
@click.option("--json", "as_json", is_flag=True)
def catalog_refresh(cloud, region, instance, dry_run, as_json) -> None:
    """Fetch live prices (AWS Price List + spot history, Azure Retail Prices, GCP Billing
    Catalog) into ~/.reclaunch/catalog, which plan and compare then prefer."""
    from reclaunch.catalog import load_catalog
    from reclaunch.catalog.refresh import refresh
    from reclaunch.providers import price_fetchers
    from reclaunch.ui.refresh import render_report

    report = refresh(load_catalog(), clouds=[cloud] if cloud else None, region=region,
                     instance=instance, dry_run=dry_run, fetchers=price_fetchers())
    if as_json:
        _emit_json(report.to_dict())
    else:
        _console().print(render_report(report))
    sys.exit(report.exit_code)


@cli.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True,
              help="One JSON object: {resources: [...], schedule: [...]}.")
def preview(file: str, as_json: bool) -> None:
    """What `pulumi up` would create, from the Pulumi program run under mocks (no credentials),
    and where every pod of the launch would be scheduled.

    Exits 1 (after printing) when a pod fits no node pool: `up` would refuse it.
    """
    from reclaunch import planner
    from reclaunch.manifests.placement import for_plan
    from reclaunch.providers import preview_plan
    from reclaunch.ui.preview import render_preview, render_schedule

    spec, catalog = _load(file)
    the_plan = planner.make_plan(spec, catalog)
    resources = preview_plan(the_plan)
    rows = for_plan(the_plan, catalog)
    if as_json:
        _emit_json({"resources": resources, "schedule": rows})
    else:
        _console().print(render_preview(resources))
        _console().print(render_schedule(rows))
    if any(not r["fits"] for r in rows):
        sys.exit(1)


# ------------------------------------------------------------------ up / status / logs / down

@cli.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.option("--force", is_flag=True, help="Start even when the estimate is over budget.max_usd.")
@click.option("--preflight", is_flag=True, help="Run the NCCL all-reduce check before the job.")
@click.option("--watch/--detach", default=True,
              help="Follow the job and apply teardown.when (default), or leave a watcher running.")
@click.option("--backend", help="Pulumi state backend URL (s3://, azblob://, gs://, https://).")
@click.option("--dry-run", is_flag=True,
              help="Print the launch `up` would apply (plan as planned) and create nothing.")
@click.option("--fresh", is_flag=True,
              help="cloud: local: train again from step 0 after a run that already succeeded.")
def up(file: str, yes: bool, force: bool, preflight: bool, watch: bool, backend: str | None,
       dry_run: bool, fresh: bool) -> None:
    """Provision (or reuse) the cluster, start the job, and by default tear down after it."""
    from reclaunch.providers.verbs import cli_up

    if dry_run:
        from reclaunch.manifests.launch import build_launch
        from reclaunch.planner import make_plan
        spec, catalog = _load(file)
        launch = build_launch(make_plan(spec, catalog))
        click.echo(f"# reclaunch up --dry-run: nothing created. After a capacity fallback (other "
                   f"zones, on-demand) `up` rebuilds this launch from the provisioned plan.")
        click.echo(launch.to_yaml(), nl=False)
        return

    try:
        status = cli_up(file, yes=yes, force=force, preflight=preflight, watch=watch,
                        detach=not watch, backend=backend, fresh=fresh)
    except KeyboardInterrupt:
        # Not "aborted": what was already created or started keeps running (and billing).
        err = ReclaunchError("interrupted: whatever `up` had already created or started is "
                             "still there", hint=f"`reclaunch status` shows it; `reclaunch up {file}` "
                             f"resumes, `reclaunch down {file}` removes it")
        err.exit_code = 130
        raise err from None
    if status is not None and status.details.get("already_finished"):
        click.echo(status.message)
    elif status is not None and not watch:
        n = status.name
        where = status.details.get("root")
        click.echo(f"started {n} ({status.cloud}): {status.state}"
                   + (f"; logs in {where}" if where else "") + "\n"
                   f"  follow it:  reclaunch status {n}   |   reclaunch logs {n} -f\n"
                   f"  stop it:    reclaunch down {n}")
    if status is not None and status.state == "Failed":
        sys.exit(1)


@cli.command()
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True)
def status(name: str | None, as_json: bool) -> None:
    """Job state, pods, nodes by capacity type, elapsed time and spend so far."""
    from reclaunch.providers.verbs import cli_status
    from reclaunch.ui.status import status_table

    statuses = cli_status(name)
    if as_json:
        from dataclasses import asdict
        rows = [asdict(s) for s in statuses]
        _emit_json(rows if name is None else rows[0])
    elif not statuses:
        click.echo("no clusters (reclaunch up FILE starts one)")
    else:
        _console().print(status_table(statuses))


@cli.command()
@click.argument("name")
@click.option("--rank", type=int, help="Which rank (default: the master, rank 0).")
@click.option("-f", "--follow", is_flag=True)
def logs(name: str, rank: int | None, follow: bool) -> None:
    """Logs of the job's master, or of one rank."""
    from reclaunch.providers.verbs import cli_logs

    for line in cli_logs(name, rank=rank, follow=follow):
        click.echo(line.rstrip("\n"))


@cli.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
def diagnose(name: str, as_json: bool) -> None:
    """Measured against planned (memory, each part of the step, samples/s, finish time and
    cost at the measured rate) and the likely cause when they differ, with the fix.

    Exits 0 when it could diagnose (findings are information), 1 when the job has reported
    no metrics yet, 2 on bad input.
    """
    from reclaunch.providers.verbs import cli_diagnose

    report = cli_diagnose(name).to_json()
    if as_json:
        _emit_json(report)
        return
    from reclaunch.ui.diagnose import renderables

    out = _console()
    for r in renderables(report):
        out.print(r)


@cli.command()
@click.argument("name_or_file")
@click.option("--yes", "-y", is_flag=True)
@click.option("--keep-storage", is_flag=True, help="Keep the dataset volume.")
@click.option("--backend", help="Pulumi state backend URL.")
def down(name_or_file: str, yes: bool, keep_storage: bool, backend: str | None) -> None:
    """Destroy the cluster and verify that nothing tagged for it is left."""
    from reclaunch.providers.verbs import cli_down

    cli_down(name_or_file, yes=yes, keep_storage=keep_storage, backend=backend)


@cli.command()
@click.argument("name")
@click.option("--node", type=int, required=True, help="Which simulated node (0-based).")
@click.option("--notice", type=float, default=10.0, show_default=True,
              help="Seconds between the reclaim notice (SIGTERM) and SIGKILL (AWS gives 120).")
@click.option("--replace-after", type=float, default=5.0, show_default=True,
              help="Seconds until the replacement node joins, as an autoscaler would add one.")
def preempt(name: str, node: int, notice: float, replace_after: float) -> None:
    """Spot-reclaim drill on a running cloud: local cluster: notice, grace, kill, replace."""
    from reclaunch.providers import Preemptible
    from reclaunch.providers.verbs import provider_for
    from reclaunch.runtime.locks import cluster_lock

    provider = provider_for(name)
    if not isinstance(provider, Preemptible):
        raise UsageError(f"{name} is a {provider.name} cluster: preempt drills run on cloud: local "
                         "clusters (rehearse there before paying for spot reclaims)")
    with cluster_lock(name, "preempt"):
        record = provider.preempt(name, node, notice=notice, replace_after=replace_after)
    click.echo(f"node {node} of {name} reclaimed (notice {notice:g}s); "
               f"a replacement joins in {replace_after:g}s"
               + (f": {record.get('message')}" if isinstance(record, dict) and record.get("message") else ""))


# ------------------------------------------------------------------ gc

@cli.command()
@click.option("--cloud", type=click.Choice(KUBE_CLOUDS), required=True)
@click.option("--region", required=True, help="e.g. us-east-1, eastus, us-central1")
@click.option("--cluster", help="Only this cluster's resources (default: every reclaunch cluster).")
@click.option("--subscription", envvar="AZURE_SUBSCRIPTION_ID", help="Azure subscription id.")
@click.option("--project", envvar="GOOGLE_CLOUD_PROJECT", help="GCP project id.")
@click.option("--yes", is_flag=True, help="Delete what is found (default: only list it).")
def gc(cloud: str, region: str, cluster: str | None, subscription: str | None,
       project: str | None, yes: bool) -> None:
    """Find (and with --yes delete) everything tagged reclaunch-managed=true: the safety net
    when a Pulumi state is lost. Never touches untagged resources or other clusters'."""
    from reclaunch.providers import gc as sweep_gc

    options = {k: v for k, v in (("subscription_id", subscription), ("project", project)) if v}
    # Progress on stdout as it goes (stderr stays one line per error, the CLI's contract).
    report = sweep_gc(cloud, region, cluster, delete=yes,
                      progress=lambda msg: click.echo(msg), **options)
    _console().print(report.render())
    sys.exit(report.exit_code)


# ------------------------------------------------------------------ entry point

def main(argv: list[str] | None = None) -> None:
    from reclaunch.cli.exits import run
    run(cli, argv)
