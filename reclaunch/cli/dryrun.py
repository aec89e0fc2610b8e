"""`up --dry-run` (and the "needs a person" list `plan` shows): pure reads, nothing created."""

from __future__ import annotations

import sys

import click

from reclaunch.cli.base import _load


def needs_a_person(plan, *, pins: bool = False) -> list[str]:
    """The same list `up` prints before it creates anything: stacks.manual_prerequisites,
    which providers.kubecloud._prerequisites hands to the lifecycle (imported directly here:
    kubecloud costs `plan` start-up time); [] for cloud: local. `pins`: also an add-on pin
    holding the Kubernetes minor back (stacks.versions, which `plan` never imports: it reads
    the add-on and version tables)."""
    if plan.spec.runs_here:
        return []
    from stacks import manual_prerequisites

    if not pins:
        return manual_prerequisites(plan)
    from stacks.versions import person_lines

    return [*manual_prerequisites(plan), *person_lines(plan)]


def pods_fit(plan, launch, file: str) -> bool:
    """The schedulability check `preview` and `up` run (manifests.placement.for_plan: every pod
    against the stack's pools as modelled nodes), here without any SDK. One line per pod that
    may not fit, on stderr; False when one may not. A cluster you bring is checked against its
    own nodes, read through its API: said so, not guessed."""
    if plan.spec.runs_here:
        return True
    from reclaunch.manifests.placement import for_plan
    from reclaunch.manifests.stackfacts import stack_package

    if stack_package(plan.cloud) is None:
        click.echo(f"note: pod fit not checked here (the nodes are the cluster's own): "
                   f"`reclaunch preview {file}` checks every pod against them", err=True)
        return True
    bad = [r for r in for_plan(plan, launch=launch) if not r["fits"]]
    for r in bad:
        click.echo(f"error: {r['pod']} ({r['role']}) may not fit the modelled node: "
                   + "; ".join(r["reasons"] or ["no pool"]), err=True)
    return not bad


def dry_run(file: str, output: str, out_dir: str | None) -> None:
    from reclaunch.planner import make_plan
    from reclaunch.ui.dryrun import dry_run_text, local_lines

    from reclaunch.runtime.measurements import plan_context

    spec, catalog = _load(file)
    plan = make_plan(spec, catalog, context=plan_context(spec))   # as `up` plans it
    if spec.runs_here:
        from reclaunch.providers import get

        commands, env = get(spec.cloud).describe(plan)   # what its `up` would run here
        if output == "yaml" or out_dir:
            import yaml

            if not out_dir:   # printed: the user's own env values stay off the terminal
                env = {k: ("<redacted: job.env>" if k in spec.job.env else v) for k, v in env.items()}

            doc = yaml.safe_dump({"nodes": [{"node": i, "command": c} for i, c in enumerate(commands)],
                                  "env": env}, sort_keys=False, width=200)
            _write_or_echo(out_dir, {"local-launch.yaml": doc}, private=True)
            return
        click.echo(dry_run_text(plan, [], local_lines(commands, env), file), nl=False)
        return
    from reclaunch.manifests.launch import build_launch

    launch = build_launch(plan)
    _dry_run_objects(plan, launch, file, output, out_dir)
    if not pods_fit(plan, launch, file):   # what `up` would refuse, after what it would create
        sys.exit(1)


def _dry_run_objects(plan, launch, file: str, output: str, out_dir: str | None) -> None:
    from reclaunch.manifests.job import file_name, to_yaml
    from reclaunch.ui.dryrun import dry_run_text, object_lines

    if output == "yaml" or out_dir:
        if not out_dir:
            click.echo("# reclaunch up --dry-run: nothing created. After a capacity fallback (other "
                       "zones, on-demand) `up` rebuilds this launch from the provisioned plan.")
            from reclaunch.manifests.secrets import redacted

            click.echo(to_yaml(redacted(launch.all())), nl=False)   # never a secret-looking value
            return
        from reclaunch.manifests.secrets import holds_user_env

        _write_or_echo(out_dir, {file_name(i, o): to_yaml([o]) for i, o in enumerate(launch.all())},
                       private=holds_user_env(plan))
        return
    body = object_lines(list(launch.objects), launch.job)
    body.append("  (after a capacity fallback, other zones or on-demand, `up` rebuilds these "
                "from the provisioned plan)")
    click.echo(dry_run_text(plan, needs_a_person(plan, pins=True), body, file), nl=False)


def _write_or_echo(out_dir: str | None, files: dict[str, str], private: bool = False) -> None:
    """stdout, or one file each; `private`: the files may hold job.env values (owner-only,
    as `render --out` writes them)."""
    if not out_dir:
        for text in files.values():
            click.echo(text, nl=False)
        return
    from pathlib import Path

    from reclaunch.cli.outdir import write_tree

    out = Path(out_dir)
    try:   # as `render --out` writes: a planted symlink is replaced, never followed
        write_tree(out, {"": files}, private)
    except OSError as exc:
        from reclaunch.errors import output_error

        raise output_error(out_dir, exc) from None
    click.echo(f"wrote {len(files)} file(s) to {out} (nothing created)", err=True)
