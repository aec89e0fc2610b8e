"""Policy checks over a preview (the resource dicts `reclaunch.runtime.preview.preview` returns), in
the spirit of Pulumi CrossGuard: each finding is a line a reviewer would block a deploy on.

    findings = check(plan, resources)      # [] when every policy holds

Pure: reads only the recorded inputs, so it runs under mocks: the tests run it over every
example on every cloud, and `reclaunch preview` runs it on the user's spec (its findings are
`policy` in `preview --json`, and any finding makes preview exit 1).

What a resource must look like is its cloud's: each stack declares its rule for every policy
of DECLARED (StackFacts.policy_rules; stacks/<cloud>/policy.py). A stack that leaves one out
fails loudly (StackContractError), so a new cloud cannot pass a policy by having no rule for
it; one that has nothing to check says so with a rule that returns [] and the reason. The
policies that read no cloud's resource types (the engine's rules, tags) run here, over every
stack, and the helpers below hold what the clouds' rules share.

- bucket-private: every bucket the stack creates blocks public access, encrypts, and aborts
  torn multipart uploads.
- bucket-keeps-checkpoints: no lifecycle rule deletes checkpoints unless the spec asked for it
  (job.checkpoint.expire_days); a paused run must find its checkpoints when it resumes.
- owned-storage: whatever `up` did not create, `down` never deletes or rewrites. A bucket
  resource only for the bucket the spec asks the stack to create (storage.kind: bucket); on a
  bucket the user named, only additive grants and no bucket-wide settings (ours would replace
  the user's, and destroy would delete it); nothing imported unless retained on delete.
- bucket-scoped: no identity gets object-store rights beyond named buckets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from reclaunch.tags import CLUSTER_TAG, MANAGED_TAG

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

Rule = Callable[["Plan", list[dict]], list[str]]
WORLD = ("0.0.0.0/0", "::/0", "*", "Internet", "Any")
# Every stack declares a rule for each of these, in this order.
DECLARED = ("control-plane-private", "no-world-ssh", "volumes-encrypted", "scoped-iam",
            "gpu-pools-pinned", "bucket-private", "bucket-scoped", "bucket-keeps-checkpoints",
            "owned-storage")


def get(d: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(d, dict) or part not in d:
            return None
        d = d[part]
    return d


def world_open(cidrs: list[str], plan: "Plan") -> bool:
    """World-open and not asked for in `security.api_cidrs`."""
    asked = set(plan.spec.security.api_cidrs)
    return any(x in WORLD and x not in asked for x in cidrs)


def ssh_rule_open(rule: dict) -> bool:
    """A firewall rule (from/to port, protocol, CIDRs) that lets the world reach port 22."""
    lo, hi = rule.get("fromPort", 0), rule.get("toPort", 65535)
    proto = str(rule.get("protocol", "-1"))
    covers_22 = proto in ("-1", "tcp", "6", "all") and (lo <= 22 <= hi or (lo, hi) == (0, 0))
    cidrs = (rule.get("cidrBlocks") or []) + (rule.get("ipv6CidrBlocks") or [])
    return covers_22 and any(c in WORLD for c in cidrs)


def statements(doc: Any) -> list[dict]:
    """An IAM policy document's statements (a JSON string or a dict); [] when unreadable."""
    import json

    if isinstance(doc, str):
        try:
            doc = json.loads(doc)
        except ValueError:
            return []
    st = (doc or {}).get("Statement") or []
    return st if isinstance(st, list) else [st]


def tagged(plan: "Plan", rs: list[dict]) -> list[str]:
    out = []
    for r in rs:
        if r["taggable"] and (r["tags"].get(CLUSTER_TAG) != plan.name
                              or r["tags"].get(MANAGED_TAG) != "true"):
            out.append(f"{r['name']} ({r['type']}): missing {CLUSTER_TAG}/{MANAGED_TAG} tags")
    return out


def engine_rules(plan: "Plan", rs: list[dict]) -> list[str]:
    """What preview's checks find the real engine or the cloud's API would refuse and the
    mocks accept (duplicate URNs, enum values the SDK's API version lacks, the names, values
    and field rules of stacks/<cloud>/api_rules.py): preview records them per resource
    (reclaunch/runtime/preview.py, `engine`, whose docstring says what is covered)."""
    return [f"{r['name']} ({r['type']}): {p}" for r in rs for p in r.get("engine") or ()]


# The policies that hold for every stack alike (read no cloud's resource types).
POLICIES: dict[str, Rule] = {"engine-rules": engine_rules, "tagged": tagged}


def keeps_checkpoints(plan: "Plan", rs: list[dict], expiring: Callable[[dict], bool]) -> list[str]:
    """bucket-keeps-checkpoints, given the cloud's test for a rule that deletes objects by age."""
    if plan.spec.job.checkpoint.expire_days:
        return []
    return [f"{r['name']}: a lifecycle rule deletes checkpoints job.checkpoint.expire_days "
            "did not ask to expire" for r in rs if expiring(r)]


def owns_only(plan: "Plan", rs: list[dict], bucket_types: tuple[str, ...],
                  foreign: Callable[[dict, set[str]], list[str]] = lambda r, named: []) -> list[str]:
    """owned-storage, given the cloud's bucket resource types and what else it may not create
    on a bucket the user named (`foreign(resource, named buckets)` -> findings)."""
    from stacks import identity

    made = identity.created(plan)
    mine = {made.bucket} if made is not None else set()
    named = {g.url.bucket for g in identity.grants(plan)} - mine
    out = []
    for r in rs:
        i, t, n = r["inputs"], r["type"], r["name"]
        if r.get("import_id") and not r.get("retain_on_delete"):
            out.append(f"{n}: imported ({r['import_id']}) and not retained on delete: `down` "
                       "would delete what `up` did not create")
        if t in bucket_types and str(i.get("bucket") or i.get("name")) not in mine:
            out.append(f"{n}: a bucket resource for {i.get('bucket') or i.get('name')}, which "
                       "the stack does not create (storage.kind: bucket only)")
        out += foreign(r, named)
    return out


def rules_of(module: Any) -> dict[str, Rule]:
    """A stack's policy module's rule for each DECLARED policy: its function of that name
    (control-plane-private: control_plane_private). One it lacks is left out; check() says so."""
    return {n: getattr(module, n.replace("-", "_")) for n in DECLARED
            if callable(getattr(module, n.replace("-", "_"), None))}


def rules(plan: "Plan") -> dict[str, Rule]:
    """The plan's stack's rule for every DECLARED policy ({} for a target with no stack:
    nothing is created). StackContractError when the stack leaves one out."""
    import stacks

    pkg = stacks.facts(plan.cloud)
    if pkg is None:
        return {}
    declared = dict(pkg.policy_rules())
    missing = [n for n in DECLARED if n not in declared]
    if missing:
        raise stacks.StackContractError(f"{pkg.__name__} declares no rule for polic"
                                        f"{'ies' if len(missing) > 1 else 'y'} {', '.join(missing)}")
    return {**{n: declared[n] for n in DECLARED}, **declared}


def check(plan: "Plan", resources: list[dict]) -> list[str]:
    """Every finding, `policy: message`; [] when all hold."""
    every = {**POLICIES, **rules(plan)}
    return [f"{name}: {msg}" for name, fn in every.items() for msg in fn(plan, resources)]
