"""The `kubernetes:` block: strict, one file:line error per problem, exit 2 (no cluster read)."""

from __future__ import annotations

import pytest

from reclaunch.errors import SpecError
from reclaunch.spec import parse_spec

BASE = """\
name: byo
cloud: kubernetes
kubernetes:
  context: prod-gpu
  namespace: ml-training
job:
  image: ghcr.io/acme/recsys-train:1.4
  command: [python, train.py]
model:
  preset: deepfm
  tables: [{name: user_id, rows: 1e6}]
"""


def problems(text: str) -> list[str]:
    with pytest.raises(SpecError) as info:
        parse_spec(text, "c.yaml")
    return info.value.problems


def test_valid_block_sets_the_namespace():
    spec = parse_spec(BASE + "", "c.yaml")
    assert spec.cloud == "kubernetes" and spec.namespace == "ml-training"
    assert spec.kubernetes.context == "prod-gpu"


@pytest.mark.parametrize("edit, expected", [
    (("  namespace: ml-training", "  namespace: ml-training\n  contxt: x"),
     "c.yaml:6: kubernetes.contxt: unknown field — did you mean context?"),
    (("  namespace: ml-training", "  namespace: ml-training\n  price: {usd_per_gpu_hour: -1}"),
     "c.yaml:6: kubernetes.price.usd_per_gpu_hour"),
    (("  namespace: ml-training", "  namespace: kube-system"),
     "c.yaml:5: kubernetes.namespace: 'kube-system' is a system namespace"),
    (("cloud: kubernetes", "cloud: kubernetes\nregion: us-east-1"),
     "c.yaml:3: region: cloud: kubernetes runs on the nodes the cluster already has"),
    (("cloud: kubernetes", "cloud: kubernetes\nspot: {enabled: true}"),
     "spot.enabled: cloud: kubernetes places the job on the cluster's nodes as they are"),
    (("cloud: kubernetes", "cloud: aws\nregion: us-east-1\ninstance_type: p4d.24xlarge"),
     "c.yaml:5: kubernetes: only for cloud: kubernetes; remove it"),
    (("  namespace: ml-training", "  namespace: ml-training\n  tolerations: [{key: a, operator: Maybe}]"),
     "kubernetes.tolerations[0].operator"),
])
def test_bad_block_names_line_and_field(edit, expected):
    got = problems(BASE.replace(*edit))
    assert any(expected in p for p in got), got


def test_validate_exits_2(tmp_path):
    import subprocess
    import sys
    p = tmp_path / "c.yaml"
    p.write_text(BASE.replace("  namespace: ml-training", "  namespace: ml-training\n  contxt: x"))
    out = subprocess.run([sys.executable, "-m", "reclaunch", "validate", str(p)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "did you mean context?" in out.stderr
