"""What a fabric profile adds to a training pod: resources, sidecars, volumes, env.

Apart from the profile lookup (reclaunch.fabric) because only the renderers need it; the
package re-exports both names (`from reclaunch.fabric import pod_requirements`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from reclaunch.errors import PlanError
from reclaunch.fabric import FabricProfile, gke_networks, topology_config_map


@dataclass(frozen=True)
class PodRequirements:
    """What a fabric adds to a training pod. Lists hold fresh dicts: safe to mutate.

    resources: container limits (extended resources and hugepages; requests default to them),
    including nvidia.com/gpu. env: container env that is not NCCL's (LD_LIBRARY_PATH ...);
    merge it with nccl_env(). init_containers are native sidecars (restartPolicy Always).
    exit_file: when set, the training command must `touch` it on exit so the sidecars stop.
    ld_library_path: directories the launch command prepends to LD_LIBRARY_PATH
    (ld_library_export). config_maps: {name: data} the renderer must create for `volumes`.
    """

    resources: dict[str, Any] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    capabilities: list[str] = field(default_factory=list)
    volumes: list[dict[str, Any]] = field(default_factory=list)
    volume_mounts: list[dict[str, Any]] = field(default_factory=list)
    init_containers: list[dict[str, Any]] = field(default_factory=list)
    sidecars: list[dict[str, Any]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    shm_size: str = "64Gi"
    exit_file: str | None = None
    ld_library_path: list[str] = field(default_factory=list)
    config_maps: dict[str, dict[str, str]] = field(default_factory=dict)


def _copy(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {k: _copy(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_copy(v) for v in obj]
    return obj


def pod_requirements(profile: FabricProfile, cluster_name: str, gpus_per_node: int, *,
                     rxdm_image: str | None = None) -> PodRequirements:
    """What `profile` adds to a pod. `rxdm_image` fills the TCPXO daemon image, which the
    profile table leaves to the pinned installer row (fabric.tcpxo.RXDM_IMAGE)."""
    from reclaunch.fabric import tcpxo
    from reclaunch.fabric.topology import FILE_NAME, MOUNT_DIR, TOPOLOGIES

    resources: dict[str, Any] = {}
    if profile.fabric != "gloo" and gpus_per_node > 0:
        resources["nvidia.com/gpu"] = gpus_per_node
    resources.update(_copy(profile.resources))
    resources.update(_copy(profile.hugepages))
    annotations = dict(profile.annotations)
    if profile.gke_interfaces:
        annotations["networking.gke.io/interfaces"] = json.dumps(
            gke_networks(profile, cluster_name), separators=(",", ":"))
    if profile.device_annotation_container:
        devices = [f"/dev/nvidia{i}" for i in range(gpus_per_node)] + list(profile.extra_devices)
        annotations[f"devices.gke.io/container.{profile.device_annotation_container}"] = (
            "".join(f"- path: {d}\n" for d in devices))
    init_containers = _copy(profile.init_containers)
    for c in init_containers:
        if c.get("image") == tcpxo.RXDM_IMAGE:
            if not rxdm_image:
                raise PlanError(f"fabric {profile.name} needs the pinned tcpxo-daemon image",
                                hint="k8s/addons.yaml gpudirect.tcpxo.rxdm_image")
            c["image"] = rxdm_image
    volumes, mounts = _copy(profile.volumes), _copy(profile.volume_mounts)
    config_maps: dict[str, dict[str, str]] = {}
    if profile.topology:
        name = topology_config_map(cluster_name)
        config_maps[name] = {FILE_NAME: TOPOLOGIES[profile.topology]}
        volumes.append({"name": "nccl-topology", "configMap": {"name": name}})
        mounts.append({"name": "nccl-topology", "mountPath": MOUNT_DIR, "readOnly": True})
    return PodRequirements(
        resources=resources, annotations=annotations,
        capabilities=list(profile.capabilities), volumes=volumes, volume_mounts=mounts,
        init_containers=init_containers, sidecars=_copy(profile.sidecars),
        env=dict(profile.pod_env), shm_size=profile.shm_size, exit_file=profile.exit_file,
        ld_library_path=list(profile.ld_library_path), config_maps=config_maps)
