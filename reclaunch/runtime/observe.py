"""What `diagnose` and `status` need from the outside: every rank's log lines (through the
cluster's provider, handed in by the CLI: cloud: local reads its node logs, Kubernetes clouds
the pods' logs API) and the plan (re-made from the spec saved in the journal).

The analysis itself is pure (runtime.metrics, runtime.diagnose, runtime.findings).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Iterator

from reclaunch.errors import ReclaunchError

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan
    from reclaunch.runtime.diagnose import Diagnosis, PlanFacts
    from reclaunch.runtime.metrics import Measured


class NoMetrics(ReclaunchError):
    """The job has printed no RECLAUNCH_METRICS line yet (exit 1: try again later)."""

    exit_code = 1


def plan_for(name: str) -> "Plan | None":
    """The cluster's plan, re-made from the spec its journal record saved (text first, then
    the file it came from) with what `plan` reads besides the spec (this host's calibration,
    measured runs of the shape, this run's own records left out: a run is not compared with
    itself). None when neither is there: diagnose then shows measured only."""
    from pathlib import Path

    from reclaunch.errors import SpecError
    from reclaunch.planner import make_plan
    from reclaunch.runtime.journal import Journal
    from reclaunch.runtime.measurements import plan_context
    from reclaunch.spec import load_spec, parse_spec

    try:
        rec = Journal(name).record()   # a damaged journal: measured only, no plan
        if rec.spec_text:
            spec = parse_spec(rec.spec_text, rec.spec_path or f"{name}.yaml")
        elif rec.spec_path and Path(rec.spec_path).is_file():
            spec = load_spec(rec.spec_path)
        else:
            return None
        if spec.name != name:   # the file was edited into another cluster since `up`
            return None
        ctx = plan_context(spec)
        ctx = ctx._replace(measurements=tuple(m for m in ctx.measurements if m.run != name))
        return make_plan(spec, context=ctx)
    except (SpecError, ReclaunchError, OSError):
        return None


def printed_for(name: str) -> dict[str, float]:
    """The figures `up` printed and priced for this cluster (its journal record): what status
    and diagnose compare a run with. {} when the record has none (an older journal)."""
    import math

    from reclaunch.runtime.journal import Journal

    try:
        extra = Journal(name).record().extra or {}
    except (ReclaunchError, OSError, ValueError, TypeError):
        return {}
    out = {}
    for k in ("planned_samples_per_s", "planned_usd", "planned_hours"):
        v = extra.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0:
            out[k] = float(v)
    return out


def facts_for(plan: "Plan | None", printed: dict[str, float] | None = None) -> "PlanFacts | None":
    """PlanFacts of the re-made plan, with the figures `up` printed where the journal has them."""
    if plan is None:
        return None
    from dataclasses import replace

    from reclaunch.manifests.job import fabric_profile
    from reclaunch.runtime.budget import usd_per_hour
    from reclaunch.runtime.diagnose import facts_from_plan

    try:
        profile = fabric_profile(plan)
    except ReclaunchError:
        profile = None
    facts = facts_from_plan(plan, usd_per_hour(plan), profile)
    p = printed or {}
    if "planned_samples_per_s" in p:
        sps = p["planned_samples_per_s"]
        facts = replace(facts, samples_per_s=sps,   # the step as printed: the same batch at that rate
                        step_s=facts.step_s * facts.samples_per_s / sps if facts.samples_per_s else facts.step_s,
                        planned_usd=p.get("planned_usd", facts.planned_usd),
                        duration_hours=p.get("planned_hours", facts.duration_hours))
    return facts


def pod_lines(name: str, env: Any, *, tail_lines: int | None = None) -> Iterator[str]:
    """Every pod's log lines through the Kubernetes logs API (`env` is a lifecycle.Env), one pod
    after the other: a pod carries its node's ranks, and each RECLAUNCH_METRICS line names its
    rank, so the order between pods does not matter."""
    from reclaunch.errors import ProviderError
    from reclaunch.runtime.journal import Journal

    journal = Journal(name, clock=env.clock)
    rec = journal.record()
    if not journal.done("provision"):   # nothing to ask (and no Pulumi call for it)
        raise ProviderError(f"{name} has no provisioned cluster to read logs from",
                            hint=f"`reclaunch status {name}` says why")
    kube = env.kube_for(env.infra.outputs(name))
    for pod in kube.pods(rec.namespace, rec.job_name):
        yield from kube.logs(rec.namespace, pod["name"], tail_lines=tail_lines)


def record_cloud_job(rec, env) -> Any:
    """At the end of a watched cloud job: every pod's log lines -> its measurement record
    (runtime/measurements.py). Never raises."""
    try:
        from reclaunch.runtime.measurements import record_run

        return record_run((rec.extra or {}).get("measurement_key"), pod_lines(rec.name, env), rec.name)
    except Exception:  # noqa: BLE001 - logs gone with the cluster, an API error: no record
        return None


def job_lines(provider: Any, name: str) -> Iterator[str]:
    """Every rank's log lines (the Provider protocol's `all_logs`: all pods / nodes)."""
    return iter(provider.all_logs(name))


def measure_lines(lines: Iterable[str]) -> "Measured | None":
    from reclaunch.runtime.diagnose import load_rules
    from reclaunch.runtime.metrics import measure

    return measure(lines, window_size=int(load_rules().get("window_intervals", 5)))


def diagnose_cluster(name: str, provider: Any) -> "Diagnosis":
    """`reclaunch diagnose NAME`: read, measure, compare, name the findings."""
    from reclaunch.runtime.diagnose import diagnose

    m = measure_lines(job_lines(provider, name))
    if m is None and (failed := failed_before_metrics(provider, name)):
        raise NoMetrics(failed, hint=f"`reclaunch logs {name}` shows the rest; fix it and "
                        "`reclaunch up FILE` again")
    if m is None:
        raise NoMetrics(f"{name}: no RECLAUNCH_METRICS lines in its logs yet",
                        hint="the trainer prints one per logging interval and rank; wait for the "
                             f"first interval (`reclaunch logs {name} -f`), or check that the job "
                             "runs a trainer that reports them (examples/trainer)")
    return diagnose(name, m, facts_for(plan_for(name), printed_for(name)))


def failed_before_metrics(provider: Any, name: str) -> str | None:
    """A job that failed before its first interval: its error, not "wait for metrics"."""
    try:
        st = provider.status(name)
    except (ReclaunchError, OSError):
        return None
    if getattr(st, "state", None) != "Failed":
        return None
    fail = (getattr(st, "details", None) or {}).get("failure") or {}
    tail = [ln.strip() for ln in fail.get("last_lines") or [] if ln.strip()][-3:]
    return (f"{name} failed before reporting metrics: {st.message or 'no message'}"
            + (f"; its last lines: {' | '.join(tail)}" if tail else ""))


def measured_brief(name: str, provider: Any) -> dict[str, Any] | None:
    """For `status`: measured samples/s and the projection beside the plan, or None when the
    job has reported nothing. Never raises: status must not fail over a diagnosis."""
    from reclaunch.runtime.diagnose import project

    try:   # rank 0 alone: it reports the cluster's samples/s, and status must stay cheap
        recent = getattr(provider, "recent_logs", None)   # the newest part only, bounded
        m = measure_lines(recent(name, rank=0) if recent else provider.logs(name, rank=0))
        if m is None:
            return None
        facts = facts_for(plan_for(name), printed_for(name))
        out: dict[str, Any] = {"samples_per_s": m.samples_per_s, "step": m.step,
                               "finished": m.finished}
        if facts is not None:
            proj = project(facts, m.samples_per_s, m.step, m.world_size)
            out.update(planned_samples_per_s=facts.samples_per_s, planned_usd=facts.planned_usd,
                       planned_hours=facts.duration_hours,
                       projected_usd=proj.usd_total if proj else None,
                       projected_hours=proj.hours_total if proj else None)
        return out
    except (ReclaunchError, OSError, ArithmeticError, ValueError, TypeError, RecursionError):
        return None   # the job's output or a damaged file: no measured column, never a crash


def master_guard(rec: Any, kube: Any, spend: float) -> tuple[str, str] | None:
    """The budget guard at the measured rate: rank 0's newest RECLAUNCH_METRICS lines (the
    master pod's log tail) -> runtime.budget.measured_guard. None until the rate is trusted
    (the rule table's budget.min_intervals) or when the logs cannot be read."""
    from reclaunch.runtime.budget import measured_guard, measured_projection
    from reclaunch.runtime.diagnose import load_rules

    try:
        pods = [p for p in kube.pods(rec.namespace, rec.job_name) if p.get("rank") == 0]
        if not pods:
            return None
        m = measure_lines(kube.logs(rec.namespace, pods[0]["name"], tail_lines=2000))
    except ReclaunchError:
        return None
    lead = next((r for r in m.ranks if r.rank == 0), None) if m else None
    if lead is None or lead.intervals < int(load_rules()["budget"]["min_intervals"]):
        return None
    return measured_guard(rec, spend, measured_projection(rec, spend, m.samples_per_s, m.step))

