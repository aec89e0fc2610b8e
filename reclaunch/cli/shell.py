"""`reclaunch exec` and `reclaunch port-forward`: a command or a shell beside any rank of a
running job, and a port of rank 0 on this machine (SkyPilot's `ssh`, dstack's `attach`,
`kubectl exec` / `port-forward`). The Kubernetes client is imported only when they run."""

from __future__ import annotations

import sys

import click

from reclaunch.cli.base import cli


# Options anywhere before `--`; everything after it is the command, whatever its dashes.
@cli.command("exec", context_settings={"ignore_unknown_options": True})
@click.argument("name")
@click.option("--rank", type=click.IntRange(min=0), default=0, show_default=True,
              help="Which rank: cloud: local, the training process of that rank; a cluster, "
                   "the pod of that node rank (the master is 0), as `logs --rank`.")
@click.option("-i", "--interactive", is_flag=True,
              help="Pass this terminal's input (a tty when it is one). Implied without CMD.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def exec_(name: str, rank: int, interactive: bool, command: tuple[str, ...]) -> None:
    """Run CMD beside a rank of a running job (`reclaunch exec NAME -- nvidia-smi`), or open
    a shell there without one. Exits with the command's exit code."""
    from reclaunch.providers.verbs import shell_provider

    cmd = list(command[1:] if command[:1] == ("--",) else command)
    code = shell_provider(name).exec(name, cmd, rank=rank, interactive=interactive or not cmd)
    sys.exit(code)


@cli.command("port-forward")
@click.argument("name")
@click.argument("port", type=click.IntRange(1, 65535))
@click.option("--local-port", type=click.IntRange(0, 65535),
              help="The port on this machine (default: PORT; 0: any free one).")
@click.option("--rank", type=click.IntRange(min=0), default=0, show_default=True,
              help="Which rank's port (default: rank 0, where a dashboard runs).")
def port_forward(name: str, port: int, local_port: int | None, rank: int) -> None:
    """Forward PORT of a running job's rank 0 to 127.0.0.1 here, until Ctrl-C."""
    from reclaunch.providers.verbs import shell_provider

    def ready(bound: int) -> None:
        click.echo(f"forwarding 127.0.0.1:{bound} -> {name} rank {rank} port {port} "
                   "(Ctrl-C stops)")

    def failed(why: str) -> None:
        click.echo(f"a connection to {name}:{port} failed: {why}", err=True)

    try:
        said = shell_provider(name).port_forward(name, port, local_port=local_port, rank=rank,
                                                 ready=ready, on_error=failed)
    except KeyboardInterrupt:
        said = "stopped"
    if said:
        click.echo(said)


@cli.group()
def nodes() -> None:
    """A cluster you bring (cloud: kubernetes): its nodes as a file, for machines without
    its kubeconfig."""


@nodes.command("save")
@click.option("--context", help="kubeconfig context (default: the current one).")
@click.option("--out", "out", type=click.Path(dir_okay=False),
              help="Where to write it (default: $RECLAUNCH_HOME/kubernetes/nodes/CONTEXT.json, "
                   "which plan finds by the spec's context when there is no kubeconfig).")
def nodes_save(context: str | None, out: str | None) -> None:
    """Read the cluster's nodes (labels, taints, allocatable) and what its pods request, and
    save them: `plan`, `render` and `check` then work from the file (`kubernetes.nodes`)."""
    from reclaunch.providers import save_nodes

    name, done = save_nodes(context, out)
    click.echo(f"saved {done['nodes']} node(s) and the requests of {done['pods']} pod(s) of "
               f"{name} to {done['path']}\n  use it: `kubernetes: {{context: {name}, nodes: "
               f"{done['path']}}}` in the spec (plan, render and check; `up` reads the cluster)")
