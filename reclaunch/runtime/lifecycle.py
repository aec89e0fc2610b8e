"""The cluster lifecycle: up, watch-until-done, teardown, down, status, logs.

    budget -> show cost + resources -> confirm -> provision (capacity fallback) -> apply
    -> nodes (real against modelled) -> preflight -> start -> watch -> teardown -> verify

Every step is journaled (start, then ok/failed) so a crash anywhere can be resumed by running
`up` again (done steps are skipped, the stack and server-side apply are idempotent, pending
Pulumi operations are cleared first) or cleaned by `down`. Everything outside this module is
injected through `Env` (infra, kube, capacity policy, verify, clock), so tests drive the whole
state machine with fakes. Cloud names appear nowhere here: that is `providers/`.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Callable

from reclaunch.runtime.budget import budget_problem, plan_extra, spend_so_far, usd_per_hour
from reclaunch.runtime.measurements import measurement_key
from reclaunch.runtime.policy import IdleClock, decide
from reclaunch.errors import PlanError, ProviderError, UsageError
from reclaunch.runtime.env import Env, Pacing  # noqa: F401  (tests and providers build them here)
from reclaunch.runtime.infra import InfraError
from reclaunch.runtime.journal import ClusterRecord, Journal
from reclaunch.manifests.launch import Launch, build_launch
from reclaunch.runtime.kube import job_state
from reclaunch.runtime.states import JobStatus
from reclaunch.runtime.status import _status_obj, logs, status  # noqa: F401  (the verbs read them here)
from reclaunch.runtime.variants import variant  # noqa: F401  (up's fallback; kubecloud)
from reclaunch.spec.buckets import created_bucket
from reclaunch.tags import CLUSTER_TAG, PYTORCHJOB_API
from reclaunch.ui.lifecycle import engine_progress, show_fallback

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan


# ---- helpers ---------------------------------------------------------------------------------

def record_for(plan: "Plan", *, backend: str | None = None, spec_path: str | None = None,
               spec_text: str | None = None, launch: "Launch | None" = None) -> ClusterRecord:
    s = plan.spec
    _, kind, job_name, namespace = (launch or build_launch(plan)).job_ref
    return ClusterRecord(
        name=plan.name, cloud=plan.cloud, region=plan.region,
        namespace=namespace, job_name=job_name, job_kind=kind, nodes=plan.nodes,
        usd_per_hour=usd_per_hour(plan), spot=plan.spot,
        teardown_when=s.teardown.when, keep_on_failure=s.teardown.keep_on_failure,
        idle_minutes=s.teardown.idle_minutes, max_usd=s.budget.max_usd, backend=backend,
        spec_path=spec_path, spec_text=spec_text,
        extra={**plan_extra(plan), "measurement_key": measurement_key(plan), "bucket": created_bucket(s)})


class _Step:
    """Journal a step: start, then ok (and the test hook) or failed."""

    def __init__(self, env: Env, journal: Journal, name: str, **data: Any):
        self.env, self.journal, self.name, self.data = env, journal, name, data

    def __enter__(self) -> dict[str, Any]:
        self.journal.write(self.name, "start", **self.data)
        self.result: dict[str, Any] = {}
        return self.result

    def __exit__(self, et, exc, tb) -> None:
        if exc is None:
            self.journal.write(self.name, "ok", **{**self.data, **self.result})
            if self.env.after_step:
                self.env.after_step(self.name)
        elif isinstance(exc, (Exception, KeyboardInterrupt)):
            why = "interrupted" if isinstance(exc, KeyboardInterrupt) else str(exc)
            self.journal.write(self.name, "failed", **{**self.data, "error": why[:500]})
        # Anything else (SystemExit from a signal, a kill) leaves the step open: `interrupted`.


def _confirm(env: Env, question: str, yes: bool) -> bool:
    if yes:
        return True
    if env.confirm is not None:
        return env.confirm(question)
    if not env.is_tty():
        raise UsageError(f"{question.rstrip('?')}: refusing without confirmation on a "
                         "non-interactive terminal", hint="pass --yes")
    from reclaunch.ui.console import ask
    return ask(question, env.out())


# ---- up --------------------------------------------------------------------------------------

def up(plan: "Plan", env: Env, *, yes: bool = False, force: bool = False,
       preflight: bool = False, watch: bool = False,
       record: ClusterRecord | dict[str, Any] | None = None,
       after_start: Callable[[ClusterRecord], None] | None = None) -> "JobStatus":
    """Provision and start; with watch, follow the job to its end and apply the teardown policy.
    Call `env.infra.check()` and credential checks before this: nothing here is free."""
    problem = budget_problem(plan)
    from reclaunch.ui.lifecycle import show_before_up
    show_before_up(plan, env.out(), problem, env.prerequisites(plan))
    if problem and not force:
        raise PlanError(f"refusing to start: {problem}", hint="raise budget.max_usd or pass --force")
    # Before anything is created: a pod that fits no node pool would leave a cluster billing
    # by the hour with a job that never starts (no --force: it cannot start either way).
    # The launch is rendered once for the plan as planned (placement check, journal record,
    # apply), and again only if provisioning changed the plan (a capacity fallback).
    launch = build_launch(plan)
    from reclaunch.manifests.placement import for_plan, refusal
    unplaced = refusal(env.schedule(plan) if env.schedule else for_plan(plan, launch=launch))
    if unplaced:
        raise PlanError(f"refusing to start: not every pod can be scheduled: {unplaced}",
                        hint="`reclaunch preview` lists each pod, its pool and why")
    made = created_bucket(plan.spec)   # named: `down` deletes it
    if not _confirm(env, f"Create {plan.name}{f' and the bucket {made}' if made else ''} and start training?", yes):
        return _status_obj(plan.name, plan.cloud, "Pending", "not confirmed; nothing created")

    journal = Journal(plan.name, clock=env.clock)
    # record: the journal record, or what it says besides the plan (backend, spec_path, spec_text)
    rec = record if isinstance(record, ClusterRecord) else record_for(plan, launch=launch, **(record or {}))
    resumed = journal.interrupted()
    journal.write("up", "start", resumed_after=resumed)
    journal.save_record(rec)
    recover(rec, env, journal)

    planned = plan
    plan, outputs = provision(plan, env, journal)
    if plan is not planned:   # spot -> on-demand fallback: no elastic policy, on-demand deadline
        launch = build_launch(plan)
    if plan.spot != rec.spot:   # on-demand fallback: spend and status use the real price
        rec = dataclasses.replace(rec, spot=plan.spot, usd_per_hour=usd_per_hour(plan))
        journal.save_record(rec)
    kube = env.kube_for(outputs)
    if not journal.done("apply"):
        with _Step(env, journal, "apply") as r:
            from reclaunch.runtime.workdir import publish
            publish(plan, into=r)   # job.workdir into its bucket before any pod fetches it
            r["applied"] = kube.apply_all(list(launch.objects))
    # Only before the job: once it runs, its own pods fill the nodes the check would judge.
    if env.check_nodes and not journal.done("nodes") and not journal.done("start"):
        with _Step(env, journal, "nodes") as r:
            r.update(env.check_nodes(plan, kube, launch, force, env))
    if preflight and not journal.done("preflight"):
        with _Step(env, journal, "preflight") as r:
            from reclaunch.runtime.preflight_run import run_preflight
            r.update(run_preflight(plan, kube, env, rec, force=force))
    if launch.job is not None and not journal.done("start"):
        with _Step(env, journal, "start", job=f"{rec.namespace}/{rec.job_name}") as r:
            if kube.job(rec.namespace, rec.job_name) is None:   # never start it twice
                kube.apply(launch.job)
                r["message"] = "job started"
            else:
                r["message"] = "job already there"
    if after_start:
        after_start(rec)
    if watch:
        return watch_job(rec, env)
    return status(rec.name, env)


def recover(rec: ClusterRecord, env: Env, journal: Journal) -> None:
    """Clear what an interrupted run left in the stack state before touching it again."""
    pending = env.infra.pending(rec.name)
    if pending:
        with _Step(env, journal, "recover", message=f"{len(pending)} pending operation(s)") as r:
            r["cleared"] = env.infra.clear_pending(rec.name)
            r["message"] = ("cleared pending operations; resources they were creating are "
                            "removed by `down` (tag sweep)")


def provision(plan: "Plan", env: Env, journal: Journal) -> tuple["Plan", dict[str, Any]]:
    """Bring the stack up, falling back on capacity/quota errors as the policy allows."""
    last = journal.last("provision")
    if journal.done("provision") and env.infra.exists(plan.name):
        if last.get("variant"):
            plan = variant(plan, last["variant"])
        return plan, env.infra.outputs(plan.name)
    tried: list[str] = []
    label = "as planned"
    while True:
        try:
            with _Step(env, journal, "provision", attempt=label) as r:
                outputs = env.infra.up(plan, on_event=engine_progress(env.out()))
                r["variant"] = {"zones": plan.zones, "spot": plan.spot}
                r["message"] = label
            return plan, outputs
        except InfraError as exc:
            kind = env.classify(exc.output)
            if kind is None:
                raise ProviderError(exc.message, hint=f"fix it and rerun `reclaunch up`, or "
                                    f"`reclaunch down {plan.name}` to remove what was created")
            tried.append(f"{label}: {kind}")
            nxt = env.fallback(plan, kind)
            if nxt is None:
                break
            label, plan = nxt
            journal.write("fallback", "info", kind=kind, message=f"{kind}; trying {label}")
            show_fallback(env.out(), kind, label)
    # A clear stop leaves nothing behind: what the failed attempts created is destroyed.
    rec = journal.record()
    teardown(rec, env, journal, reason=f"no capacity ({'; '.join(tried)})")
    raise ProviderError(f"no capacity for {plan.nodes} x {plan.instance_type} in {plan.region} "
                        f"(tried {'; '.join(tried)}); nothing was left running",
                        hint=env.stop_hint(kind))


# ---- watch, teardown, down --------------------------------------------------------------------

def watch_job(rec: ClusterRecord, env: Env, *, max_polls: int | None = None) -> "JobStatus":
    """Follow the job; apply teardown.when, keep_on_failure, idle_minutes, budget.max_usd."""
    journal = Journal(rec.name, clock=env.clock)
    journal.write("watch", "start")
    kube = env.kube_for(env.infra.outputs(rec.name))
    idle = IdleClock()
    seen, polls, warned, unreachable = None, 0, "", 0
    every = env.pacing.measure_every_polls
    from reclaunch.runtime.spot_fallback import SpotWatch, move_to_on_demand
    spot = SpotWatch(rec)    # a spot job its pools' fabrics pin to spot (runtime/spot_fallback.py)
    while True:
        if not journal.path.exists():   # home or journal removed: nothing left to record or watch
            gone = f"its journal {journal.path} is gone; stopped watching, nothing destroyed"
            env.out().print(f"{rec.name}: {gone}", markup=False)
            return _status_obj(rec.name, rec.cloud, "Unknown", gone)
        why = "no readable job object"
        try:
            state = job_state(kube.job(rec.namespace, rec.job_name, kind=rec.job_kind))
        except ProviderError as exc:
            state, why = "Unknown", str(exc)
        now = env.clock()
        idle_since = idle.since(state, now)   # Unknown: the idle clock neither starts nor runs
        if state != seen:
            journal.write("job", "info", state=state, message=f"job {state}")
            seen = state
        spend = spend_so_far(rec, journal, now)
        unreachable = unreachable + 1 if state == "Unknown" else 0
        if unreachable == env.pacing.api_lost_polls:   # once per unreachable spell
            cap = (f"budget.max_usd ${rec.max_usd:,.2f} still stops it" if rec.max_usd is not None
                   else "no budget.max_usd is set to stop it")
            lost = (f"API lost; cluster left up, spend continues (${spend:,.2f} so far): the job's "
                    f"state was unreadable for {unreachable} polls ({why[:200]}); {cap}; "
                    f"`reclaunch down {rec.name}` destroys it")
            journal.write("api", "info", message=lost)
            env.out().print(f"{rec.name}: {lost}", markup=False)
        action, reason = decide(state, rec, now=now, idle_since=idle_since, spend=spend)
        if action == "wait" and state == "Running" and polls % every == 0:
            from reclaunch.runtime.observe import master_guard
            guard = master_guard(rec, kube, spend)   # the measured rate, once there is one
            if guard and guard[0] == "stop":
                action, reason = guard
            elif guard and guard[1] != warned:
                journal.write("budget", "info", message=guard[1])
                warned = guard[1]
        polls += 1
        if action == "wait" and state != "Unknown" and spot.armed \
                and spot.due(kube.pods(rec.namespace, rec.job_name), now):
            od = variant(spot.plan, {"spot": False})
            rec, spot.armed = move_to_on_demand(rec, env, kube, journal, od), False
        if action == "wait" and (max_polls is None or polls < max_polls):
            env.sleep(env.poll_seconds)
            continue
        journal.write("watch", "ok", action=action, message=reason or "stopped watching")
        from reclaunch.runtime.observe import record_cloud_job
        record_cloud_job(rec, env)   # the job's measured samples/s, for the next `plan`
        if action == "stop":
            try:
                kube.delete(*_job_ref(rec))
                journal.write("stop", "ok", message=reason)
            except ProviderError as exc:
                journal.write("stop", "failed", error=str(exc))
        if action in ("stop", "destroy"):
            teardown(rec, env, journal, reason=reason)
        st = status(rec.name, env)
        st.state = state
        return st


def _job_ref(rec: ClusterRecord) -> tuple[str, str, str, str]:
    return (PYTORCHJOB_API, rec.job_kind, rec.job_name, rec.namespace)


def teardown(rec: ClusterRecord, env: Env, journal: Journal, *, reason: str,
             keep_storage: bool = False) -> None:
    """Destroy the stack, then prove nothing tagged for the cluster is left."""
    env.out().print(f"tearing down {rec.name}: {reason}")
    recover(rec, env, journal)
    shown, gone = engine_progress(env.out()), []

    def on_event(ev: dict) -> None:   # count what was destroyed, for the summary line below
        shown(ev)
        if ev.get("kind") == "resource" and ev.get("status") == "done" \
                and not str(ev.get("type", "")).startswith("pulumi:"):
            gone.append(ev)

    with _Step(env, journal, "destroy", message=reason, keep_storage=keep_storage):
        env.infra.destroy(rec.name, keep_storage=keep_storage, on_event=on_event)
    env.out().print(f"destroyed {len(gone)} resource(s) of {rec.name}"
                    + (" (storage kept)" if keep_storage else ""))
    with _Step(env, journal, "verify") as r:
        left = env.verify(rec, keep_storage)
        for _ in range(env.pacing.verify_attempts - 1):
            if not left:
                break
            env.sleep(env.pacing.verify_wait_s)
            left = env.verify(rec, keep_storage)
        if left:
            raise ProviderError(f"{len(left)} resource(s) tagged {CLUSTER_TAG}={rec.name} "
                                f"are still there: {', '.join(left[:5])}",
                                hint=f"reclaunch gc --cluster {rec.name} --yes")
        r["message"] = "nothing tagged for this cluster is left" + (
            " (storage kept)" if keep_storage else "")
    env.out().print(f"verified: {r['message']} (sweep of {CLUSTER_TAG}={rec.name} in "
                    f"{rec.cloud} {rec.region})")


def down(name: str, env: Env, *, yes: bool = False, keep_storage: bool = False) -> None:
    journal = Journal(name, clock=env.clock)
    rec = journal.record()
    made = None if keep_storage else (rec.extra or {}).get("bucket")
    if not _confirm(env, f"Destroy {name} ({rec.cloud} {rec.region})"
                         f"{' but keep its storage' if keep_storage else f' and the bucket {made}' if made else ''}?", yes):
        return
    journal.write("down", "start")
    teardown(rec, env, journal, reason="reclaunch down", keep_storage=keep_storage)
    journal.write("down", "ok")
