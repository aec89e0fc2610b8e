"""job.workdir in the launch (pure): the archive's ConfigMap when it is tiny, and in every pod
an init container that fetches the archive, checks its sha256 and unpacks it into an emptyDir
the training container starts in (workingDir). The init container runs the job's own image
with its python3 (the image needs it anyway, README: "the training image also needs python3
and torch"): a bucket archive is read through fsspec, as the trainer reads its checkpoints.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from reclaunch.planner.workdir import ARCHIVE, destination

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

MOUNT = "/workdir"                     # where the command runs
ARCHIVE_MOUNT = "/reclaunch/workdir-archive"

# argv: source (a path or a bucket URL), destination directory, sha256. tarfile's "data"
# filter refuses absolute names, links out of the destination and devices (Python >= 3.11.4,
# 3.12); an older interpreter gets the same refusal from the explicit check.
UNPACK = """\
import hashlib, io, os, sys, tarfile
src, dest, want = sys.argv[1:4]
if "://" in src:
    import fsspec
    with fsspec.open(src, "rb") as fh:
        data = fh.read()
else:
    data = open(src, "rb").read()
got = hashlib.sha256(data).hexdigest()
if got != want:
    sys.exit(f"reclaunch workdir: {src} is {got[:12]}, not the {want[:12]} `up` packed")
os.makedirs(dest, exist_ok=True)
with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
    if hasattr(tarfile, "data_filter"):
        tar.extractall(dest, filter="data")
    else:
        root = os.path.realpath(dest)
        for m in tar.getmembers():
            path = os.path.realpath(os.path.join(dest, m.name))
            if not (path == root or path.startswith(root + os.sep)) or m.isdev() or (
                    m.issym() and os.path.isabs(m.linkname)):
                sys.exit(f"reclaunch workdir: refusing {m.name!r}")
        tar.extractall(dest)
print(f"reclaunch workdir: {want[:12]} unpacked into {dest}")
"""


def config_map_name(plan: "Plan") -> str:
    return f"{plan.name}-workdir"


def objects(plan: "Plan", meta) -> list[dict[str, Any]]:
    """The ConfigMap that carries a tiny archive ([] otherwise). `meta(plan, name)`: job.py's."""
    pack = getattr(plan.context, "workdir", None)
    if pack is None or destination(plan.spec, pack)[0] != "configmap":
        return []
    md = meta(plan, config_map_name(plan))
    md.setdefault("annotations", {})["reclaunch.io/workdir-sha256"] = pack.digest
    return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md,
             "binaryData": {ARCHIVE: base64.b64encode(pack.inline).decode()}}]


def add_to(plan: "Plan", template: dict[str, Any], env: list[dict[str, str]] = ()) -> None:
    """Fetch and unpack before the training container starts in it (the pod template, in
    place). `env`: the bucket identity's variables (stacks/identity.py), which the fetch needs."""
    pack = getattr(plan.context, "workdir", None)
    if pack is None:
        return
    kind, url = destination(plan.spec, pack)
    if kind not in ("configmap", "bucket"):
        from reclaunch.errors import PlanError

        raise PlanError(f"{plan.spec.where('job', 'workdir')}: job.workdir: {url}")
    spec = template["spec"]
    main = spec["containers"][0]
    mounts = [{"name": "workdir", "mountPath": MOUNT}]
    spec["volumes"].append({"name": "workdir", "emptyDir": {}})
    if kind == "configmap":
        spec["volumes"].append({"name": "workdir-archive",
                                "configMap": {"name": config_map_name(plan)}})
        source = f"{ARCHIVE_MOUNT}/{ARCHIVE}"
        init_mounts = [*mounts, {"name": "workdir-archive", "mountPath": ARCHIVE_MOUNT,
                                 "readOnly": True}]
    else:
        source, init_mounts = url, mounts
    init = {"name": "workdir", "image": main["image"], "imagePullPolicy": main.get("imagePullPolicy"),
            "command": ["python3", "-c", UNPACK, source, MOUNT, pack.digest],
            "env": list(env),
            "volumeMounts": init_mounts,
            "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}}}
    # First, before any native sidecar (a fabric daemon) that has no use for the code.
    spec["initContainers"] = [init, *spec.get("initContainers", [])]
    main["workingDir"] = MOUNT
    main["volumeMounts"] = [*main.get("volumeMounts", []), *mounts]
