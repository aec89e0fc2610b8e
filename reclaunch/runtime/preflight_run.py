"""`up --preflight`: run the NCCL all-reduce job where training will run, wait for it, read
its log, and refuse to start training on a fabric that does not deliver (unless --force).

A preflight passes only when the job Succeeded (every rank exited 0), its log holds the whole
sweep and the "# Avg bus bandwidth" summary, and the verdict holds. A job that failed, timed
out or stopped mid-sweep is not a measurement: its partial table would otherwise pass on the
sizes it did reach."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reclaunch.errors import ProviderError
from reclaunch.runtime.kube import job_state
from reclaunch.runtime.states import JOB_STATES

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan
    from reclaunch.runtime.journal import ClusterRecord


def run_preflight(plan: "Plan", kube: Any, env: Any, rec: "ClusterRecord", *,
                  force: bool = False, timeout_s: float = 1800,
                  max_bytes: str = "8G") -> dict[str, Any]:
    from reclaunch.manifests import preflight as pf
    from reclaunch.manifests.job import fabric_profile, preflight_job

    profile = fabric_profile(plan)     # resolved for the instance (EFA device count per family)
    job = preflight_job(plan, max_bytes=max_bytes)
    name = job["metadata"]["name"]
    kube.apply(job)
    deadline = env.clock() + timeout_s
    state = "Created"
    while not JOB_STATES[state].terminal and env.clock() < deadline:
        env.sleep(10)
        state = job_state(kube.job(rec.namespace, name))
    pods = kube.pods(rec.namespace, name)
    text = "\n".join(kube.logs(rec.namespace, pods[0]["name"])) if pods else ""
    kube.delete(job["apiVersion"], job["kind"], name, rec.namespace)
    problems = [] if state == "Succeeded" else [
        f"the preflight job ended {state}" if JOB_STATES[state].terminal else
        f"the preflight job did not finish in {timeout_s:.0f} s (last state {state})"]
    try:
        result = pf.parse_nccl_tests(text)
    except pf.NcclLogError as exc:
        raise ProviderError(f"NCCL preflight failed: {'; '.join(problems + [exc.message])}",
                            hint=exc.hint) from None
    problems += pf.sweep_problems(result, max_bytes=max_bytes)
    v = pf.verdict(result, pf.parse_nccl_debug(text), profile, plan.nodes)
    msg = f"busbw {v.busbw:.1f} GB/s (threshold {v.threshold:.1f})"
    cause = "; ".join(problems + ([v.cause] if v.cause else []))
    ok = v.ok and not problems
    if not ok and not force:
        raise ProviderError(f"NCCL preflight failed: {cause}; {msg}",
                            hint=v.fix or "see the preflight pods' logs (kubectl logs)")
    return {"message": msg if ok else f"{msg}; ignored with --force: {cause}",
            "busbw": v.busbw, "ok": ok}
