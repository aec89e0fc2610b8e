"""Time to first step: the startup timeline of a job and which of it bills GPU hours.

Pure. Every figure is data, each with its source: a target's own steps are its facts
(CloudFacts.planner["startup"] of the spec's `cloud`, or of the compared offer's), a storage
kind's creation time its record (StorageKind.created_in), what every target shares (image pull,
preflight, workdir, the spread) data/startup.yaml. The timeline follows what `up` does: the
Pulumi stack creates the control plane, then the node pools (GPU software starts on them), and the
file system beside both; the job's pods are applied once every resource exists, then each
node pulls the image, then the optional NCCL preflight runs, then training starts.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, NamedTuple

from reclaunch import clouds
from reclaunch.planner.constants import data_yaml


@lru_cache(maxsize=1)
def startup_data() -> dict[str, Any]:
    return data_yaml("startup.yaml")


# A NamedTuple, not a frozen dataclass: an immutable value that costs a quarter to create at
# import (issue 25), hashed and compared field by field just the same.
class Step(NamedTuple):
    """One step of the startup timeline, with its source."""

    name: str
    seconds: float
    billed: bool            # GPU instances exist (and bill) while this runs
    source: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "seconds": round(self.seconds, 1), "billed": self.billed,
                "source": self.source}


class Startup(NamedTuple):   # a NamedTuple like Step
    """The startup timeline: launch to the first training step."""

    steps: tuple[Step, ...] = ()
    data_version: str = ""
    notes: tuple[str, ...] = ()

    @property
    def seconds(self) -> float:
        return sum(s.seconds for s in self.steps)

    @property
    def billed_seconds(self) -> float:
        return sum(s.seconds for s in self.steps if s.billed)

    def to_json(self) -> dict[str, Any]:
        """The `plan --json` contract: {seconds, billed_seconds, steps: [{name, seconds, billed, source}]}."""
        return {"seconds": round(self.seconds, 1), "billed_seconds": round(self.billed_seconds, 1),
                "steps": [s.to_json() for s in self.steps], "data_version": self.data_version,
                "notes": list(self.notes)}


def _bytes(text: Any) -> int:
    from reclaunch.spec.units import parse_size

    return int(parse_size(text))


def _fmt_gb(n: float) -> str:
    return f"{n / 1e9:.1f} GB"


def target_steps(target: str) -> dict[str, Any] | None:
    """The target's startup figures (its facts' planner["startup"]); None: it declares none."""
    return clouds.get(target).planner.get("startup") if clouds.known(target) else None


def provision_timeout(target: str) -> tuple[float, str] | None:
    """(seconds, source): how long the target's cluster autoscaler waits for a Ready node before
    it tries its next pool (the stack configures the autoscaler with it); None: not set here."""
    t = (target_steps(target) or {}).get("provision_timeout")
    return (float(t["seconds"]), str(t["source"]).strip()) if t else None


def _fallback_note(spec, target: str) -> tuple[str, ...]:
    timeout = provision_timeout(target)
    if not (timeout and spec.spot.enabled and spec.spot.fallback == "on-demand"):
        return ()
    return (f"a spot replacement the spot pool cannot fill moves to the on-demand pool when the "
            f"cloud refuses the launch, or after {timeout[0] / 60:g} min without a Ready node "
            "(the autoscaler's max-node-provision-time)",)


def timeline(spec, target: str | None = None, nodes: int | None = None, *,
             preflight: bool = False, measured_first_step_s: float | None = None,
             measured_at: str | None = None, workdir: Any = None) -> Startup:
    """The startup of `spec` on `target` (default spec.cloud) with `nodes` nodes.

    measured_first_step_s: this host's measured time to first step (cloud: local, from
    `reclaunch calibrate`), which replaces the target's assumed steps. workdir: the packed
    job.workdir (planner/workdir.py), whose upload and unpack come before the first step."""
    d = startup_data()
    target = target or spec.cloud
    nodes = nodes or spec.nodes
    t = target_steps(target)
    if t is None:
        return Startup(data_version=str(d["version"]),
                       notes=(f"no startup data for target {target!r} (its facts' planner[\"startup\"])",))
    steps: list[Step] = []
    if measured_first_step_s is not None:
        steps.append(Step("time to first step (measured on this host)", float(measured_first_step_s),
                          False, f"reclaunch calibrate{' ' + measured_at if measured_at else ''}"))
    else:
        for s in t.get("steps") or []:
            secs = float(s["seconds"]) + float(s.get("per_node", 0)) * max(0, nodes - 1)
            steps.append(Step(s["name"], secs, bool(s["billed"]), str(s["source"]).strip()))
    notes = _fallback_note(spec, target)
    if t.get("image", True) is False:   # runs here: the workdir is unpacked, not uploaded
        steps += _workdir(workdir, d, uploads=False, billed=False)
        return Startup(tuple(steps), str(d["version"]), notes)
    before_join = sum(s.seconds for s in steps)
    kind = clouds.storage_kinds().get(spec.storage.kind)
    if kind is not None and kind.created_in:   # a file system the stack creates
        fs_seconds, fs_source = kind.created_in
        steps.append(Step(f"file system ({spec.storage.kind}: {float(fs_seconds) / 60:.0f} min, "
                          f"created beside the cluster; the wait beyond it)",
                          max(0.0, float(fs_seconds) - before_join), any(s.billed for s in steps),
                          fs_source))
    img = d["image"]
    size = spec.job.image_size if spec.job.image_size is not None else _bytes(img["default_size"])
    given = "job.image_size" if spec.job.image_size is not None else "default size"
    pull_s = size / (float(img["pull_mb_per_s"]) * 1e6)
    steps.append(Step(f"image pull ({_fmt_gb(size)}, {given})", pull_s, True,
                      str(img["pull_source"]).strip()
                      + ("" if spec.job.image_size is not None else "; size: " + str(img["default_size_source"]).strip())))
    steps += _workdir(workdir, d, uploads=True, billed=any(s.billed for s in steps))
    if preflight:
        pf = d["preflight"]
        steps.append(Step("NCCL preflight", float(pf["seconds"]), True, str(pf["source"]).strip()))
    return Startup(tuple(steps), str(d["version"]), notes)


def _workdir(pack: Any, d: dict[str, Any], *, uploads: bool, billed: bool) -> list[Step]:
    if pack is None:
        return []
    from reclaunch.planner.workdir import startup_step

    name, seconds, source = startup_step(pack, d["workdir"], uploads)
    return [Step(name, seconds, billed, source)]
