"""The API server's own rules for what we render: the checks schema validation does not run.

kubernetes-validate (and `kubectl apply --validate=strict`) checks the OpenAPI schema only.
The API server also runs pkg/apis/core/validation (kubernetes/kubernetes, validation.go:
ValidateResourceRequirements, validateContainerResourceName, ValidateResourceQuantityValue,
validateInitContainers, validateTolerations, ValidateVolumes/validateVolumeMounts) after the
pod defaults are applied (pkg/apis/core/v1/defaults.go: a container's requests default to its
limits). A pod that breaks one of these is rejected at create time, long after `render`
looked fine. This module encodes the subset our manifests depend on, so tests and the
schedulability check run it over every pod we render.

Pure: a dict in, a list of "path: problem" strings out (empty = the API server accepts it).
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any, Iterator

# k8s.io/apimachinery/pkg/api/resource: suffixes of a Quantity.
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": 1,
            "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_QUALIFIED = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_IANA_SVC = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
_CM_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_STANDARD_CONTAINER = ("cpu", "memory", "ephemeral-storage")
_TAINT_EFFECTS = ("", "NoSchedule", "PreferNoSchedule", "NoExecute")
_VOLUME_SOURCES = ("hostPath", "emptyDir", "configMap", "secret", "persistentVolumeClaim",
                   "projected", "downwardAPI", "csi", "ephemeral", "nfs")
_QOS = ("cpu", "memory")


def quantity(value: Any) -> Fraction:
    """A Kubernetes quantity ("5120Mi", "100m", 8, "1e3") as an exact number."""
    if isinstance(value, bool):
        raise ValueError(f"not a quantity: {value!r}")
    if isinstance(value, (int, float)):
        return Fraction(value)
    m = _QUANTITY.match(str(value).strip()[:64])
    if not m or len(str(value).strip()) > 64:
        raise ValueError(f"not a quantity: {str(value)[:64]!r}")
    num, suffix = Fraction(m.group(1)), m.group(2) or ""
    if suffix in _BINARY:
        return num * _BINARY[suffix]
    if suffix[:1] in ("e", "E"):
        if abs(int(suffix[1:])) > 30:   # no resource is 1e31 of anything; 1e999999999 would hang
            raise ValueError(f"not a quantity: {value!r}")
        return num * Fraction(10) ** int(suffix[1:])
    return num * _DECIMAL[suffix]


def is_hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


def is_native(name: str) -> bool:
    """helper.IsNativeResource: no domain, or the kubernetes.io domain."""
    return "/" not in name or "kubernetes.io/" in name


def is_extended(name: str) -> bool:
    """helper.IsExtendedResourceName: a domain-qualified name outside kubernetes.io."""
    if is_native(name) or name.startswith("requests."):
        return False
    prefix, _, short = name.partition("/")
    return bool(prefix) and bool(_QUALIFIED.match(short)) and len(short) <= 63


def overcommit_allowed(name: str) -> bool:
    """helper.IsOvercommitAllowed: requests may be below limits (cpu, memory, storage) only."""
    return is_native(name) and not is_hugepages(name)


def effective_requests(container: dict[str, Any]) -> dict[str, Any]:
    """Requests after defaulting: a resource with a limit and no request requests its limit."""
    res = container.get("resources") or {}
    return {**(res.get("limits") or {}), **(res.get("requests") or {})}


def _resources(c: dict[str, Any], path: str) -> list[str]:
    res = c.get("resources") or {}
    limits = res.get("limits") or {}
    requests = effective_requests(c)
    out: list[str] = []
    for kind, values in (("limits", limits), ("requests", requests)):
        for name, raw in values.items():
            where = f"{path}.resources.{kind}[{name}]"
            if "/" not in name:
                if name not in _STANDARD_CONTAINER and not is_hugepages(name):
                    out.append(f"{where}: must be a standard resource for containers")
            elif not is_native(name) and not is_extended(name):
                out.append(f"{where}: doesn't follow extended resource name standard")
            try:
                q = quantity(raw)
            except ValueError as exc:
                out.append(f"{where}: {exc}")
                continue
            if q < 0:
                out.append(f"{where}: must be greater than or equal to 0")
            if is_extended(name) and q.denominator != 1:
                out.append(f"{where}: must be an integer")
            if is_hugepages(name):
                page = quantity(name[len("hugepages-"):])
                if q % page:
                    out.append(f"{where}: {raw} is not positive integer multiple of {name}")
    for name, raw in requests.items():
        where = f"{path}.resources.requests[{name}]"
        if name not in limits:
            if not overcommit_allowed(name):
                out.append(f"{where}: Limit must be set for non overcommitable resources")
            continue
        try:
            req, lim = quantity(raw), quantity(limits[name])
        except ValueError:
            continue
        if req != lim and not overcommit_allowed(name):
            out.append(f"{where}: must be equal to {name} limit of {limits[name]}")
        elif req > lim:
            out.append(f"{where}: must be less than or equal to {name} limit of {limits[name]}")
    names = set(limits) | set(requests)
    if any(is_hugepages(n) for n in names) and not any(n in _QOS for n in names):
        out.append(f"{path}.resources: HugePages require cpu or memory")
    return out


def _probes(c: dict[str, Any], path: str, may_probe: bool) -> list[str]:
    out = []
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        p = c.get(probe)
        if p is None:
            continue
        if not may_probe:
            out.append(f"{path}.{probe}: may not be set for init containers without "
                       "restartPolicy=Always")
            continue
        handlers = [h for h in ("exec", "httpGet", "tcpSocket", "grpc") if h in p]
        if len(handlers) != 1:
            out.append(f"{path}.{probe}: must specify exactly one handler type")
        if probe != "readinessProbe" and p.get("successThreshold", 1) != 1:
            out.append(f"{path}.{probe}.successThreshold: must be 1")
    return out


def _container(c: dict[str, Any], path: str, volumes: set[str], init: bool) -> list[str]:
    out = []
    name = c.get("name", "")
    if not _DNS_LABEL.match(name) or len(name) > 63:
        out.append(f"{path}.name: {name!r} is not a DNS-1123 label")
    if not c.get("image"):
        out.append(f"{path}.image: Required value")
    restart = c.get("restartPolicy")
    if restart is not None and (not init or restart != "Always"):
        out.append(f"{path}.restartPolicy: only init containers may set it, and only to Always")
    out += _resources(c, path)
    out += _probes(c, path, may_probe=not init or restart == "Always")
    paths: set[str] = set()
    for i, m in enumerate(c.get("volumeMounts") or []):
        if m.get("name") not in volumes:
            out.append(f"{path}.volumeMounts[{i}].name: Not found: {m.get('name')!r}")
        if m.get("mountPath") in paths:
            out.append(f"{path}.volumeMounts[{i}].mountPath: must be unique")
        paths.add(m.get("mountPath"))
    ports: set[str] = set()
    for i, p in enumerate(c.get("ports") or []):
        pname = p.get("name")
        if pname is not None:
            if len(pname) > 15 or not _IANA_SVC.match(pname) or pname in ports:
                out.append(f"{path}.ports[{i}].name: {pname!r} is not a unique IANA_SVC_NAME")
            ports.add(pname)
        if not 0 < int(p.get("containerPort", 0)) < 65536:
            out.append(f"{path}.ports[{i}].containerPort: must be between 1 and 65535")
    return out


def _tolerations(tols: list[dict[str, Any]], path: str) -> list[str]:
    out = []
    for i, t in enumerate(tols):
        op = t.get("operator", "Equal")
        if not t.get("key") and op != "Exists":
            out.append(f"{path}[{i}].operator: must be Exists when key is empty")
        if op == "Exists" and t.get("value"):
            out.append(f"{path}[{i}].value: must be empty when operator is Exists")
        if op not in ("Exists", "Equal"):
            out.append(f"{path}[{i}].operator: Unsupported value {op!r}")
        if t.get("effect", "") not in _TAINT_EFFECTS:
            out.append(f"{path}[{i}].effect: Unsupported value {t.get('effect')!r}")
    return out


def _labels(labels: dict[str, Any], path: str) -> list[str]:
    out = []
    for k, v in (labels or {}).items():
        key = k.rpartition("/")[2]
        if not _QUALIFIED.match(key) or len(key) > 63:
            out.append(f"{path}[{k}]: invalid label key")
        if not isinstance(v, str) or len(v) > 63 or not _LABEL_VALUE.match(v):
            out.append(f"{path}[{k}]: invalid label value {v!r}")
    return out


def pod_problems(spec: dict[str, Any], path: str = "spec") -> list[str]:
    """The core validation rules for one pod spec (after defaulting)."""
    out: list[str] = []
    volumes: set[str] = set()
    for i, v in enumerate(spec.get("volumes") or []):
        if v.get("name") in volumes:
            out.append(f"{path}.volumes[{i}].name: Duplicate value {v.get('name')!r}")
        volumes.add(v.get("name"))
        sources = [s for s in _VOLUME_SOURCES if s in v]
        if len(sources) != 1:
            out.append(f"{path}.volumes[{i}]: must specify exactly one volume source")
        if "configMap" in v and not (v["configMap"] or {}).get("name"):
            out.append(f"{path}.volumes[{i}].configMap.name: Required value")
    if not spec.get("containers"):
        out.append(f"{path}.containers: Required value")
    names: set[str] = set()
    for key, init in (("initContainers", True), ("containers", False)):
        for i, c in enumerate(spec.get(key) or []):
            if c.get("name") in names:
                out.append(f"{path}.{key}[{i}].name: Duplicate value {c.get('name')!r}")
            names.add(c.get("name"))
            out += _container(c, f"{path}.{key}[{i}]", volumes, init)
    out += _tolerations(spec.get("tolerations") or [], f"{path}.tolerations")
    out += _labels(spec.get("nodeSelector") or {}, f"{path}.nodeSelector")
    if spec.get("restartPolicy", "Always") not in ("Always", "OnFailure", "Never"):
        out.append(f"{path}.restartPolicy: Unsupported value {spec['restartPolicy']!r}")
    return out


def pod_templates(obj: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(path, pod template {metadata, spec}) of every pod an object creates."""
    kind, spec = obj.get("kind"), obj.get("spec") or {}
    if kind == "Pod":
        yield "spec", {"metadata": obj.get("metadata") or {}, "spec": spec}
    elif kind == "PyTorchJob":
        for role, rs in (spec.get("pytorchReplicaSpecs") or {}).items():
            yield f"spec.pytorchReplicaSpecs.{role}.template", rs.get("template") or {}
    elif kind in ("Deployment", "StatefulSet", "DaemonSet", "Job", "ReplicaSet"):
        yield "spec.template", spec.get("template") or {}


