"""A fourth cloud from outside the tree, from its own files plus one registration (issues 23, 40).

tests/extend/toycloud/ is the toy's package: facts.py (its storage kind `toyfs`, reservation
kind `toy-reservation`, object store `toyobj://`, fabric `toyfab`, planner numbers with its
bucket prices and startup steps), fabric.py (the fabric's NCCL profile), provider.py (its
credential check and stack program), stack.py (stacks.StackFacts: pools, placement, policy
rules, Kubernetes minors; a Pulumi program of toy resources), offers.csv, addons.yaml, and an
empty __init__.py. The
tests copy it to a temporary directory, so reclaunch finds it only by its registration: the
entry point `toy = toycloud.facts` of the group `reclaunch.clouds` (a dist-info folder on the
path, as `pip install` leaves it) or RECLAUNCH_CLOUDS=toycloud.facts. Nothing else in the
repository names it. What each test below checks is what it asserts, no more."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reclaunch import clouds

TOY = Path(__file__).with_name("toycloud")
ROOT = Path(__file__).resolve().parents[2]

SPEC = """\
name: toy-run
cloud: toy
region: toy-east-1
nodes: 2
gpus_per_node: 8
instance_type: toy-gpu-8x
storage: {kind: toyfs, size: 250GiB, mount_path: /data, existing: share-0001}
spot: {enabled: true, fallback: on-demand}
job:
  image: ghcr.io/acme/recsys-train:1.4
  command: [python, /app/train.py]
  batch_size: 8192
  dataset: {samples: 1.0e8, epochs: 1}
model:
  preset: dlrm
"""
# Reserved capacity (not spot), checkpoints in the toy's object store.
RESERVED = SPEC.replace("spot: {enabled: true, fallback: on-demand}",
                        "capacity: {kind: toy-reservation, reservation: tr-000123}").replace(
    "  batch_size: 8192", "  batch_size: 8192\n  checkpoint: {path: toyobj://ckptbucket/run-1}")


@pytest.fixture()
def toy(tmp_path, monkeypatch):
    """Registered through RECLAUNCH_CLOUDS, in this process."""
    shutil.copytree(TOY, tmp_path / "toycloud")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(clouds.PLUGINS_ENV, "toycloud.facts")
    clouds.reload()
    yield
    monkeypatch.delenv(clouds.PLUGINS_ENV)
    clouds.reload()
    for mod in [m for m in sys.modules if m == "toycloud" or m.startswith("toycloud.")]:
        del sys.modules[mod]


def test_toy_cloud_and_fabric_validate_plan_and_render(toy):
    from reclaunch.manifests.job import render
    from reclaunch.planner import make_plan
    from reclaunch.spec import parse_spec

    assert "toy" in clouds.names() and "toyfab" in clouds.selectable_fabrics()
    spec = parse_spec(SPEC, "toy.yaml")                         # validate
    plan = make_plan(spec)                                      # plan
    assert plan.cloud == "toy" and plan.instance_type == "toy-gpu-8x"
    assert plan.fabric == "toyfab-x"                            # the toy fabric's own profile
    assert plan.constants["control_plane_usd_per_hour"] == 0.05  # the toy's planner numbers
    assert plan.constants["reclaim_rate_per_node_hour"] == 0.001
    assert plan.constants["storage_usd_per_gb_month"] == 0.09    # its storage kind's price
    assert any("250 GiB becomes 300 GiB of toyfs" in w for w in plan.warnings)   # its steps
    steps = [(s.name.split(" (")[0], s.seconds, s.billed) for s in plan.startup.steps[:3]]
    assert steps == [("toy control plane", 300, False), ("toy GPU nodes", 110, True),  # its startup
                     ("file system", 900 - 410, True)]                  # and its toyfs's creation
    objs = render(plan)                                         # render
    job = next(o for o in objs if o["kind"] == "PyTorchJob")
    pod = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert env["NCCL_TOY_FABRIC"] == "1"
    assert pod["containers"][0]["resources"]["limits"]["toy.example/nic"] == 1
    assert {"key": "toy.example/spot", "operator": "Equal", "value": "true",
            "effect": "NoSchedule"} in pod["tolerations"]
    assert {"name": "data", "persistentVolumeClaim": {"claimName": "toy-run-data"}} in pod["volumes"]

    import stacks
    assert stacks.manual_prerequisites(plan) == ["toyfab: enable the toy fabric on the account"]


def test_toy_rules_come_from_its_facts(toy):
    """Its storage kind's maximum, its reservation's id pattern and fixed count, its object
    store's name rule: each is a validate error worded from the toy's records."""
    from reclaunch.errors import SpecError
    from reclaunch.spec import parse_spec

    assert parse_spec(RESERVED, "toy.yaml").capacity.kind == "toy-reservation"
    for text, needle in [
        (RESERVED.replace("size: 250GiB", "size: 11TiB"), "over the 10 TiB toyfs is sold at"),
        (RESERVED.replace("tr-000123", "cr-0123456789abcdef0"), "is not a toy-reservation reservation (e.g. tr-000123)"),
        (RESERVED.replace("nodes: 2", "nodes: 2\nautoscaling: {min_nodes: 2, max_nodes: 4}"),
         "a toy reservation holds a fixed number of nodes"),
        (RESERVED.replace("toyobj://ckptbucket", "toyobj://Bad_Bucket"), "3-20 lowercase letters"),
        (RESERVED.replace("toyobj://", "s3://"), "s3:// is not reachable with toy's workload identity; use toyobj://"),
        (RESERVED.replace("kind: toy-reservation", "kind: odcr"), "'odcr' is not sold on toy; use toy-reservation"),
    ]:
        with pytest.raises(SpecError, match="toy.yaml") as e:
            parse_spec(text, "toy.yaml")
        assert needle in str(e.value), (needle, str(e.value))


def test_toy_policy_rules_hold_and_can_fail(toy):
    """The toy stack's rules run for its policies; a public toy API is a finding."""
    from reclaunch.planner import make_plan
    from reclaunch.spec import parse_spec
    from stacks.policy import check

    plan = make_plan(parse_spec(RESERVED, "toy.yaml"))
    cluster = {"type": "toy:index:Cluster", "name": "toy-run-cluster", "taggable": "tags",
               "tags": {"reclaunch-cluster": "toy-run", "reclaunch-managed": "true"},
               "inputs": {"publicApi": False}}
    assert check(plan, [cluster]) == []
    opened = {**cluster, "inputs": {"publicApi": True}}
    assert check(plan, [opened]) == ["control-plane-private: toy-run-cluster: toy API public"]


