"""Issue 42: what a newcomer's spec was told wrong or not told at all (sizes, zones, GPU and
cloud names, money in a budget refusal)."""

from __future__ import annotations

import re

from reclaunch.spec import parse_spec
from tests.conftest import EXAMPLES
from tests.spec.test_first_hour import BASE, problems, sub   # the same p4d spec and helpers


# ------------------------------------------------------------------ one rule for bare sizes

def test_a_bare_size_is_gib_everywhere() -> None:
    spec = parse_spec(sub("  image: ghcr.io/acme/recsys-train:1.4",
                          "  image: ghcr.io/acme/recsys-train:1.4\n  image_size: 12"))
    assert spec.job.image_size == 12 * 2**30          # was 12 bytes: a 0 s pull
    spec = parse_spec(sub("size: 2.4TiB", "size: 1200"))
    assert spec.storage.size == 1200 * 2**30
    spec = parse_spec(sub("  image: ghcr.io/acme/recsys-train:1.4",
                          "  image: ghcr.io/acme/recsys-train:1.4\n  image_size: 12GB"))
    assert spec.job.image_size == 12 * 10**9


def test_image_size_meant_as_megabytes_is_refused_with_the_unit_to_write() -> None:
    text = sub("  image: ghcr.io/acme/recsys-train:1.4",
               "  image: ghcr.io/acme/recsys-train:1.4\n  image_size: 12000")
    [line] = problems(text)
    assert line.startswith("c.yaml:25: job.image_size: 11.7 TiB is larger than any container image")
    assert "a bare number is GiB" in line and "12000MB" in line


def test_the_schema_says_the_rule_for_both_sizes() -> None:
    from reclaunch.spec import json_schema

    props = json_schema()["$defs"]
    for model, field in (("Job", "image_size"), ("Storage", "size")):
        assert "a bare number is GiB" in props[model]["properties"][field]["description"]


# ------------------------------------------------------------------ zones, like regions

def test_an_unknown_zone_is_refused_with_the_regions_zones() -> None:
    [line] = problems(sub("zones: [us-east-1a]", "zones: [us-east-1z]"))
    assert line.startswith("c.yaml:6: zones[0]: 'us-east-1z' is not a zone of region us-east-1")
    assert "us-east-1 zones: us-east-1a, us-east-1b" in line and "us-east-1f" in line
    [line] = problems(sub("zones: [us-east-1a]", "zones: [us-esat-1a]"))
    assert "did you mean us-east-1a?" in line


def test_known_zones_pass_on_every_cloud() -> None:
    parse_spec(sub("zones: [us-east-1a]", "zones: [us-east-1f, us-east-1b]"))
    gcp = (EXAMPLES / "gcp-dcnv2-a3mega.yaml").read_text()
    parse_spec(gcp)
    bad = problems(gcp.replace("zones: [us-central1-a]", "zones: [us-central1-q]"))
    assert any("'us-central1-q' is not a zone of region us-central1" in p
               and "us-central1-a" in p for p in bad), bad
    azure = (EXAMPLES / "azure-din-nd96amsr.yaml").read_text()
    region = re.search(r"^region: (\S+)", azure, re.M).group(1)
    with_zone = re.sub(r"^region: .*$", f"region: {region}\nzones: ['2']", azure, count=1,
                       flags=re.M)
    parse_spec(with_zone)
    assert any("'4' is not a zone" in p for p in problems(with_zone.replace("['2']", "['4']")))


def test_aws_zone_letters_follow_the_catalogs_az_ids() -> None:
    from reclaunch import clouds

    rule = clouds.get("aws").zone_names
    # ap-northeast-1 has AZ IDs 1, 2 and 4 (az3 retired): letters up to d
    assert rule("ap-northeast-1", ("apne1-az1", "apne1-az2", "apne1-az4")) == (
        "ap-northeast-1a", "ap-northeast-1b", "ap-northeast-1c", "ap-northeast-1d")
    assert rule("x-1", ()) == ()


# ------------------------------------------------------------------ names people write

def test_gpu_h100_is_the_h100_as_the_schema_says() -> None:
    text = sub("instance_type: p4d.24xlarge", "gpu: H100").replace(
        "  intra_node: nvlink\n  inter_node: efa\n", "  inter_node: auto\n")
    spec = parse_spec(text)
    assert spec.gpu == "H100"
    from reclaunch.planner import make_plan

    assert make_plan(spec).gpu == "H100-80GB"
    from reclaunch.spec import json_schema

    assert "just H100" in json_schema()["properties"]["gpu"]["description"]


def test_an_ambiguous_gpu_is_refused_with_its_choices() -> None:
    [line] = problems(sub("instance_type: p4d.24xlarge", "gpu: a100"))
    assert "'a100' names 2 GPUs: A100-40GB or A100-80GB" in line


def test_cloud_amazon_gets_did_you_mean_aws() -> None:
    for word, meant in (("amazon", "aws"), ("google", "gcp"), ("k8s", "kubernetes")):
        [line] = problems(sub("cloud: aws", f"cloud: {word}"))
        assert line.startswith(f"c.yaml:4: cloud: '{word}' is not one of")
        assert line.endswith(f"did you mean {meant}?"), line


# ------------------------------------------------------------------ money

def test_money_in_a_refusal_never_shows_equal_numbers() -> None:
    from reclaunch.planner.cost import usd_apart

    assert usd_apart(5.43, 5) == ("5.43", "5.00")      # the issue's $5.43 against $5
    assert usd_apart(6.2, 5) == ("6", "5")
    assert usd_apart(5.004, 5) == ("5.0040", "5.0000")
    assert usd_apart(12345.6, 10000) == ("12,346", "10,000")


def test_plan_and_up_word_a_budget_just_under_the_p90_apart() -> None:
    from reclaunch.planner import make_plan
    from reclaunch.planner.uncertainty import budget_usd
    from reclaunch.runtime.budget import budget_problem

    est = budget_usd(make_plan(parse_spec(BASE)).cost, True)
    cap = float(int(est)) if int(est) < est - 0.005 else est - 0.004
    plan = make_plan(parse_spec(sub("max_usd: 5000", f"max_usd: {cap}")))
    [warning] = [w for w in plan.warnings if "budget.max_usd" in w]
    shown = re.search(r"estimated ([\d,.]+) USD \(P90\) exceeds budget.max_usd ([\d,.]+)", warning)
    assert shown and shown.group(1) != shown.group(2), warning
    said = re.search(r"estimated \$([\d,.]+) \(P90\) is over budget.max_usd \$([\d,.]+)",
                     budget_problem(plan))
    assert said and said.group(1) != said.group(2)


def test_a_dumped_spec_reads_back_with_the_same_sizes() -> None:
    # the journal keeps a local run's spec as YAML of its dump (providers/local _spec_text):
    # byte counts read back as GiB would make every later diagnose plan-less
    import yaml

    from reclaunch.spec.models import Spec

    spec = parse_spec(sub("  image: ghcr.io/acme/recsys-train:1.4",
                          "  image: ghcr.io/acme/recsys-train:1.4\n  image_size: 12GB"))
    for doc in (spec.model_dump(mode="json"), spec.model_dump()):
        back = Spec.model_validate(doc)
        assert (back.storage.size, back.job.image_size, back.job.workdir_max_size) == \
            (spec.storage.size, 12 * 10**9, 64 * 2**20)
    text = yaml.safe_dump(spec.model_dump(mode="json", exclude_none=True), sort_keys=False)
    assert parse_spec(text).storage.size == spec.storage.size
