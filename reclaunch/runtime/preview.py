"""`reclaunch preview`: run a cloud's Pulumi program in-process under `pulumi.runtime.set_mocks`.

No Pulumi CLI, no credentials, no network: every resource registration is answered by a
recorder that keeps what the program asked for. The result is a list of plain dicts (the
`--json` output) that users review and tests assert on:

    {"type", "name", "taggable": "tags"|"labels"|"resource_labels"|None, "tags",
     "key": {instance type, capacity, min/max, placement, ...}, "inputs",
     "urn", "parent", "provider", "depends_on", "deleted_with", "import_id",
     "retain_on_delete", "engine": [refusals found by the checks below]}

`engine` holds what these checks find, no more: duplicate URNs (EngineGraph), enum values the
installed SDK's own enums lack (runtime/sdk_enums.py: effective where the SDK has enums, i.e.
azure-native; pulumi_aws and pulumi_gcp type such fields as plain strings), and each cloud's
rules for the types and fields its stacks/<cloud>/api_rules.py lists (StackFacts.api_refusals:
physical names as given or as Pulumi's auto-naming makes them, listed values, a few rules
across fields). A refusal none of them knows still passes preview.
"""

from __future__ import annotations

import importlib
import inspect
import json
import threading
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable

from reclaunch import clouds
from reclaunch.errors import UsageError, require
from reclaunch.runtime.sdk_enums import violations

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

_TAG_FIELDS = ("tags", "labels", "resource_labels")
# Inputs worth a column: first match wins per heading.
_KEY_FIELDS = {
    "instance": ("instanceType", "instanceTypes", "vmSize", "machineType", "skuName",
                 "nodeConfig.machineType"),
    "capacity": ("capacityType", "scaleSetPriority", "instanceMarketOptions.marketType",
                 "nodeConfig.spot"),
    "count": ("desiredCapacity", "count", "initialNodeCount", "scalingConfig.desiredSize",
              "nodeCount"),
    "min": ("minSize", "minCount", "autoscaling.minNodeCount", "autoscaling.totalMinNodeCount",
            "scalingConfig.minSize"),
    "max": ("maxSize", "maxCount", "autoscaling.maxNodeCount", "autoscaling.totalMaxNodeCount",
            "scalingConfig.maxSize"),
    "placement": ("placement.groupName", "strategy", "placementPolicy.type",
                  "proximityPlacementGroupID", "groupPlacementPolicy.type"),
    "max_price": ("instanceMarketOptions.spotOptions.maxPrice", "spotMaxPrice"),
    "version": ("version", "kubernetesVersion", "minMasterVersion", "chart"),
    "zone": ("availabilityZone", "availabilityZoneId", "availabilityZones", "nodeLocations",
             "location"),
    "mtu": ("mtu",),
}


