"""Fakes behind the same interfaces as reclaunch.runtime.infra.Infra and reclaunch.runtime.kube.Kube.

FakeCloud is the "real world": what exists, and how many times each thing was ever created.
FakeInfra is a declarative engine over it with Pulumi's failure modes (pending operations on a
crash, capacity errors); FakeKube is an API server that keeps applied objects and plays a
scripted sequence of PyTorchJob states.
"""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

import pytest
from rich.console import Console

from reclaunch.runtime.infra import Infra, InfraError
from reclaunch.runtime.lifecycle import Env, Pacing

ROOT = Path(__file__).resolve().parents[2]
AWS_EXAMPLE = ROOT / "examples" / "aws-deepfm-p4d.yaml"


class FakeCloud:
    def __init__(self):
        self.live: dict[str, dict] = {}        # urn -> {"cluster", "kind"}
        self.created: Counter = Counter()       # urn -> times created, ever

    def tagged(self, cluster: str) -> list[str]:
        return sorted(u for u, r in self.live.items() if r["cluster"] == cluster)


class Crash(BaseException):
    """A crash (kill -9, power loss) injected by a test: no `except Exception` sees it."""


class FakeInfra(Infra):
    KINDS = ("vpc", "eks", "nodepool", "storage")

    def __init__(self, cloud: FakeCloud):
        self.cloud = cloud
        self.state: dict[str, set[str]] = {}      # stack -> urns it records
        self.pending_ops: dict[str, list[dict]] = {}
        self.crash_before_create: str | None = None   # kind: crash with its create in flight
        self.orphan_on_crash = False                  # ...and the cloud did create it
        self.capacity: dict = {}                      # (zones tuple, spot) -> error text
        self.attempts: list[tuple[tuple, bool]] = []
        self.destroys = 0
        self.checked = 0

    def check(self):
        self.checked += 1

    def exists(self, name):
        return name in self.state

    def _urn(self, name, kind):
        return f"urn:{name}::{kind}"

    def up(self, plan, on_event=None):
        assert not self.pending_ops.get(plan.name), "up with pending operations in the state"
        self.attempts.append((tuple(plan.zones), plan.spot))
        st = self.state.setdefault(plan.name, set())
        for kind in self.KINDS:
            urn = self._urn(plan.name, kind)
            if urn in st:
                continue
            if kind == "nodepool":
                err = self.capacity.get((tuple(plan.zones), plan.spot))
                if err:
                    raise InfraError(f"provisioning {plan.name} failed: {err}", err)
            if self.crash_before_create == kind:
                self.crash_before_create = None
                self.pending_ops[plan.name] = [{"urn": urn, "type": kind, "op": "creating"}]
                if self.orphan_on_crash:
                    self._create(plan.name, urn, kind)
                raise Crash(f"killed while creating {kind}")
            self._create(plan.name, urn, kind)
            st.add(urn)
            if on_event:
                on_event({"kind": "resource", "urn": urn, "type": f"fake:{kind}", "op": "create",
                          "status": "done"})
        return self.outputs(plan.name)

    def _create(self, name, urn, kind):
        self.cloud.live[urn] = {"cluster": name, "kind": kind}
        self.cloud.created[urn] += 1

    def outputs(self, name):
        return {"kubeconfig": f"fake-kubeconfig-{name}", "storage_id": f"fs-{name}"}

    def destroy(self, name, *, keep_storage=False, on_event=None):
        self.destroys += 1
        for urn in sorted(self.state.get(name, set())):
            if keep_storage and urn.endswith("::storage"):
                continue
            self.cloud.live.pop(urn, None)
            self.state[name].discard(urn)
        if not self.state.get(name):
            self.state.pop(name, None)

    def pending(self, name):
        return list(self.pending_ops.get(name, []))

    def clear_pending(self, name):
        return self.pending_ops.pop(name, [])


class FakeKube:
    def __init__(self, states: list[str] | None = None):
        self.objects: dict[tuple, dict] = {}
        self.applies: Counter = Counter()
        self.job_creations = 0
        self.deleted: list[tuple] = []
        self.states = list(states or ["Running"])   # one per job() call; the last repeats
        self.polls = 0
        self.crash_on_apply_kind: str | None = None

    def _key(self, m):
        md = m["metadata"]
        return (m["kind"], md.get("namespace"), md["name"])

    def apply(self, m):
        if self.crash_on_apply_kind == m["kind"]:
            self.crash_on_apply_kind = None
            raise Crash(f"killed while applying {m['kind']}")
        key = self._key(m)
        if key not in self.objects and m["kind"] == "PyTorchJob":
            self.job_creations += 1
        self.objects[key] = m
        self.applies[key] += 1
        return m

    def apply_all(self, ms):
        return [str(self._key(self.apply(m))) for m in ms]

    def job(self, namespace, name, kind="PyTorchJob", api_version="kubeflow.org/v1"):
        if (kind, namespace, name) not in self.objects:
            return None
        state = self.states[min(self.polls, len(self.states) - 1)]
        self.polls += 1
        if state == "Missing":
            return None
        return {"metadata": {"name": name}, "status": {"conditions": [
            {"type": state, "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"}]}}

    def pods(self, namespace, job_name):
        return [{"name": f"{job_name}-master-0", "rank": 0, "phase": "Running", "restarts": 0},
                {"name": f"{job_name}-worker-0", "rank": 1, "phase": "Running", "restarts": 1}]

    def items(self, path, query=None, not_found_ok=False):
        return []   # list calls (nodes, pods): an API server with nothing to list

    def nodes(self, label_selector=None):
        return [{"name": "n1", "capacity_type": "spot", "ready": True},
                {"name": "n2", "capacity_type": "on-demand", "ready": True}]

    def logs(self, namespace, pod, *, follow=False, container=None, tail_lines=None):
        yield f"log of {pod}"

    def delete(self, api_version, kind, name, namespace=None):
        self.deleted.append((kind, namespace, name))
        self.objects.pop((kind, namespace, name), None)
        return True


class Clock:
    def __init__(self, t=1_700_000_000.0):
        self.t = t

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += s


@pytest.fixture
def plan():
    from reclaunch.planner import make_plan
    from reclaunch.spec import load_spec
    return make_plan(load_spec(AWS_EXAMPLE))


@pytest.fixture
def world():
    cloud = FakeCloud()
    infra = FakeInfra(cloud)
    kube = FakeKube()
    clock = Clock()

    def make_env(**kw):
        base = dict(
            infra=infra, kube_for=lambda outputs: kube, clock=clock, sleep=clock.sleep,
            console=Console(file=io.StringIO(), width=200), is_tty=lambda: False,
            verify=lambda rec, keep: [u for u in cloud.tagged(rec.name)
                                      if not (keep and u.endswith("::storage"))],
            pacing=Pacing(verify_attempts=1))
        base.update(kw)
        return Env(**base)

    class World:
        pass
    w = World()
    w.cloud, w.infra, w.kube, w.clock, w.env = cloud, infra, kube, clock, make_env
    return w