@pytest.fixture()
def installed(tmp_path):
    """The toy registered the way `pip install` would leave it: its package and a dist-info
    folder whose entry_points.txt names it in the reclaunch.clouds group, on PYTHONPATH."""
    site = tmp_path / "site"
    shutil.copytree(TOY, site / "toycloud")
    dist = site / "toycloud-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toycloud\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[{clouds.GROUP}]\ntoy = toycloud.facts\n")
    (tmp_path / "toy.yaml").write_text(RESERVED)
    fake = tmp_path / "bin" / "pulumi"          # `up` asks for the Pulumi CLI first
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("TOY_TOKEN", clouds.PLUGINS_ENV)}
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT), str(site)]),
               RECLAUNCH_HOME=str(tmp_path / "home"))

    def run(*args: str, token: bool = True, path: str | None = None):
        e = {**env, **({"TOY_TOKEN": "t"} if token else {}), **({"PATH": path} if path else {})}
        return subprocess.run([sys.executable, "-m", "reclaunch", *args], capture_output=True,
                              text=True, env=e, timeout=300, cwd=tmp_path)
    run.fake_bin = str(fake.parent)
    return run


def test_toy_cloud_through_every_pure_verb(installed):
    """validate, plan --json, render (and --with-storage), check, preview --json and
    up --dry-run on the toy, registered by its entry point only."""
    ok = installed("validate", "toy.yaml")
    assert ok.returncode == 0 and "toy, 2 x 8 on toy-gpu-8x" in ok.stdout, ok.stderr

    out = installed("plan", "toy.yaml", "--json")
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)
    assert (plan["cloud"], plan["instance_type"]) == ("toy", "toy-gpu-8x")
    assert plan["nccl_env"]["NCCL_TOY_FABRIC"] == "1"
    assert plan["constants"]["storage_usd_per_gb_month"] == 0.09
    bucket = plan["constants"]["checkpoint_bucket"]                   # priced as a bucket,
    assert bucket["bytes"] > 0 and bucket["requests_usd"] > 0         # at the toy's own prices
    assert bucket["source"].startswith("toyobj price list") and bucket["as_of"] == "2026-11-30"

    out = installed("render", "toy.yaml")
    assert out.returncode == 0, out.stderr
    assert 'toy.example/identity: bucket' in out.stdout                # its stack's pod identity
    assert "toyobj://ckptbucket/run-1" in out.stdout                  # checkpoints in its store
    assert "PersistentVolumeClaim toy-run-data (toyfs)" in out.stderr  # the stack creates it
    out = installed("render", "toy.yaml", "--with-storage")
    assert out.returncode == 0 and 'driver: toyfs.csi.toy.example' in out.stdout, out.stderr

    out = installed("check", "toy.yaml")
    assert "credentials toy" in out.stdout and "TOY_TOKEN is set" in out.stdout, out.stdout
    assert "check by hand: `toyctl quota --region toy-east-1`" in out.stdout
    assert "toy reservation tr-000123: buy it in the toy console" in out.stdout
    out = installed("check", "toy.yaml", token=False)
    assert out.returncode == 1 and "no toy credentials found  ->  export TOY_TOKEN" in out.stdout

    out = installed("preview", "toy.yaml", "--json")
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr
    shown = json.loads(out.stdout)
    types = {r["type"] for r in shown["resources"]}
    assert {"toy:index:Cluster", "toy:index:NodePool", "toy:index:FileSystem"} <= types
    cluster = next(r for r in shown["resources"] if r["type"] == "toy:index:Cluster")
    assert cluster["inputs"]["version"] == "1.36"                     # its stack's dated minors
    fs = next(r for r in shown["resources"] if r["type"] == "toy:index:FileSystem")
    assert fs["inputs"]["sizeGib"] == 300 and fs["tags"]["reclaunch-cluster"] == "toy-run"
    assert shown["policy"] == [] and shown["schedule"] and all(r["fits"] for r in shown["schedule"])

    out = installed("up", "toy.yaml", "--dry-run")
    assert out.returncode == 0, out.stderr
    assert "toyfab: enable the toy fabric on the account" in out.stdout
    assert "toy reservation tr-000123" in out.stdout and "PyTorchJob" in out.stdout


