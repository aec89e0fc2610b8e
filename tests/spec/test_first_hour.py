"""Issue 25: a spec that validates must not fail later (plan, render, or the job itself)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from reclaunch.errors import SpecError
from reclaunch.spec import parse_spec
from tests.conftest import EXAMPLES

BASE = (EXAMPLES / "aws-deepfm-p4d.yaml").read_text()
LOCAL = (EXAMPLES / "local-deepfm.yaml").read_text()
DIN = (EXAMPLES / "azure-din-nd96amsr.yaml").read_text()


def sub(old: str, new: str, text: str = BASE) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def problems(text: str) -> list[str]:
    with pytest.raises(SpecError) as info:
        parse_spec(text, "c.yaml")
    assert info.value.exit_code == 2
    return info.value.problems


def one(text: str, fragment: str) -> str:
    lines = [p for p in problems(text) if fragment in p]
    assert lines, problems(text)
    return lines[0]


def test_region_that_sells_no_matching_gpu_names_the_regions_that_do() -> None:
    text = sub("instance_type: p4d.24xlarge", "gpu: H100-80GB").replace("region: us-east-1", "region: eu-central-1")
    text = text.replace("zones: [us-east-1a]", "zones: []")
    line = one(text, "region: eu-central-1 sells no instance with 8 x H100-80GB")
    assert line.startswith("c.yaml:5: ") and "regions that do:" in line and "us-east-1" in line


def test_region_that_sells_no_such_instance_type() -> None:
    text = sub("region: us-east-1", "region: eu-west-1").replace("zones: [us-east-1a]", "zones: []")
    text = text.replace("instance_type: p4d.24xlarge", "instance_type: p5.48xlarge")
    text = text.replace("inter_node: efa", "inter_node: auto")
    line = one(text, "sells no p5.48xlarge")
    assert line.startswith("c.yaml:5: ") and "us-east-1" in line


def test_two_tables_with_one_name_are_refused_at_the_second() -> None:
    text = sub("    - {name: item_id, rows: 50_000}", "    - {name: user_id, rows: 50_000}", LOCAL)
    line = one(text, "model.tables[1].name: 'user_id' is already the name of table 0")
    at = next(i for i, ln in enumerate(text.splitlines(), 1) if "{name: user_id, rows: 50_000}" in ln)
    assert line.startswith(f"c.yaml:{at}: ") and "its own name" in line


def test_a_table_named_like_a_din_candidate_feature_is_refused() -> None:
    text = sub("    - {name: shop_id, rows: 500_000}", "    - {name: item_id__target, rows: 5}", DIN)
    assert "candidate feature of sequence table 'item_id'" in one(text, "model.tables[3].name")


def test_din_without_a_sequence_table_says_the_fix() -> None:
    text = (DIN.replace("rows: 10e6, pooling_factor: 50}", "rows: 10e6}")
               .replace("rows: 10_000, pooling_factor: 50}", "rows: 10_000}"))
    line = one(text, "model.tables: preset din needs a behaviour-sequence table")
    assert line.startswith("c.yaml:32: ") and "pooling_factor: 50" in line


def test_din_history_and_attention_reach_the_job() -> None:
    from reclaunch.catalog import load_catalog
    from reclaunch.manifests.env import job_env
    from reclaunch.planner import make_plan

    text = DIN.replace("  preset: din\n", "  preset: din\n  history_length: 30\n  attention_mlp: [64, 16]\n")
    env = job_env(make_plan(parse_spec(text, "c.yaml"), load_catalog()))
    assert env["RECLAUNCH_HISTORY_LENGTH"] == "30" and env["RECLAUNCH_ATTENTION_MLP"] == "64,16"
    # The trainer reads exactly these names (its OPTIONS table: examples/trainer/config.py).
    train = "".join(p.read_text() for p in (EXAMPLES / "trainer").glob("*.py"))
    assert '"RECLAUNCH_HISTORY_LENGTH"' in train and '"RECLAUNCH_ATTENTION_MLP"' in train


@pytest.mark.parametrize("size, gib", [("1200", 1200), ("1200GiB", 1200), ("1.2TiB", 1228.8),
                                       ("2400", 2400), ("500GB", 465.66)])
def test_a_bare_storage_size_is_gib(size: str, gib: float) -> None:
    spec = parse_spec(sub("size: 2.4TiB", f"size: {size}"), "c.yaml")
    assert spec.storage.size / 2**30 == pytest.approx(gib, rel=1e-3)


def test_storage_size_help_says_the_unit() -> None:
    from reclaunch.spec import json_schema

    desc = json_schema()["$defs"]["Storage"]["properties"]["size"]["description"]
    assert "a bare number is GiB" in desc


def test_plan_region_error_exits_2_not_1(tmp_path) -> None:
    # A catalog-less region mismatch that slips past validate still exits 2 from plan.
    from reclaunch.planner.core import candidate_offers
    from reclaunch.catalog import load_catalog

    spec = parse_spec(BASE, "c.yaml")
    object.__setattr__(spec, "region", "eu-nowhere-1")
    with pytest.raises(SpecError) as info:
        candidate_offers(spec, load_catalog())
    assert info.value.exit_code == 2 and info.value.problems[0].startswith("c.yaml:5: region:")


def test_plan_cli_exits_2_on_a_region_without_the_gpu(tmp_path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(sub("instance_type: p4d.24xlarge", "gpu: H100-80GB").replace("region: us-east-1", "region: eu-central-1")
                 .replace("zones: [us-east-1a]", "zones: []"))
    out = subprocess.run([sys.executable, "-m", "reclaunch", "plan", str(f)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2 and f"{f}:5: region:" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize("old, new, fragment", [
    ("mount_path: /data", "mount_path: data dir", "storage.mount_path: 'data dir' must be an absolute path with no spaces, e.g. /data"),
    ("  fallback: on-demand", "  fallback: on-demand\n  max_price: cheap", "spot.max_price: expected a number, got 'cheap'"),
    ("batch_size: 4096", "batch_size: 0", "job.batch_size: must be at least 1, got 0"),
])
def test_validator_wording_is_the_projects(old: str, new: str, fragment: str) -> None:
    text = "\n".join(problems(sub(old, new)))
    assert fragment in text and "Input should" not in text and "String should" not in text


def test_schema_describes_every_field_in_standard_keywords() -> None:
    import json

    from reclaunch.catalog import bundled_catalog
    from reclaunch.spec import json_schema

    schema = json_schema()
    models = {"Spec": schema, **schema["$defs"]}
    bare = [f"{m}.{f}" for m, body in models.items() for f, p in body.get("properties", {}).items()
            if not p.get("description")]
    assert bare == []
    text = json.dumps(schema)
    assert '"gt":' not in text and '"le":' not in text and '"exclusiveMinimum"' in text and '"maximum"' in text
    enum = schema["properties"]["gpu"]["anyOf"][0]["enum"]
    assert set(enum) == set(bundled_catalog().gpus) and "H100-80GB" in enum
