"""Validation of what we render: the upstream PyTorchJob CRD schema (plus strict unknown-field
checks, as the API server's strict field validation does) and built-in kinds via
kubernetes-validate."""

from __future__ import annotations

import functools
from typing import Any

import yaml

from tests.conftest import SHARED

CRD_PATH = SHARED / "schemas" / "kubeflow.org_pytorchjobs.yaml"
K8S_VERSION = "1.33.0"   # stacks/common.py KUBERNETES_VERSION


@functools.lru_cache(maxsize=1)
def crd_schema() -> dict[str, Any]:
    crd = yaml.safe_load(CRD_PATH.read_text())
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")
    return version["schema"]["openAPIV3Schema"]


def strict_walk(obj: Any, schema: dict[str, Any], path: str = "") -> list[str]:
    """Fields the schema does not name (what `kubectl apply --validate=strict` rejects)."""
    problems: list[str] = []
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return problems
    if isinstance(obj, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for k, v in obj.items():
            if props is not None and k in props:
                problems += strict_walk(v, props[k], f"{path}.{k}")
            elif isinstance(extra, dict):
                problems += strict_walk(v, extra, f"{path}.{k}")
            elif props is not None and not extra:
                problems.append(f"{path}.{k}: unknown field")
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for i, v in enumerate(obj):
            problems += strict_walk(v, schema["items"], f"{path}[{i}]")
    return problems


def validate_pytorchjob(job: dict[str, Any]) -> None:
    import jsonschema

    schema = crd_schema()
    jsonschema.validate(job, schema)
    # metadata is only `type: object` in the CRD: the API server validates it as ObjectMeta.
    problems = strict_walk({k: v for k, v in job.items() if k != "metadata"}, schema)
    assert not problems, problems
    for name, replica in job["spec"]["pytorchReplicaSpecs"].items():
        template = replica["template"]
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": f"{job['metadata']['name']}-{name.lower()}-0",
                            **template.get("metadata", {})},
               "spec": template["spec"]}
        validate_builtin(pod)


def validate_builtin(obj: dict[str, Any]) -> None:
    import kubernetes_validate

    kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def validate_all(objs: list[dict[str, Any]]) -> None:
    for obj in objs:
        if obj["kind"] == "PyTorchJob":
            if CRD_PATH.is_file():
                validate_pytorchjob(obj)
        else:
            validate_builtin(obj)
