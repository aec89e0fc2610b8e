"""The verbs that act on a cluster: up, status, logs, diagnose, down, preempt, gc."""

from __future__ import annotations

import sys

import click

from reclaunch.cli.base import SWEPT_CHOICE, _console, _emit_json, _load, cli
from reclaunch.errors import ReclaunchError, UsageError  # noqa: F401


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
              help="Show the plan, what needs a person, and the objects `up` would apply; "
                   "create nothing.")
@click.option("-o", "--output", "output", type=click.Choice(["text", "yaml"]), default="text",
              help="With --dry-run: yaml prints every object in full.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False),
              help="With --dry-run: write one YAML file per object into this directory.")
@click.option("--fresh", is_flag=True,
              help="cloud: local: train again from step 0 after a run that already succeeded.")
def up(file: str, yes: bool, force: bool, preflight: bool, watch: bool, backend: str | None,
       dry_run: bool, output: str, out_dir: str | None, fresh: bool) -> None:
    """Provision (or reuse) the cluster, start the job, and by default tear down after it."""
    from reclaunch.providers.verbs import cli_up

    if (output != "text" or out_dir) and not dry_run:
        raise UsageError("-o/--out go with --dry-run")
    if dry_run:
        from reclaunch.cli.dryrun import dry_run as show_dry_run

        show_dry_run(file, output, out_dir)
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
@click.option("--wide", is_flag=True, help="Every column at its natural width, whatever the "
              "terminal's (default: fit it, stacking columns).")
def status(name: str | None, as_json: bool, wide: bool) -> None:
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
        out = _console(wide=wide)
        out.print(status_table(statuses, width=None if wide else out.width), soft_wrap=wide)


@cli.command()
@click.argument("name")
@click.option("--rank", type=int, help="Which rank (default: the master, rank 0).")
@click.option("--all", "all_ranks", is_flag=True,
              help="Every rank (cloud: local: and the torchrun agents' own lines).")
@click.option("--metrics", is_flag=True,
              help="Also the RECLAUNCH_METRICS lines (`diagnose` reads them; hidden by default).")
@click.option("-f", "--follow", is_flag=True)
def logs(name: str, rank: int | None, all_ranks: bool, metrics: bool, follow: bool) -> None:
    """Logs of the job's master (rank 0), of one rank, or of all."""
    from reclaunch.providers.verbs import cli_logs

    from reclaunch.ui.text import visible   # the job's bytes: no terminal escapes pass

    if all_ranks and rank is not None:
        raise UsageError("--rank and --all: pick one")
    for line in cli_logs(name, rank=None if all_ranks else (rank or 0), follow=follow):
        if not metrics and "RECLAUNCH_METRICS " in line:
            continue
        click.echo(visible(line.rstrip("\n"), keep_newlines=False, limit=None))


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

def _gc_region(cloud: str, region: str) -> None:
    """A region reclaunch never creates clusters in (none of its catalog offers is there)
    is a typo: say so before any SDK asks for credentials, with the nearest name."""
    import difflib
    import re

    from reclaunch.catalog import load_catalog

    norm = (region or "").strip().lower()
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,63}", norm):
        return      # not a region name at all: providers.sweeper_for says so
    known = load_catalog().regions(cloud)
    if known and norm not in known:
        close = difflib.get_close_matches(norm, known, n=1, cutoff=0.6)
        raise UsageError(f"gc --region {region!r}: reclaunch has no {cloud} offer in that region"
                         + (f" — did you mean {close[0]}?" if close else ""),
                         hint=f"`reclaunch catalog --cloud {cloud}` lists its regions")


@cli.command()
@click.option("--cloud", type=SWEPT_CHOICE, required=True)
@click.option("--region", required=True,
              help="e.g. us-east-1, eastus, us-central1; cloud kubernetes: the kubeconfig context")
@click.option("--cluster", help="Only this cluster's resources (default: every reclaunch cluster).")
@click.option("--subscription", envvar="AZURE_SUBSCRIPTION_ID", help="Azure subscription id.")
@click.option("--project", envvar="GOOGLE_CLOUD_PROJECT", help="GCP project id.")
@click.option("--yes", is_flag=True, help="Delete what is found (default: only list it).")
def gc(cloud: str, region: str, cluster: str | None, subscription: str | None,
       project: str | None, yes: bool) -> None:
    """Find (and with --yes delete) everything tagged reclaunch-managed=true: the safety net
    when a Pulumi state is lost. Never touches untagged resources or other clusters'."""
    from reclaunch.providers import gc as sweep_gc

    _gc_region(cloud, region)      # before any credential is asked for
    options = {k: v for k, v in (("subscription_id", subscription), ("project", project)) if v}
    # Progress on stdout as it goes (stderr stays one line per error, the CLI's contract).
    report = sweep_gc(cloud, region, cluster, delete=yes,
                      progress=lambda msg: click.echo(msg), **options)
    # Cloud tags and names are anyone's text: shown as text (render escapes control
    # characters), never as rich markup or a live link.
    _console().print(report.render(), markup=False, highlight=False)
    sys.exit(report.exit_code)


