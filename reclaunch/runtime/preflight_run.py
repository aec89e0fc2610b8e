"""`up --preflight`: run the NCCL all-reduce job where training will run, wait for it, read
its log, and refuse to start training on a fabric that does not deliver (unless --force)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reclaunch.errors import ProviderError
from reclaunch.runtime.kube import job_state
from reclaunch.runtime.states import JOB_STATES

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan
    from reclaunch.runtime.journal import ClusterRecord



def run_preflight(plan: "Plan", kube: Any, env: Any, rec: "ClusterRecord", *,
                  force: bool = False, timeout_s: float = 1800) -> dict[str, Any]:
    from reclaunch.manifests import preflight as pf
    from reclaunch.manifests.job import fabric_profile, preflight_job

    profile = fabric_profile(plan)     # resolved for the instance (EFA device count per family)
    job = preflight_job(plan)
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
    result = pf.parse_nccl_tests(text)
    v = pf.verdict(result, pf.parse_nccl_debug(text), profile, plan.nodes)
    msg = f"busbw {v.busbw:.1f} GB/s (threshold {v.threshold:.1f})"
    if not v.ok and not force:
        raise ProviderError(f"NCCL preflight failed: {v.cause}; {msg}", hint=v.fix)
    return {"message": msg if v.ok else f"{msg}; ignored with --force: {v.cause}",
            "busbw": v.busbw, "ok": v.ok}
