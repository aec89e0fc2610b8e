"""Secrets in job.env: referenced, never written or printed in plaintext.

`job.env: {HF_TOKEN: {secret: hf, key: token}}` names a key of a Kubernetes Secret; the
PyTorchJob container gets it as `valueFrom.secretKeyRef` (the kubelet reads the Secret, the
value never enters a manifest). On `cloud: local` the provider reads it at `up` from an
owner-only env file or the environment (providers/local/secrets.py).

A literal value whose *name* looks like a secret (TOKEN, KEY, SECRET, PASSWORD, ...) is never
printed: `up --dry-run` and `render` to stdout show it redacted (`render --out DIR` writes it,
to owner-only files). Kubernetes: https://kubernetes.io/docs/concepts/configuration/secret/
#using-secrets-as-environment-variables (env[].valueFrom.secretKeyRef {name, key}).
"""

from __future__ import annotations

import copy
import re
from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

SECRETISH = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.I)
REDACTED = "<redacted: name looks like a secret; use {secret: NAME, key: KEY}>"


def looks_secret(name: str) -> bool:
    return bool(SECRETISH.search(name or ""))


def is_ref(value: Any) -> bool:
    return hasattr(value, "secret") and hasattr(value, "key")


def secret_refs(plan: "Plan") -> dict[str, Any]:
    """job.env's {NAME: SecretRef} entries, in spec order."""
    return {k: v for k, v in plan.spec.job.env.items() if is_ref(v)}


def value_from(refs: dict[str, Any]) -> list[dict[str, Any]]:
    """Container env entries for the references (Kubernetes EnvVarSource)."""
    return [{"name": k, "valueFrom": {"secretKeyRef": {"name": r.secret, "key": r.key}}}
            for k, r in refs.items()]


def holds_user_env(plan: "Plan") -> bool:
    """Whether rendered files can hold a value from the user's job.env / nccl.env (then they
    are written owner-only)."""
    spec = plan.spec
    return any(not is_ref(v) for v in spec.job.env.values()) or bool(spec.nccl.env)


def redact_env(entries: Iterable[dict[str, Any]]) -> None:
    """In place: `value` of every env entry whose name looks like a secret."""
    for e in entries:
        if isinstance(e, dict) and "value" in e and looks_secret(str(e.get("name"))):
            e["value"] = REDACTED


def redacted(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A copy of manifests with every container's secret-looking env value redacted (what is
    printed); the objects themselves stay as they are (what is applied or written)."""
    out = copy.deepcopy(objs)

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "env" and isinstance(v, list):
                    redact_env(v)
                else:
                    walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
    walk(out)
    return out


def redact_mapping(env: dict[str, str]) -> dict[str, str]:
    return {k: (REDACTED if looks_secret(k) else v) for k, v in env.items()}
