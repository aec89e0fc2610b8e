from __future__ import annotations

import json

import jsonschema
import pytest
import yaml

from reclaunch.spec import PRESETS, json_schema, load_spec, normalize_gpu, parse_spec
from reclaunch.spec.units import parse_count, parse_size
from tests.conftest import EXAMPLES


@pytest.mark.parametrize("raw,expected", [(1_000_000, 10**6), ("1e6", 10**6), ("1_000_000", 10**6),
                                          (1e6, 10**6), ("4.2e9", 4_200_000_000), ("42", 42)])
def test_counts(raw, expected) -> None:
    assert parse_count(raw) == expected


@pytest.mark.parametrize("raw", ["1.5", "nan", "inf", "", True, [1], "ten"])
def test_bad_counts(raw) -> None:
    with pytest.raises(ValueError):
        parse_count(raw)


@pytest.mark.parametrize("raw,expected", [("80GB", 80 * 10**9), ("100TiB", 100 * 2**40),
                                          ("1.2TiB", int(1.2 * 2**40)), ("500Gi", 500 * 2**30),
                                          (1024, 1024), ("10 MB", 10**7)])
def test_sizes(raw, expected) -> None:
    assert parse_size(raw) == expected


def test_examples_validate_and_cover_the_brief(example_paths) -> None:
    specs = {p.name: load_spec(p) for p in example_paths}
    assert {"aws", "azure", "gcp", "local"} <= {s.cloud for s in specs.values()}
    dcn = specs["gcp-dcnv2-a3mega.yaml"]
    assert dcn.instance_type == "a3-megagpu-8g" and len(dcn.model.tables) == 26
    assert sum(t.rows for t in dcn.model.tables) > 200_000_000
    assert specs["azure-din-nd96amsr.yaml"].spot.enabled
    assert specs["aws-auto-h100.yaml"].instance_type is None
    for p in example_paths:
        assert p.read_text().startswith("# yaml-language-server: $schema=./cluster.schema.json")


def test_presets_fill_defaults_and_user_wins() -> None:
    base = (EXAMPLES / "gcp-dcnv2-a3mega.yaml").read_text()
    spec = parse_spec(base)
    assert spec.model.cross_layers == PRESETS["dcnv2"]["cross_layers"] == 3
    assert spec.model.embedding_dim == 128
    spec2 = parse_spec(base.replace("preset: dcnv2", "preset: dcnv2\n  embedding_dim: 64\n  cross_layers: 2"))
    assert spec2.model.embedding_dim == 64 and spec2.model.cross_layers == 2


def test_gpu_names_normalise() -> None:
    known = ["A100-40GB", "A100-80GB", "H100-80GB", "H200-141GB"]
    assert normalize_gpu("h100", known) == "H100-80GB"
    assert normalize_gpu("H100 80GB", known) == "H100-80GB"
    assert sorted(normalize_gpu("A100", known)) == ["A100-40GB", "A100-80GB"]


def test_json_schema_accepts_every_example(example_paths) -> None:
    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    for p in example_paths:
        jsonschema.validate(yaml.safe_load(p.read_text()), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"name": "x", "cloud": "aws", "bogus": 1}, schema)


def test_committed_schema_is_current() -> None:
    committed = json.loads((EXAMPLES / "cluster.schema.json").read_text())
    assert committed == json_schema(), "run: reclaunch schema --out examples/cluster.schema.json"
