"""`reclaunch check [FILE]`: a preflight of this machine, like `sky check`. Reads only: the
Pulumi CLI on PATH, the SDK extras installed, credentials each cloud's SDK would find (no
network call for that), and, for a spec, the GPU quota of its instance in its region where the
cloud's quota API can tell (AWS Service Quotas), plus what a person must do before `up`.

Each answer is ok (True), missing (False) or cannot tell (None, with how to check by hand).
What each cloud answers is its own: the credential check, the quota check and what else a plan
needs are declared in its CloudSpec (providers/<cloud>/provider.py), and `up` asks the very
same credential check before it creates anything (kubecloud.KubeCloudProvider.check_ready), as
SkyPilot's clouds each answer `check_credentials()`. Nothing here names a cloud.
"""

from __future__ import annotations

import importlib.util
import shutil
from dataclasses import dataclass
from typing import Any, Callable

from reclaunch import clouds
from reclaunch.providers.kubecloud import Answer


@dataclass(frozen=True)
class Check:
    topic: str        # "pulumi", "extra aws", "credentials aws", "quota", "needs a person"
    ok: bool | None   # None: cannot tell from here
    detail: str
    fix: str | None = None
    needed: bool = True   # False: informational (another cloud than the spec's)


def _has(module: str, find_spec: Callable[[str], Any]) -> bool:
    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):   # a parent package missing
        return False


def extras(find_spec: Callable[[str], Any] = importlib.util.find_spec,
           want: str | None = None) -> list[Check]:
    """Each cloud's pip extra (its facts: pip_extra and the modules it brings)."""
    out = []
    for f in clouds.all_facts():
        if not f.pip_extra:
            continue
        missing = [m for m in f.sdk_modules if not _has(m, find_spec)]
        out.append(Check(f"extra {f.pip_extra}", not missing,
                         "installed" if not missing else f"missing {', '.join(missing)}",
                         None if not missing else f"pip install 'reclaunch[{f.pip_extra}]'",
                         needed=want == f.name))
    return out


def _asked(topic: str, question: Callable[[], Answer]) -> Check:
    """One cloud's answer as a row; a check that breaks is "cannot tell", never a crash."""
    try:
        got = question()
    except Exception as exc:  # noqa: BLE001 - a cloud's (or a plugin's) check failing is an answer
        return Check(topic, None, f"cannot tell ({type(exc).__name__}: {str(exc)[:120]})")
    return Check(topic, got.ok, got.detail, got.fix)


def credentials(cloud: str) -> Check:
    """The cloud's own credential check (CloudSpec.credentials), the one `up` asks."""
    from reclaunch.providers import cloud_spec

    return _asked(f"credentials {cloud}", lambda: cloud_spec(cloud).credentials())


def quota(plan, client: Any = None) -> Check:
    """The GPU quota for the plan, where the cloud's CloudSpec can ask (`client`: the SDK
    client to ask, for tests); otherwise how to check it by hand."""
    f = clouds.get(plan.cloud)
    if f.runs_here:
        return Check("quota", True, f"cloud: {plan.cloud} needs no quota")
    if f.kind == "own":
        return Check("quota", True, f"a cluster you bring: the nodes `plan` read in {plan.region}")
    from reclaunch.providers import cloud_spec

    spec = cloud_spec(plan.cloud)
    if spec.quota is not None:
        return _asked("quota", lambda: spec.quota(plan, client))
    by_hand = spec.quota_by_hand.format(region=plan.region)
    return Check("quota", None, f"cannot tell: {plan.cloud} has no quota API reclaunch reads",
                 f"check by hand: {by_hand}" if by_hand else None)


def run_checks(plan=None, *, which=shutil.which, find_spec=importlib.util.find_spec,
               quota_client: Any = None) -> list[Check]:
    from reclaunch.providers import cloud_spec

    cloud = plan.cloud if plan is not None else None
    kind = clouds.get(cloud).kind if cloud is not None else None
    local = kind in ("here", "own")   # no stack: no Pulumi, no cloud login
    pulumi = which("pulumi")
    out = [Check("pulumi", bool(pulumi), pulumi or "the Pulumi CLI is not on PATH",
                 None if pulumi else "https://www.pulumi.com/docs/install/",
                 needed=plan is not None and not local)]
    out += extras(find_spec, cloud)
    for c in clouds.kube_names() + clouds.own_names():
        got = credentials(c)
        out.append(Check(got.topic, got.ok, got.detail, got.fix, needed=cloud == c))
    if plan is not None:
        out.append(quota(plan, quota_client))
        if kind == "own" and cloud_spec(cloud).readiness is not None:
            topic, question = cloud_spec(cloud).readiness
            out.append(_asked(topic, lambda: question(plan)))
        if not local:
            from reclaunch.providers.kubecloud import _prerequisites

            out += [Check("needs a person", None, line) for line in _prerequisites(plan)]
    return out


def exit_code(checks: list[Check]) -> int:
    """1 when something the spec needs is missing; "cannot tell" is not a failure. Without a
    spec nothing is needed: the report is information."""
    return 1 if any(c.ok is False and c.needed for c in checks) else 0
