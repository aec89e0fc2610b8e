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

    from reclaunch.runtime.measurements import plan_context

    spec, catalog = _load(file)
    plan = make_plan(spec, catalog, context=plan_context(spec))   # as `up` plans it
    if spec.runs_here:
        from reclaunch.providers.local.dryrun import describe

        commands, env = describe(plan)
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
    from reclaunch.manifests.job import file_name, to_yaml
    from reclaunch.manifests.launch import build_launch

    launch = build_launch(plan)
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
    click.echo(dry_run_text(plan, needs_a_person(plan), body, file), nl=False)


def _write_or_echo(out_dir: str | None, files: dict[str, str], private: bool = False) -> None:
    """stdout, or one file each; `private`: the files may hold job.env values (owner-only,
    as `render --out` writes them)."""
    if not out_dir:
        for text in files.values():
            click.echo(text, nl=False)
        return
    from pathlib import Path

    from reclaunch.cli import _write

    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True, mode=0o700 if private else 0o777)
        if private:
            out.chmod(0o700)
        for name, text in files.items():
            _write(out / name, text, 0o600 if private else 0o644)
    except OSError as exc:
        from reclaunch.errors import output_error

        raise output_error(out_dir, exc) from None
    click.echo(f"wrote {len(files)} file(s) to {out} (nothing created)", err=True)
