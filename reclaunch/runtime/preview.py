"""`reclaunch preview`: run a cloud's Pulumi program in-process under `pulumi.runtime.set_mocks`.

No Pulumi CLI, no credentials, no network: every resource registration is answered by a
recorder that keeps what the program asked for. The result is a list of plain dicts (the
`--json` output) that users review and tests assert on:

    {"type", "name", "taggable": "tags"|"labels"|"resource_labels"|None, "tags",
     "key": {instance type, capacity, min/max, placement, ...}, "inputs"}
"""

from __future__ import annotations

import importlib
import inspect
import json
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable

from reclaunch import clouds
from reclaunch.errors import UsageError, require

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




@lru_cache(maxsize=512)
def tag_field(typ: str) -> str | None:
    """Which input of this resource type holds cloud tags/labels (None: not taggable)."""
    # Each cloud's facts name its Pulumi SDK packages (type prefix -> Python package) and the
    # types taggable through a nested input only (GKE node VMs are labelled via node_config).
    nested = {k: v for f in clouds.all_facts() for k, v in f.preview.nested_tags.items()}
    if typ in nested:
        return nested[typ]
    parts = typ.split(":")
    pkg = next((f.preview.sdk_packages[parts[0]] for f in clouds.all_facts()
                if parts[0] in f.preview.sdk_packages), None)
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


def _computed(typ: str, name: str, inputs: dict, plan: "Plan") -> dict:
    """Outputs the programs read back (endpoints, CA data, ids: the cloud's facts,
    preview.outputs); the rest echo the inputs."""
    extra = clouds.get(plan.cloud).preview.outputs(typ, name, inputs)
    return {"name": inputs.get("name", name), "arn": f"arn:mock:{typ}:{name}", **extra}


def _call(token: str, args: dict, plan: "Plan") -> dict:
    return clouds.get(plan.cloud).preview.calls(token, args, plan.region)


def preview(plan: "Plan", *, program: Callable[["Plan"], None], extra: str) -> list[dict[str, Any]]:
    """Run the stack `program(plan)` under mocks; one dict per resource, in order.

    The caller names the program and its pip extra (providers.preview_plan: the cloud's CloudSpec).
    """
    pulumi = require("pulumi", extra)

    recorded: list[dict[str, Any]] = []

    class Recorder(pulumi.runtime.Mocks):
        def new_resource(self, args):
            if args.typ != "pulumi:pulumi:Stack":
                recorded.append({"type": args.typ, "name": args.name,
                                 "inputs": dict(args.inputs)})
            state = {**args.inputs, **_computed(args.typ, args.name, args.inputs, plan)}
            return f"{args.name}-id", state

        def call(self, args):
            return _call(args.token, args.args, plan)

    # Only Pulumi's documented unit-testing API: set_mocks, then @pulumi.runtime.test, which
    # clears the RPC state, runs the program and waits for every registration to settle.
    # (https://www.pulumi.com/docs/using-pulumi/testing/unit/)
    pulumi.runtime.set_mocks(Recorder(), project="reclaunch", stack=plan.name, preview=False)
    pulumi.runtime.test(lambda: program(plan))()
    return [_describe(r) for r in recorded]


def _describe(r: dict[str, Any]) -> dict[str, Any]:
    inputs = _ints(json.loads(json.dumps(r["inputs"], default=str)))
    key = {}
    for heading, fields in _KEY_FIELDS.items():
        for f in fields:
            v = _get(inputs, f)
            if v not in (None, "", [], {}):
                key[heading] = v
                break
    return {"type": r["type"], "name": r["name"], "taggable": tag_field(r["type"]),
            "tags": _tags_of(inputs), "key": key, "inputs": inputs}


def _ints(v: Any) -> Any:
    """The engine carries numbers as floats; show whole ones as ints (counts, sizes)."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, dict):
        return {k: _ints(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_ints(x) for x in v]
    return v
