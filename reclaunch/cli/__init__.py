"""The `reclaunch` command. One function per verb; each imports its layer lazily.

Start-up time is a feature: this module imports click and nothing heavy. Errors users can
act on (ReclaunchError) print as one line with the command's exit code, never a traceback.
"""

from __future__ import annotations

import sys

import click

from reclaunch.errors import UsageError
from reclaunch.cli.base import KUBE_CHOICE, _console, _emit_json, _load, cli  # noqa: F401


# ------------------------------------------------------------------ validate / schema

@cli.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
def validate(files: tuple[str, ...]) -> None:
    """Check cluster.yaml files; print every problem as file:line: field: message."""
    from reclaunch.catalog import load_catalog
    from reclaunch.cli.exits import echo_quietly as echo   # a reader gone must not change the verdict
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
                echo(line, err=True)
            continue
        where = spec.instance_type or spec.gpu or ("this machine" if spec.runs_here else "the cluster's nodes")
        echo(f"{f}: ok ({spec.name}: {spec.cloud}, {spec.nodes} x {spec.gpus_per_node} on {where})")
    if bad:
        sys.exit(2)


@cli.command()
@click.option("--out", type=click.Path(dir_okay=False), help="Write to a file instead of stdout.")
def schema(out: str | None) -> None:
    """JSON Schema of cluster.yaml (for editors: yaml-language-server)."""
    import json

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
@click.option("--cloud", type=KUBE_CHOICE)
@click.option("--gpu", help="e.g. H100-80GB, A100")
@click.option("--region")
@click.option("--json", "as_json", is_flag=True, help="One JSON list on stdout.")
@click.option("--wide", is_flag=True, help="Every column at its natural width, whatever the "
              "terminal's (default: fit it, stacking columns).")
@click.pass_context
def catalog(ctx: click.Context, cloud, gpu, region, as_json, wide) -> None:
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
        out = _console(wide=wide)
        out.print(offers_table(rows, cat, width=out.width, wide=wide), soft_wrap=wide)


# ------------------------------------------------------------------ plan / render

def _cheaper_region(spec, the_plan, catalog) -> dict | None:
    """The same job in a cheaper region, if any; also a plan warning so `plan` prints it."""
    from reclaunch.planner.regions import cheaper_region, cheaper_region_line

    alt = None if spec.runs_here else cheaper_region(spec, the_plan, catalog)
    if alt is not None:
        the_plan.warnings.append(cheaper_region_line(alt))
    return alt



def _known_regions(regions: list[tuple[str, str]], catalog) -> None:
    """A filter naming a region no catalog row is in would silently show nothing: refuse it.
    `regions`: (the option that named it, region)."""
    known = catalog.regions()
    for flag, r in regions:
        if r not in known:
            import difflib   # only to word the refusal: a plain plan names no region

            close = difflib.get_close_matches(r, known, n=1, cutoff=0.8)
            raise UsageError(f"{flag} {r!r}: no catalog offer is in that region"
                             + (f" — did you mean {close[0]}?" if close else "")
                             + " (`reclaunch catalog` lists them)")


@cli.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--compare", is_flag=True, help="Rank every catalog offer that can run the job by whole-job cost.")
@click.option("--same-cloud", is_flag=True, help="With --compare: only the spec's cloud.")
@click.option("--region", "region_opt", multiple=True, metavar="R",
              help="With --compare: only this region (repeatable).")
