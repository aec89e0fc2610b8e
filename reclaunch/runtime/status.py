"""What a cluster is doing now: `status` (from the journal, then the job and its pods) and
`logs` (of a rank's pod). Read-only: nothing here changes the cluster or the journal."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

from reclaunch.errors import ProviderError, UsageError
from reclaunch.runtime.budget import spend_so_far
from reclaunch.runtime.journal import Journal
from reclaunch.runtime.kube import job_state
from reclaunch.runtime.states import JOB_STATES, JobStatus
from reclaunch.tags import CLUSTER_TAG

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.runtime.env import Env

def _status_obj(name: str, cloud: str, state: str, message: str = "", **kw: Any) -> JobStatus:
    return JobStatus(name=name, cloud=cloud, state=state, message=message, **kw)


def status(name: str, env: Env) -> "JobStatus":
    journal = Journal(name, clock=env.clock)
    rec = journal.record()
    now = env.clock()
    started = journal.first_time("start")
    details: dict[str, Any] = {"journal": journal.explain(), "interrupted": journal.interrupted(),
                               "region": rec.region, "usd_per_hour": rec.usd_per_hour}
    kw = dict(started_at=started, elapsed_seconds=(now - started) if started else None,
              spend_usd=spend_so_far(rec, journal, now), details=details)
    last_destroy = journal.last("destroy")
    if last_destroy and last_destroy["outcome"] == "ok" and not journal.done("provision"):
        return _status_obj(name, rec.cloud, "Missing", "cluster destroyed: "
                           + (last_destroy.get("message") or ""), **kw)
    if not journal.done("provision"):
        why, last = journal.interrupted(), journal.last("provision")
        what = (f"interrupted during {why}" if why else f"provisioning failed: {last['error']}"
                if last and last["outcome"] == "failed" else "not provisioned")
        return _status_obj(name, rec.cloud, "Pending", f"{what}; rerun `reclaunch up` to resume "
                           f"or `reclaunch down {name}` to remove what was created", **kw)
    try:
        kube = env.kube_for(env.infra.outputs(name))
        job = kube.job(rec.namespace, rec.job_name, kind=rec.job_kind)
        state = job_state(job)
        kw["pods"] = kube.pods(rec.namespace, rec.job_name)
        kw["nodes"] = kube.nodes(f"{CLUSTER_TAG}={name}") or kube.nodes()
    except ProviderError as exc:
        return _status_obj(name, rec.cloud, "Unknown", str(exc), **kw)
    details["capacity"] = _by_capacity(kw["nodes"])
    return _status_obj(name, rec.cloud, state, JOB_STATES[state].meaning, **kw)


def _by_capacity(nodes: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in nodes:
        out[n["capacity_type"]] = out.get(n["capacity_type"], 0) + 1
    return out


def logs(name: str, env: Env, *, rank: int | None = None, follow: bool = False) -> Iterator[str]:
    """Log lines of the master (rank 0) or of node rank `rank`."""
    journal = Journal(name, clock=env.clock)
    rec = journal.record()
    if not journal.done("provision"):   # nothing to ask for logs (and no Pulumi call for it)
        raise ProviderError(f"{name} has no provisioned cluster to read logs from",
                            hint=f"`reclaunch status {name}` says why")
    kube = env.kube_for(env.infra.outputs(name))
    pods = kube.pods(rec.namespace, rec.job_name)
    want = 0 if rank is None else rank
    pick = [p for p in pods if p["rank"] == want]
    if not pick:
        have = ", ".join(str(p["rank"]) for p in pods) or "none"
        raise UsageError(f"{name}: no pod with rank {want} (ranks: {have})")
    return kube.logs(rec.namespace, pick[0]["name"], follow=follow)