def api_server_rules(obj: dict[str, Any]) -> list[str]:
    """What the API server would reject in `obj` (schema-valid objects included)."""
    kind = obj.get("kind", "?")
    meta = obj.get("metadata") or {}
    name = meta.get("name", "")
    where = f"{kind}/{name}"
    out: list[str] = []
    name_re = _DNS1035 if kind == "Service" else _DNS_LABEL
    if not name_re.match(name) or len(name) > (63 if kind == "Service" else 253):
        out.append(f"{where} metadata.name: {name!r} is not a valid {kind} name")
    out += _labels(meta.get("labels") or {}, f"{where} metadata.labels")
    for path, tmpl in pod_templates(obj):
        out += _labels((tmpl.get("metadata") or {}).get("labels") or {},
                       f"{where} {path}.metadata.labels")
        out += [f"{where} {p}" for p in pod_problems(tmpl.get("spec") or {}, f"{path}.spec")]
        if kind == "Deployment" and (tmpl.get("spec") or {}).get("restartPolicy",
                                                                 "Always") != "Always":
            out.append(f"{where} {path}.spec.restartPolicy: Unsupported value: only Always")
    if kind == "Deployment":
        selector = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        tmpl_labels = ((obj["spec"].get("template") or {}).get("metadata") or {}).get(
            "labels") or {}
        if not selector or any(tmpl_labels.get(k) != v for k, v in selector.items()):
            out.append(f"{where} spec.template.metadata.labels: `selector` does not match "
                       "template `labels`")
    if kind == "Service":
        for i, p in enumerate((obj.get("spec") or {}).get("ports") or []):
            if not 0 < int(p.get("port", 0)) < 65536:
                out.append(f"{where} spec.ports[{i}].port: must be between 1 and 65535")
    if kind == "ConfigMap":
        data = obj.get("data") or {}
        for k in data:
            if not _CM_KEY.match(k) or len(k) > 253:
                out.append(f"{where} data[{k}]: a valid config key must consist of "
                           "alphanumeric characters, '-', '_' or '.'")
        if sum(len(k) + len(str(v)) for k, v in data.items()) > 1 << 20:
            out.append(f"{where} data: Too long: must have at most 1048576 bytes")
    return out
