"""What `up` would run for cloud: local, without running it: one torchrun agent per simulated
node, as the supervisor starts them (supervisor.Supervisor.agent_cmd; a test keeps the two
the same), and the environment every training process gets."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from reclaunch.errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

PORT = "<port>"   # chosen at `up` (a free one on 127.0.0.1)


def entrypoint(command: list[str], args: list[str]) -> list[str]:
    """job.command + args -> torchrun's trailing arguments (the interpreter is this one);
    the rule is the cluster's (reclaunch.manifests.launcher)."""
    from reclaunch.manifests.launcher import torchrun_tail

    cmd = [*command, *args]
    if cmd[0] == sys.executable:
        cmd = ["python", *cmd[1:]]
    try:
        tail = torchrun_tail(cmd, interpreter=sys.executable)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return tail if tail is not None else ["--no-python", *cmd]


def agent_command(plan: "Plan", node: int, *, join_timeout: int = 300,
                  last_call_timeout: int = 10) -> list[str]:
    spec = plan.spec
    conf = ",".join(f"{k}={v}" for k, v in {
        "is_host": 0, "join_timeout": join_timeout, "last_call_timeout": last_call_timeout,
        "close_timeout": 10, "keep_alive_interval": 1, "keep_alive_max_attempt": 5}.items())
    return ["torchrun", f"--nnodes={plan.min_nodes}:{plan.max_nodes}",
            f"--nproc-per-node={plan.gpus_per_node}", "--rdzv-backend=c10d",
            f"--rdzv-endpoint=127.0.0.1:{PORT}", f"--rdzv-id={spec.name}", f"--rdzv-conf={conf}",
            f"--max-restarts={spec.job.max_restarts}", "--local-addr=127.0.0.1",
            "--monitor-interval=0.5", f"--log-dir=<run dir>/nodes/node-{node}/torchelastic",
            "--tee=3", *entrypoint(spec.job.command, spec.job.args)]


def describe(plan: "Plan") -> tuple[list[list[str]], dict[str, str]]:
    """(one command per node, the job's environment as `up` would pass it)."""
    from reclaunch.manifests.env import job_env

    env = job_env(plan, local_root="<run dir>")
    return [agent_command(plan, k) for k in range(plan.nodes)], env
