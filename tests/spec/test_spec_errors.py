"""Every bad spec exits 2 with file:line: field path and no traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from reclaunch.errors import SpecError
from reclaunch.spec import load_spec, parse_spec
from tests.conftest import EXAMPLES

BASE = (EXAMPLES / "aws-deepfm-p4d.yaml").read_text()
LOCAL = (EXAMPLES / "local-deepfm.yaml").read_text()


def sub(old: str, new: str, text: str = BASE) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def line_of(text: str, needle: str) -> int:
    """The 1-based line holding `needle`: an example may gain lines without moving the check."""
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


# (id, yaml text, expected line, expected fragment of "path: message")
BAD = [
    ("typo-top", sub("gpus_per_node: 8", "gpus_per_nodes: 8"), 8, "gpus_per_nodes: unknown field — did you mean gpus_per_node?"),
    ("typo-nested", sub("  batch_size: 4096", "  batchsize: 4096"), 27, "job.batchsize: unknown field — did you mean batch_size?"),
    ("typo-table", sub("{name: user_id, rows: 1e6}", "{name: user_id, row: 1e6}"), 36, "model.tables[0].row: unknown field — did you mean rows?"),
    ("cloud-typo", sub("cloud: aws", "cloud: gpc"), 4, "cloud: 'gpc' is not one of aws, azure, gcp, kubernetes, local — did you mean gcp?"),
    ("instance-typo", sub("instance_type: p4d.24xlarge", "instance_type: p4d.24xlarg"), 9, "instance_type: 'p4d.24xlarg' is not a known aws GPU instance — did you mean p4d.24xlarge?"),
    ("instance-other-cloud", sub("instance_type: p4d.24xlarge", "instance_type: a3-megagpu-8g"), 9, "it is a gcp instance"),
    ("fabric-ib-on-aws", sub("inter_node: efa", "inter_node: infiniband"), 12, "interconnect.inter_node: p4d.24xlarge has efa, not infiniband"),
    ("fabric-unknown", sub("inter_node: efa", "inter_node: roce"), 12, "interconnect.inter_node: 'roce' is not one of"),
    ("min-gt-max", sub("min_nodes: 2", "min_nodes: 5"), 21, "autoscaling.min_nodes: min_nodes 5 > max_nodes 4"),
    ("nodes-outside", sub("nodes: 4\n", "nodes: 8\n"), 7, "nodes: nodes 8 must be within autoscaling"),
    ("max-price-zero", sub("  fallback: on-demand", "  fallback: on-demand\n  max_price: 0"), 20, "spot.max_price: must be more than 0, got 0"),
    ("max-price-negative", sub("  fallback: on-demand", "  fallback: on-demand\n  max_price: -3"), 20, "spot.max_price"),
    ("fallback-bad", sub("fallback: on-demand", "fallback: ondemand"), 19, "spot.fallback: 'ondemand' is not one of on-demand, none — did you mean on-demand?"),
    ("name-upper", sub("name: criteo-deepfm", "name: Criteo_DeepFM"), 3, "name: 'Criteo_DeepFM' must be 1..40 characters"),
    ("name-long", sub("name: criteo-deepfm", "name: " + "a" * 41), 3, "name:"),
    ("name-missing", sub("name: criteo-deepfm\n", ""), 3, "name: required field is missing"),
    ("gpu-mismatch", sub("instance_type: p4d.24xlarge", "instance_type: p4d.24xlarge\ngpu: H100-80GB"), 10, "gpu: p4d.24xlarge has A100-40GB, not H100-80GB"),
    ("gpu-count-mismatch", sub("gpus_per_node: 8", "gpus_per_node: 4"), 8, "gpus_per_node: p4d.24xlarge has 8 GPUs per node, not 4"),
    ("gpu-unknown", sub("instance_type: p4d.24xlarge", "gpu: B300"), 9, "gpu: unknown GPU 'B300'"),
    ("rows-word", sub("rows: 1e6", "rows: lots"), 36, "model.tables[0].rows: expected a number like 1000000"),
    ("rows-fraction", sub("rows: 1e6", "rows: 1.5"), 36, "model.tables[0].rows: expected a whole number"),
    ("rows-absurd", sub("rows: 1e6", "rows: 1e300"), 36, "model.tables[0].rows: must be at most 1,000,000,000,000"),
    ("size-word", sub("size: 2.4TiB", "size: huge"), 15, "storage.size: expected a size such as 80GB"),
    ("storage-wrong-cloud", sub("kind: fsx-lustre", "kind: filestore"), 14, "storage.kind: 'filestore' is not available on aws"),
    ("storage-size-missing", sub("  size: 2.4TiB\n", ""), 13, "storage.size: required for storage kind fsx-lustre"),
    ("job-list", sub("job:\n", "job: [1]\nnotjob:\n"), 23, "job: expected a mapping of settings, got a list"),
    ("precision", sub("precision: bf16", "precision: bf17"), 28, "job.precision: 'bf17' is not one of fp32, tf32, fp16, bf16 — did you mean bf16?"),
    ("optimizer", sub("optimizer: adam", "optimizer: adamw"), 29, "job.optimizer: 'adamw' is not one of"),
    ("batch-zero", sub("batch_size: 4096", "batch_size: 0"), 27, "job.batch_size: must be at least 1, got 0"),
    ("epochs-bool", sub("epochs: 1,", "epochs: yes,"), 31, "job.dataset.epochs: expected a number, got true"),
    ("region-missing", sub("region: us-east-1\n", ""), 3, "region: required for cloud: aws"),
    ("image-missing", sub("  image: ghcr.io/acme/recsys-train:1.4\n", ""), 23, "job.image: required for cloud clusters"),
    ("env-name", sub("  env: {}", "  env: {1BAD: x}"), 42, "nccl.env.1BAD"),
    ("duplicate-key", sub("nodes: 4\n", "nodes: 4\nnodes: 2\n"), 8, "nodes: duplicate key (first at line 7)"),
    ("teardown-when", sub("when: on_success", "when: on-success"), 44, "teardown.when: 'on-success' is not one of on_success, on_completion, never — did you mean on_success?"),
    ("budget-negative", sub("max_usd: 5000", "max_usd: -1"), 47, "budget.max_usd: must be more than 0, got -1"),
    ("local-region", sub("cloud: local", "cloud: local\nregion: us-east-1", LOCAL), 5, "region: cloud: local runs on this machine and takes no region"),
    ("local-instance", sub("cloud: local", "cloud: local\ninstance_type: p5.48xlarge", LOCAL), 5, "instance_type: cloud: local runs on this machine"),
    ("local-fabric", sub("storage:", "interconnect: {inter_node: efa}\nstorage:", LOCAL), 7, "interconnect.inter_node: cloud: local uses gloo"),
    ("tables-empty", sub("  tables:\n    - {name: user_id, rows: 100_000}\n    - {name: item_id, rows: 50_000}\n    - {name: category, rows: 1_000}\n", "  tables: []\n", LOCAL),
     line_of(LOCAL, "  tables:"), "model.tables: needs at least 1 item(s)"),
    ("zone-other-region", sub("zones: [us-east-1a]", "zones: [us-west-2a]"), 6, "zones[0]: 'us-west-2a' is not a zone of region us-east-1"),
    ("namespace-system", sub("nodes: 4\n", "nodes: 4\nnamespace: kube-system\n"), 8, "namespace: 'kube-system' is a system namespace"),
    ("command-empty-word", sub("command: [python, /app/train.py]", "command: ['']"), 25, "job.command[0]: must not be empty"),
    ("nan-price", sub("  fallback: on-demand", "  fallback: on-demand\n  max_price: .nan"), 20, "spot.max_price: must be a finite number, got nan"),
    ("spot-no-storage", sub("storage:\n  kind: fsx-lustre\n  size: 2.4TiB\n  mount_path: /data\n", ""), 14, "spot.enabled: needs storage for checkpoints every node mounts"),
    ("spot-ckpt-off-storage", sub("checkpoint: {path: /data/ckpt", "checkpoint: {path: /ckpt"), 30, "job.checkpoint.path: /ckpt is outside the storage mount /data"),
    # A bare impossible date: PyYAML's constructor used to raise datetime's ValueError (exit 1).
    ("date-impossible", sub("name: criteo-deepfm", "name: 2026-13-45"), 3, "name: '2026-13-45' reads as a date and is not one (month must be in 1..12); quote it if it is text"),
    ("date-impossible-nested", sub("  batch_size: 4096", "  batch_size: 2026-02-30"), 27, "job.batch_size: '2026-02-30' reads as a date and is not one"),
    ("preset-unknown", sub("preset: deepfm", "preset: deepfn"), 33, "model.preset: 'deepfn' is not one of deepfm, dcnv2, din, dlrm, wide_deep, custom — did you mean deepfm?"),
]


@pytest.mark.parametrize("text,line,fragment", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_spec_names_line_and_field(text: str, line: int, fragment: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_spec(text, "cluster.yaml")
    assert fragment in "\n".join(info.value.problems), info.value.problems
    matching = [p for p in info.value.problems if fragment in p]
    assert matching[0].startswith(f"cluster.yaml:{line}: "), matching[0]


def test_there_are_at_least_25_distinct_bad_specs() -> None:
    assert len({b[0] for b in BAD}) >= 25 and len({b[1] for b in BAD}) == len(BAD)


GARBAGE = [
    ("empty", b"", "empty file"),
    ("only-comment", b"# nothing\n", "empty file"),
    ("list", b"- a\n- b\n", "expected a mapping of cluster settings, got list"),
    ("scalar", b"hello\n", "expected a mapping of cluster settings, got str"),
    ("syntax", b"name: [a\n", "YAML syntax error"),
    ("tabs", b"name: a\n\tcloud: aws\n", "YAML syntax error"),
    ("binary", bytes(range(256)) * 4, "binary data"),
    ("latin1", "name: caf\u00e9\n".encode("latin-1"), "not UTF-8 text"),
    ("control", b"name: \x07bell\n", "not a YAML file"),
    ("deep", b"a: " + b"[" * 200 + b"]" * 200 + b"\n", "nest"),
    ("int-keys", b"1: 2\n", "field names must be text"),
    ("alias-bomb", b"a: &a [1,2]\nb: &b [*a,*a]\nc: [*b,*b]\n", "unknown field"),
]


@pytest.mark.parametrize("data,fragment", [g[1:] for g in GARBAGE], ids=[g[0] for g in GARBAGE])
def test_garbage_in_one_line_out(tmp_path, data: bytes, fragment: str) -> None:
    f = tmp_path / "cluster.yaml"
    f.write_bytes(data)
    with pytest.raises(SpecError) as info:
        load_spec(f)
    assert fragment in str(info.value)
    assert str(info.value).startswith(f"{f}")


def test_missing_file_and_directory(tmp_path) -> None:
    with pytest.raises(SpecError, match="no such file"):
        load_spec(tmp_path / "nope.yaml")
    with pytest.raises(SpecError, match="is a directory"):
        load_spec(tmp_path)


def test_cli_exit_2_and_no_traceback(tmp_path) -> None:
    bad = tmp_path / "cluster.yaml"
    bad.write_text(BAD[0][1])
    garbage = tmp_path / "garbage.yaml"
    garbage.write_bytes(bytes(range(256)))
    proc = subprocess.run([sys.executable, "-m", "reclaunch", "validate", str(bad), str(garbage)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines == [f"{bad}:8: gpus_per_nodes: unknown field — did you mean gpus_per_node?",
                     f"{garbage}:1: binary data, not a YAML file"]