@click.option("--regions", "regions_opt", metavar="R1,R2", help="With --compare: only these regions.")
@click.option("--top", type=click.IntRange(min=0), default=10, show_default=True,
              help="With --compare: show the N cheapest offers (0: all).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
def plan(file: str, compare: bool, same_cloud: bool, region_opt: tuple[str, ...],
         regions_opt: str | None, top: int, as_json: bool) -> None:
    """Before any money is spent: fit, parallelism, throughput, all-reduce time and cost.

    Names a cheaper region for the same job when the catalog has one. Exits 1 (after printing
    the plan) when the model cannot fit the cluster.
    """
    from reclaunch import planner
    from reclaunch.cli.exits import echo_quietly as echo   # a reader gone must not change the verdict
    from reclaunch.ui import plan as plan_view

    spec, catalog = _load(file)
    if same_cloud and not compare:
        raise UsageError("--same-cloud goes with --compare")
    listed = [r.strip() for r in regions_opt.split(",")] if regions_opt is not None else []
    if regions_opt is not None and not all(listed):   # "--regions ," is no filter, not "all"
        raise UsageError(f"--regions {regions_opt!r}: an empty region name",
                         hint="list regions separated by commas, e.g. --regions us-east-1,eastus")
    named = [*(("--region", r) for r in region_opt), *(("--regions", r) for r in listed)]
    regions = [r for _, r in named]
    if regions and not compare:
        raise UsageError("--region/--regions go with --compare")
    _known_regions(named, catalog)
    from reclaunch.runtime.measurements import plan_context

    # measured runs of this job shape and (cloud: local) this host's calibration, passed in
    the_plan = planner.make_plan(spec, catalog, context=plan_context(spec))
    alt = _cheaper_region(spec, the_plan, catalog)
    from reclaunch import clouds
    if spec.cloud in clouds.own_names():   # nothing binds the pods' identity there: say how
        from reclaunch.manifests.stackfacts import bucket_auth_note
        if note := bucket_auth_note(the_plan):
            the_plan.warnings.append(note)
    rows = (planner.compare(spec, catalog, same_cloud=same_cloud, regions=regions or None,
                            context=the_plan.context) if compare else None)
    if as_json:
        out = the_plan.to_json()
        out["cheaper_region"] = alt
        if rows is not None:
            out["compare"] = [r.to_json() for r in rows]
        _emit_json(out, echo)
    else:
        from reclaunch.cli.dryrun import needs_a_person
        from reclaunch.ui.dryrun import person_lines
        from reclaunch.ui.grid import bold_ok, terminal_width, wrap

        bold = bold_ok()   # plain text, no rich: rich's import and layout cost start-up (issue 25)
        width = terminal_width(110)
        echo(plan_view.render_plan(the_plan, width=width, bold=bold))
        for line in person_lines(needs_a_person(the_plan), width):   # the list `up` shows
            echo(line)
        if not the_plan.spec.runs_here:   # plan renders no pods: it says where the check runs
            echo("\n".join(wrap(f"pods on nodes: not checked by plan; `reclaunch up {file} "
                                "--dry-run` (or render, preview) checks them", width, "  ")))
        if rows is not None:
            echo(plan_view.render_compare(rows, width=terminal_width(140), top=top or None,
                                          bold=bold))
    if not the_plan.memory.fits:
        sys.exit(1)


@cli.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--out", "out_dir", type=click.Path(file_okay=False),
              help="Write one file per object into this directory instead of stdout.")
@click.option("--preflight", is_flag=True,
              help="Also render the NCCL all-reduce check (every GPU of every node); with "
                   "--out it goes to DIR/preflight/, applied on its own before DIR.")
@click.option("--with-storage", is_flag=True,
              help="Also the PV/PVC for an existing file system (storage.existing), for a "
                   "cluster you already have; `up` creates them itself.")
def render(file: str, out_dir: str | None, preflight: bool, with_storage: bool) -> None:
    """Kubernetes manifests for the job (Namespace, plan ConfigMap, storage, PyTorchJob)."""
    from pathlib import Path

    from reclaunch import planner
    from reclaunch.manifests.job import (file_name, preflight_job, prerequisites,
                                         render as render_plan, to_yaml)

    from reclaunch.runtime.measurements import plan_context

    spec, catalog = _load(file)   # priced as `plan` prices it (plan.json): measured runs, this host
    the_plan = planner.make_plan(spec, catalog, context=plan_context(spec, preflight=preflight))
    objs = render_plan(the_plan)
    from reclaunch.manifests.stackfacts import bucket_auth_note
    if note := bucket_auth_note(the_plan):
        click.echo(f"note: {note}", err=True)
    if with_storage:
        from reclaunch.manifests.job import _meta
        from reclaunch.manifests.static_storage import static_volume

        extra = static_volume(the_plan, _meta)   # after the Namespace, before the job
        objs = objs[:1] + extra + objs[1:]
    pre = [*prerequisites(the_plan), preflight_job(the_plan)] if preflight else []
    from reclaunch.manifests.secrets import holds_user_env, redacted
    if not out_dir:   # printed: secret-looking values redacted (secrets.py); --out writes them
        click.echo(to_yaml(redacted(objs + pre[-1:])), nl=False)
        _claim_note(spec, with_storage)
        _fit_or_exit(the_plan, objs, file)
        return
    private = holds_user_env(the_plan)   # files that may hold job.env values: owner-only
    # Two folders: `kubectl apply -f DIR` must not start the preflight beside the training
    # job (both want every GPU). DIR/preflight holds what the preflight needs to run alone.
    from reclaunch.cli.outdir import write_tree

    out = Path(out_dir)
    groups = {sub: {file_name(i, obj): to_yaml([obj]) for i, obj in enumerate(group)}
              for sub, group in (("", objs), ("preflight", pre))}
    stale: list[str] = []
    try:   # temporary files renamed into place: a planted symlink is replaced, never followed
        written = write_tree(out, groups, private)
        for sub, files in ((s, f) for s, f in groups.items() if f):
            stale += [str(f) for f in sorted((out / sub).iterdir()) if f.name not in files
                      and f.suffix in (".yaml", ".yml", ".json") and f.is_file()]
    except OSError as exc:
        from reclaunch.errors import output_error

        raise output_error(out_dir, exc) from None
    click.echo(f"wrote {written} files to {out}" + (
        f" (the preflight in {out / 'preflight'}: apply it first, alone)" if pre else ""),
        err=True)
    if stale:   # not ours to delete, but `kubectl apply -f DIR` would apply them with ours
        click.echo(f"warning: {len(stale)} other manifest file(s) in {out} this render did not write "
                   f"(`kubectl apply -f {out}` applies them too): " + ", ".join(stale[:5])
                   + (" ..." if len(stale) > 5 else ""), err=True)
    _claim_note(spec, with_storage)
    _fit_or_exit(the_plan, objs, file)