def _get(d: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(d, dict) or part not in d:
            return None
        d = d[part]
    return d




def sdk_package(typ: str) -> str | None:
    """The Python package of a type token's SDK (each cloud's facts, preview.sdk_packages)."""
    prefix = typ.split(":", 1)[0]
    return next((f.preview.sdk_packages[prefix] for f in clouds.all_facts()
                 if prefix in f.preview.sdk_packages), None)


@lru_cache(maxsize=512)
def tag_field(typ: str) -> str | None:
    """Which input of this resource type holds cloud tags/labels (None: not taggable)."""
    # Each cloud's facts name its Pulumi SDK packages (type prefix -> Python package) and the
    # types taggable through a nested input only (GKE node VMs are labelled via node_config).
    nested = {k: v for f in clouds.all_facts() for k, v in f.preview.nested_tags.items()}
    if typ in nested:
        return nested[typ]
    parts = typ.split(":")
    pkg = sdk_package(typ)
    if not pkg or len(parts) != 3:
        return None
    try:
        cls = getattr(importlib.import_module(f"{pkg}.{parts[1].split('/')[0]}"), parts[2])
        params = inspect.signature(cls._internal_init).parameters
    except (ImportError, AttributeError, ValueError, TypeError):
        return None
    return next((f for f in _TAG_FIELDS if f in params), None)


def _tags_of(inputs: dict) -> dict[str, str]:
    raw = (inputs.get("tags") or inputs.get("labels") or inputs.get("resourceLabels")
           or _get(inputs, "nodeConfig.resourceLabels") or {})
    if isinstance(raw, list):  # autoscaling.Group: [{key, value, propagateAtLaunch}]
        return {t.get("key"): t.get("value") for t in raw if isinstance(t, dict)}
    return dict(raw) if isinstance(raw, dict) else {}


@lru_cache(maxsize=64)
def refusal_rules(prefix: str, generation: int) -> Callable[[str, str, dict], list[str]] | None:
    """The check of what a cloud's API refuses (its stack's api_refusals) for the type prefix
    of its SDK (PreviewFacts.sdk_packages); None for a prefix no stack's cloud owns."""
    import stacks

    cloud = next((f.name for f in clouds.all_facts() if prefix in f.preview.sdk_packages), None)
    pkg = stacks.facts(cloud) if cloud else None
    return pkg.api_refusals if pkg else None


def _computed(typ: str, name: str, inputs: dict, plan: "Plan") -> dict:
    """Outputs the programs read back (endpoints, CA data, ids: the cloud's facts,
    preview.outputs); the rest echo the inputs."""
    extra = clouds.get(plan.cloud).preview.outputs(typ, name, inputs)
    return {"name": inputs.get("name", name), "arn": f"arn:mock:{typ}:{name}", **extra}


def _call(token: str, args: dict, plan: "Plan") -> dict:
    return clouds.get(plan.cloud).preview.calls(token, args, plan.region)


def preview(plan: "Plan", *, program: Callable[["Plan"], None], extra: str) -> list[dict[str, Any]]:
    """Run the stack `program(plan)` under mocks; one dict per resource, in registration order.

    The caller names the program and its pip extra (providers.preview_plan: the cloud's CloudSpec).
    Each dict also says where the resource sits in the engine's graph (urn, parent, provider,
    depends_on, import_id, retain_on_delete) and, under `engine`, what the checks of this
    module's docstring find that the mocks let through (stacks/policy.py turns those into
    findings, so `reclaunch preview` exits 1 on them).
    """
    pulumi = require("pulumi", extra)
    from pulumi.runtime.mocks import MockMonitor

    recorded: list[dict[str, Any]] = []
    graph = EngineGraph(project="reclaunch", stack=plan.name)
    local = threading.local()            # the registration being answered, per SDK thread

    class Recorder(pulumi.runtime.Mocks):
        def new_resource(self, args):
            if args.typ != ROOT_TYPE:
                recorded.append({"type": args.typ, "name": args.name,
                                 "inputs": dict(args.inputs), **local.placed})
            state = {**args.inputs, **_computed(args.typ, args.name, args.inputs, plan)}
            return f"{args.name}-id", state

        def call(self, args):
            return _call(args.token, args.args, plan)

    class Monitor(MockMonitor):
        def RegisterResource(self, request):
            local.placed = graph.place(request, self.make_urn(request.parent, request.type,
                                                              request.name))
            return super().RegisterResource(request)

    # Only Pulumi's documented unit-testing API: set_mocks (with its `monitor` argument), then
    # @pulumi.runtime.test, which clears the RPC state, runs the program and waits for every
    # registration to settle (https://www.pulumi.com/docs/using-pulumi/testing/unit/).
    mocks = Recorder()
    pulumi.runtime.set_mocks(mocks, project="reclaunch", stack=plan.name, preview=False,
                             monitor=Monitor(mocks))
    pulumi.runtime.test(lambda: program(plan))()
    return [_describe(r) for r in recorded]


ROOT_TYPE = "pulumi:pulumi:Stack"


class EngineGraph:
    """What the engine's RegisterResource checks before any provider is called, and the mock
    monitor does not: the URN is the type qualified by the parent's whole type chain (the root
    stack left out) and the name (pulumi/sdk/go/common/resource/urn.go, NewURN), and a second
    registration of one URN is refused ("Duplicate resource URN"): that is what this finds in
    a program. It also refuses a parent, provider, dependency or deletedWith that names no
    resource registered before, but the Python SDK awaits every such URN before it sends a
    registration, so a Python program cannot trip that part; it is checked for requests made
    by other means (tests/stacks/test_engine_rules.py builds them by hand)."""

    def __init__(self, project: str, stack: str):
        self.prefix = f"urn:pulumi:{stack}::{project}::"
        self.engine: dict[str, str] = {}     # mock URN -> engine URN
        self.count: dict[str, int] = {}      # engine URN -> registrations
        self.lock = threading.Lock()         # the SDK registers from its executor's threads

    def _type(self, urn: str) -> str:
        return urn[len(self.prefix):].rsplit("::", 1)[0] if urn.startswith(self.prefix) else ""

    def urn(self, parent: str, typ: str, name: str) -> str:
        """The engine's URN for a registration under `parent` (a mock URN, "" for none)."""
        up = self.engine.get(parent, "")
        qualified = f"{self._type(up)}${typ}" if up else typ
        return f"{self.prefix}{qualified}::{name}"

    def place(self, request: Any, mock_urn: str) -> dict[str, Any]:
        with self.lock:
            urn = self.urn(request.parent, request.type, request.name)
            problems = []
            if self.count.get(urn):
                problems.append(f"duplicate URN {urn}: the engine refuses a second resource "
                                "of one type and name under one parent type chain")
            self.count[urn] = self.count.get(urn, 0) + 1
            if request.type != ROOT_TYPE:
                self.engine.setdefault(mock_urn, urn)

            def ref(what: str, u: str) -> str | None:
                if not u or ROOT_TYPE in u.split("::")[2:3]:
                    return None
                if u not in self.engine:
                    problems.append(f"{what} {u} is not a resource registered before it")
                    return u
                return self.engine[u]

            provider = request.provider.rsplit("::", 1)[0] if request.provider else ""
            deps = sorted({d for d in (ref("dependency", u) for u in [
                *request.dependencies,
                *(u for p in request.propertyDependencies.values() for u in p.urns)]) if d})
            return {"urn": urn, "parent": ref("parent", request.parent),
                    "provider": ref("provider", provider), "depends_on": deps,
                    "deleted_with": ref("deletedWith", request.deletedWith),
                    "import_id": request.importId or None,
                    "retain_on_delete": bool(request.retainOnDelete), "engine": problems}


def _describe(r: dict[str, Any]) -> dict[str, Any]:
    inputs = _ints(json.loads(json.dumps(r["inputs"], default=str)))
    key = {}
    for heading, fields in _KEY_FIELDS.items():
        for f in fields:
            v = _get(inputs, f)
            if v not in (None, "", [], {}):
                key[heading] = v
                break
    pkg = sdk_package(r["type"])
    # The cloud's API refuses an enum value its API version lacks; the SDK's Union[str, Enum]
    # and the mocks let it through (reclaunch/runtime/sdk_enums.py). Names, values and field
    # combinations the SDK types as plain strings: the cloud's own rules (stacks/refusals.py).
    rules = refusal_rules(r["type"].split(":", 1)[0], clouds.generation())
    engine = [*r["engine"], *(violations(r["type"], pkg, inputs) if pkg else []),
              *(rules(r["type"], r["name"], inputs) if rules else [])]
    graph = {k: r[k] for k in ("urn", "parent", "provider", "depends_on", "deleted_with",
                               "import_id", "retain_on_delete")}
    return {"type": r["type"], "name": r["name"], "taggable": tag_field(r["type"]),
            "tags": _tags_of(inputs), "key": key, "inputs": inputs, **graph, "engine": engine}


def _ints(v: Any) -> Any:
    """The engine carries numbers as floats; show whole ones as ints (counts, sizes)."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, dict):
        return {k: _ints(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_ints(x) for x in v]
    return v
