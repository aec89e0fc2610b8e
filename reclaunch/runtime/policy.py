"""The teardown policy: one pure function of (job state, settings, clock, spend), used by every
target (the Kubernetes watch loop and the local supervisor), so every branch is testable with an
injected clock and no cluster."""

from __future__ import annotations

from typing import TYPE_CHECKING

from reclaunch.runtime.states import ACTIVE_STATES, JOB_STATES, State

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.runtime.journal import ClusterRecord


def after_job(state: str, *, when: str, keep_on_failure: bool) -> tuple[str, str] | None:
    """What to do once the job reached `state`: ("keep" | "destroy", reason), or None while the
    job is not finished (or failed under on_success: the idle guard decides)."""
    info = JOB_STATES.get(state, JOB_STATES["Unknown"])
    if not info.terminal:
        return None
    if when == "never":
        return "keep", f"job {state}; teardown.when is never"
    if info.ok:
        return "destroy", "job succeeded"
    if info.ok is None:
        return "destroy", f"job {state.lower()}"
    if keep_on_failure:
        return "keep", "job failed; kept for debugging (teardown.keep_on_failure)"
    if when == "on_completion":
        return "destroy", "job failed; teardown.when is on_completion"
    return None


def decide(state: str, rec: "ClusterRecord", *, now: float, idle_since: float | None,
           spend: float) -> tuple[str, str]:
    """-> (action, reason); action is "wait", "keep" (stop watching, leave it up),
    "destroy", or "stop" (stop the job, then destroy).

    - spend past budget.max_usd: stop, whatever the teardown setting (it is a hard cap);
    - success: destroy unless teardown.when is never;
    - failure: on_completion destroys; keep_on_failure keeps; on_success leaves the cluster up
      for debugging until the idle guard fires;
    - no running job for idle_minutes: destroy (unless teardown.when is never). Unknown (the
      API did not answer) is not "no running job": an unobserved job never destroys.
    """
    if rec.max_usd is not None and spend >= rec.max_usd:
        return "stop", f"spend ${spend:,.2f} reached budget.max_usd ${rec.max_usd:,.2f}"
    action = after_job(state, when=rec.teardown_when, keep_on_failure=rec.keep_on_failure)
    if action is not None:
        return action
    if rec.teardown_when == "never":    # not even the idle guard
        return "wait", ""
    if state not in ACTIVE_STATES and state != State.UNKNOWN and idle_since is not None \
            and now - idle_since >= rec.idle_minutes * 60:
        return "destroy", f"no running job for {rec.idle_minutes:g} min (teardown.idle_minutes)"
    return "wait", ""


class IdleClock:
    """Since when the job has been seen not running, counting observed time only: an Unknown
    poll (the API did not answer) neither starts the clock nor lets it run, so an unreachable
    API for hours is not hours of idleness. The gap from the last observation across an
    unreachable spell is left out too: nobody saw what the job did then."""

    def __init__(self) -> None:
        self.idle_s = 0.0
        self.last: float | None = None     # the last poll that saw the job not running

    def since(self, state: str, now: float) -> float | None:
        """-> the `idle_since` for decide(), or None while the job runs or is unobserved."""
        if state in ACTIVE_STATES:
            self.idle_s, self.last = 0.0, None
            return None
        if state == State.UNKNOWN:
            self.last = None
            return None
        if self.last is not None:
            self.idle_s += now - self.last
        self.last = now
        return now - self.idle_s