def test_toy_up_asks_the_same_credential_check(installed):
    """`up` stops at the toy's own credential check (the one `check` printed), before any
    stack is created."""
    out = installed("up", "toy.yaml", "--yes", token=False,
                    path=os.pathsep.join([installed.fake_bin, "/usr/bin", "/bin"]))
    assert out.returncode == 1 and "no toy credentials found" in out.stderr, out.stderr
    assert "export TOY_TOKEN=<token>" in out.stderr


def test_toy_choices_are_explained(toy):
    """An inter_node the toy cloud's instance lacks, and a cloud nobody registered, are one
    clear line each, naming the registered choices."""
    from reclaunch.errors import SpecError
    from reclaunch.spec import parse_spec

    with pytest.raises(SpecError, match="'toyy' is not one of aws, azure, gcp, kubernetes, local, toy"):
        parse_spec(SPEC.replace("cloud: toy", "cloud: toyy"), "toy.yaml")
    spec = parse_spec(SPEC.replace("nodes: 2", "nodes: 2\ninterconnect: {inter_node: toyfab}"),
                      "toy.yaml")
    assert spec.interconnect.inter_node == "toyfab"


def test_unregistered_toy_is_unknown():
    """Without a registration the toy cloud does not exist: the tests above cannot pass by accident."""
    from reclaunch.errors import SpecError
    from reclaunch.spec import parse_spec

    assert "toy" not in clouds.names()
    with pytest.raises(SpecError, match="'toy' is not one of aws, azure, gcp, kubernetes, local"):
        parse_spec(SPEC, "toy.yaml")