def _fit_or_exit(plan, objs, file: str) -> None:
    """Exit 1 (after the manifests are out) when a pod may not fit a modelled node: the check
    `up` refuses on and `preview` reports, run here without any SDK."""
    from reclaunch.cli.dryrun import pods_fit
    from reclaunch.manifests.launch import launch_of

    if not pods_fit(plan, launch_of(plan, objs), file):
        sys.exit(1)


def _claim_note(spec, with_storage: bool = False) -> None:
    from reclaunch import clouds

    if clouds.storage_kind(spec.storage.kind).created_by_stack and not with_storage:   # the claim is not here
        click.echo(f"note: the job mounts PersistentVolumeClaim {spec.name}-data ({spec.storage.kind}), "
                   "which `reclaunch up` creates with the file system; on a cluster you already "
                   "have, create that claim first (`--with-storage` writes it for storage.existing)", err=True)


# ------------------------------------------------------------------ catalog refresh / preview

@catalog.command("refresh")
@click.option("--cloud", type=KUBE_CHOICE)
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

    The stack's resources also go through the policy checks (stacks/policy.py: tags, no
    world-open control plane or SSH, encrypted volumes, scoped IAM, pinned GPU pools).
    Exits 1 (after printing) when a pod fits no node pool or a policy fails.
    """
    from reclaunch import planner
    from reclaunch.providers import preview_plan, schedule_for
    from reclaunch.ui.preview import render_policy, render_preview, render_schedule
    from stacks.policy import check as policy_check

    from reclaunch.runtime.measurements import plan_context

    spec, catalog = _load(file)   # priced as `plan` prices it: measured runs of this job shape
    the_plan = planner.make_plan(spec, catalog, context=plan_context(spec))
    resources = preview_plan(the_plan)
    rows = schedule_for(the_plan, catalog)
    findings = policy_check(the_plan, resources)
    if as_json:
        _emit_json({"resources": resources, "schedule": rows, "policy": findings})
    else:
        if resources or not getattr(the_plan.offer, "node_names", None):
            _console().print(render_preview(resources))
        else:   # cloud: kubernetes: a cluster you bring, checked node by node below
            _console().print(f"nothing to create: the launch goes onto the nodes of {the_plan.region}")
        _console().print(render_schedule(rows))
        if resources:   # a cluster you bring (cloud: kubernetes) creates no cloud resources
            _console().print(render_policy(findings))
    if any(not r["fits"] for r in rows) or findings:
        sys.exit(1)


# The verbs that act on a cluster (up, status, logs, diagnose, down, preempt, gc) register
# themselves on the same group.
from reclaunch.cli import check, cluster, shell  # noqa: E402,F401
from reclaunch.cli import calibrate as _calibrate  # noqa: E402,F401

# ------------------------------------------------------------------ entry point

def main(argv: list[str] | None = None) -> None:
    from reclaunch.cli.exits import run
    run(cli, argv)
