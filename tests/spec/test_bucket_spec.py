"""job.checkpoint.path / job.dataset.path as bucket URLs, and storage.kind: bucket (spec/buckets.py)."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from reclaunch.errors import SpecError
from reclaunch.spec import load_spec, parse_spec
from reclaunch.spec.buckets import parse

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "aws-spot-bucket.yaml"


def spec_text(**changes) -> str:
    doc = yaml.safe_load(EXAMPLE.read_text())
    for dotted, value in changes.items():
        *head, last = dotted.split("__")
        node = doc
        for k in head:
            node = node.setdefault(k, {})
        if value is None:
            node.pop(last, None)
        else:
            node[last] = value
    return yaml.safe_dump(doc, sort_keys=False)


def error(**changes) -> str:
    with pytest.raises(SpecError) as e:
        parse_spec(spec_text(**changes), "c.yaml")
    return str(e.value)


def test_spot_with_a_bucket_needs_no_file_system():
    s = load_spec(EXAMPLE)
    assert s.spot.enabled and s.storage.kind == "bucket"
    # A bucket the user names works the same with no storage at all.
    assert parse_spec(spec_text(storage__kind="none"), "c.yaml").job.checkpoint.path.startswith("s3://")


def test_spot_without_file_system_or_bucket_still_refused():
    msg = error(storage__kind="none", job__checkpoint__path="/data/ckpt")
    assert "spot.enabled" in msg and "s3://BUCKET/PREFIX" in msg


@pytest.mark.parametrize("path, needle", [
    ("gs://b-ckpt/p", "gs:// is not reachable with aws"),
    ("s4://b-ckpt/p", "did you mean s3://"),
    ("s3://Bad_Bucket/p", "not a valid bucket name"),
    ("s3://b-ckpt", "name a prefix"),
    ("s3://b-ckpt/a/../b", "'..'"),
])
def test_bad_checkpoint_urls_name_the_field(path, needle):
    msg = error(job__checkpoint__path=path)
    assert "job.checkpoint.path" in msg and needle in msg


def test_bucket_kind_needs_a_url_checkpoint_and_url_data():
    assert "storage.kind" in error(job__checkpoint__path="/data/ckpt", spot__enabled=False)
    assert "job.dataset.path" in error(job__dataset__path="/data/criteo")
    ok = parse_spec(spec_text(job__dataset__path="s3://acme-data/criteo/"), "c.yaml")
    assert ok.job.dataset.path == "s3://acme-data/criteo/"


def test_storage_kind_typo_gets_did_you_mean():
    assert "did you mean bucket" in error(storage__kind="buckt")


def test_azure_existing_container_needs_its_account():
    u = parse("abfs://ckpt@acct01.dfs.core.windows.net/run-1")
    assert (u.bucket, u.account, u.prefix) == ("ckpt", "acct01", "run-1")
    assert u.url == "abfs://ckpt@acct01.dfs.core.windows.net/run-1"
    from reclaunch.spec.buckets import problems
    assert problems("az://ckpt/run", "azure", created=True, want_prefix=True) == []
    assert "storage account" in problems("az://ckpt/run", "azure", created=False, want_prefix=True)[0]
    assert problems("s3://b-ckpt/p", "local", created=False, want_prefix=True) == []
