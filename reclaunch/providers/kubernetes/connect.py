"""The connection to a cluster you bring: the kubeconfig from the usual places.

KUBECONFIG (one path or several joined by ':', merged as kubectl does), else ~/.kube/config;
`kubernetes.context` picks a context (default: the current one). Credentials (tokens, exec
plugins such as `aws eks get-token` or `gke-gcloud-auth-plugin`) are the kubeconfig's own:
reclaunch never stores them. The official `kubernetes` client is imported only here, lazily.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from reclaunch.errors import ProviderError, require

CRD = "pytorchjobs.kubeflow.org"
KUBECONFIG_FIX = ("set KUBECONFIG, or `aws eks update-kubeconfig` / `gcloud container clusters "
                  "get-credentials` / `az aks get-credentials`")


def kubeconfig_path() -> str:
    return os.environ.get("KUBECONFIG") or str(Path("~/.kube/config").expanduser())


# A kubeconfig is a few KiB; kubectl writes no YAML aliases. The client's loader formats each
# cluster/context/user entry as text, which expands aliases: nine levels of nine aliases are
# 9**9 nodes (a "billion laughs") and hang it. Each file is checked first: a regular file,
# at most this big, and at most this many nodes once its aliases are expanded.
MAX_KUBECONFIG_BYTES = 16 * 2**20
MAX_KUBECONFIG_NODES = 1_000_000


def check_kubeconfig(path: str) -> None:
    """ProviderError naming the file when it cannot be a kubeconfig we should read."""
    import yaml

    from reclaunch.home import DamagedState, read_state_file
    for p in path.split(os.pathsep):
        try:
            data = read_state_file(Path(p), MAX_KUBECONFIG_BYTES)
        except DamagedState as exc:
            raise ProviderError(f"kubeconfig {exc.message}", hint="set KUBECONFIG") from None
        if data is None:
            continue
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        try:
            root = yaml.compose(data, Loader=loader)
            size = 0 if root is None else _expanded(root, {})
        except (yaml.YAMLError, ValueError, RecursionError) as exc:
            raise ProviderError(f"kubeconfig {p}: not YAML: {str(exc).splitlines()[0][:200]}") from None
        if size > MAX_KUBECONFIG_NODES:
            raise ProviderError(f"kubeconfig {p}: over {MAX_KUBECONFIG_NODES:,} values once its "
                                "YAML aliases are expanded; not a kubeconfig (an alias bomb?)",
                                hint="kubectl config view --flatten writes a plain one")


def _expanded(node, memo: dict[int, int]) -> int:
    """Nodes of the YAML graph once aliases are copied out: each shared node is counted once
    per reference but computed once (a recursive alias counts once, never forever)."""
    import yaml

    if id(node) in memo:
        return memo[id(node)]
    memo[id(node)] = 1
    total = 1
    if isinstance(node, yaml.MappingNode):
        total += sum(_expanded(k, memo) + _expanded(v, memo) for k, v in node.value)
    elif isinstance(node, yaml.SequenceNode):
        total += sum(_expanded(item, memo) for item in node.value)
    memo[id(node)] = min(total, 2 * MAX_KUBECONFIG_NODES)   # past the limit is enough to know
    return memo[id(node)]


def kubeconfig_missing() -> bool:
    return not any(Path(p).is_file() for p in kubeconfig_path().split(os.pathsep))


def current_context() -> str:
    k8s = require("kubernetes", "k8s")
    check_kubeconfig(kubeconfig_path())
    try:
        _, active = k8s.config.list_kube_config_contexts(config_file=kubeconfig_path())
    except Exception as exc:   # noqa: BLE001 - missing file, bad YAML: one line
        raise ProviderError(f"cannot read the kubeconfig {kubeconfig_path()}: {exc}",
                            hint="set KUBECONFIG or kubernetes.context") from None
    return active["name"]


def connect(context: str | None):
    """A runtime.kube.Kube for `context` (None: the kubeconfig's current context)."""
    from reclaunch.runtime.kube import Kube
    k8s = require("kubernetes", "k8s")
    path = kubeconfig_path()
    if kubeconfig_missing():
        raise ProviderError(f"no kubeconfig at {path}", hint=KUBECONFIG_FIX)
    check_kubeconfig(path)
    try:
        client = k8s.config.new_client_from_config(config_file=path, context=context)
    except Exception as exc:   # noqa: BLE001 - unknown context, bad file
        raise ProviderError(f"kubeconfig {path}: {exc}".splitlines()[0],
                            hint="`kubectl config get-contexts` lists the contexts") from None
    return Kube(client)


def context_name(context: str | None) -> str:
    return context or current_context()


def operator_problem(kube: Any) -> str | None:
    """Why the training operator is not usable (None: the PyTorchJob CRD is served)."""
    crd = kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", CRD)
    if crd is None:
        return (f"the cluster has no {CRD} CustomResourceDefinition: the Kubeflow training "
                "operator is not installed")
    versions = [v.get("name") for v in (crd.get("spec") or {}).get("versions") or []
                if v.get("served")]
    if "v1" not in versions:
        return f"{CRD} serves {', '.join(versions) or 'no version'}, not v1"
    return None


OPERATOR_FIX = ("install it: kubectl apply --server-side -k "
                "\"github.com/kubeflow/training-operator.git/manifests/overlays/standalone?ref=v1.8.1\"")
