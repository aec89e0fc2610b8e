"""`up --dry-run` (and the "needs a person" list `plan` shows): pure reads, nothing created."""

from __future__ import annotations

import click

from reclaunch.cli.base import _load


def needs_a_person(plan) -> list[str]:
    """The same list `up` prints before it creates anything: stacks.manual_prerequisites,
    which providers.kubecloud._prerequisites hands to the lifecycle (imported directly here:
    kubecloud costs `plan` start-up time); [] for cloud: local."""
    if plan.spec.runs_here:
        return []
    from stacks import manual_prerequisites

    return manual_prerequisites(plan)


def dry_run(file: str, output: str, out_dir: str | None) -> None:
    from reclaunch.planner import make_plan
    from reclaunch.ui.dryrun import dry_run_text, local_lines, object_lines

    spec, catalog = _load(file)
    plan = make_plan(spec, catalog)
    if spec.runs_here:
        from reclaunch.providers.local.dryrun import describe

        commands, env = describe(plan)
        if output == "yaml" or out_dir:
            import yaml

            doc = yaml.safe_dump({"nodes": [{"node": i, "command": c} for i, c in enumerate(commands)],
                                  "env": env}, sort_keys=False, width=200)
            _write_or_echo(out_dir, {"local-launch.yaml": doc})
            return
        click.echo(dry_run_text(plan, [], local_lines(commands, env), file), nl=False)
        return
    from reclaunch.manifests.job import file_name, to_yaml
    from reclaunch.manifests.launch import build_launch

    launch = build_launch(plan)
    if output == "yaml" or out_dir:
        if not out_dir:
            click.echo("# reclaunch up --dry-run: nothing created. After a capacity fallback (other "
                       "zones, on-demand) `up` rebuilds this launch from the provisioned plan.")
            click.echo(launch.to_yaml(), nl=False)
            return
        _write_or_echo(out_dir, {file_name(i, o): to_yaml([o]) for i, o in enumerate(launch.all())})
        return
    body = object_lines(list(launch.objects), launch.job)
    body.append("  (after a capacity fallback, other zones or on-demand, `up` rebuilds these "
                "from the provisioned plan)")
    click.echo(dry_run_text(plan, needs_a_person(plan), body, file), nl=False)


def _write_or_echo(out_dir: str | None, files: dict[str, str]) -> None:
    if not out_dir:
        for text in files.values():
            click.echo(text, nl=False)
        return
    from pathlib import Path

    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (out / name).write_text(text)
    except OSError as exc:
        from reclaunch.errors import output_error

        raise output_error(out_dir, exc) from None
    click.echo(f"wrote {len(files)} file(s) to {out} (nothing created)", err=True)
