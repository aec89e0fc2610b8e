"""The registry's records (clouds.CloudFacts, FabricFacts, PreviewFacts) are immutable and
read as the frozen dataclasses they were: keywords, defaults, ==, repr, a located copy."""

from __future__ import annotations

from pathlib import Path

import pytest

from reclaunch import clouds
from reclaunch.clouds import CloudFacts, FabricFacts, PreviewFacts


def test_records_are_immutable_and_their_defaults_read_only() -> None:
    aws = clouds.get("aws")
    with pytest.raises(AttributeError):
        aws.kind = "here"   # type: ignore[misc]
    bare = CloudFacts(name="x", kind="kube", provider="p")
    for m in (bare.capacity_labels, bare.system_shapes, bare.planner, bare.preview.sdk_packages):
        assert dict(m) == {}
        with pytest.raises(TypeError):
            m["k"] = 1   # type: ignore[index]
    assert bare.preview == PreviewFacts() and bare.preview.outputs("t", "n", {}) == {}
    assert bare.storage == (clouds.NO_STORAGE,) and bare.name_rule == clouds.DNS_1035 and bare.home is None


def test_keywords_defaults_equality_and_repr() -> None:
    efa = FabricFacts("efa", nic="efa")
    assert efa == FabricFacts(name="efa", nic="efa") != FabricFacts("efa")
    assert (efa.device_mode, efa.selectable, efa.mtu) == ("NetDevice", True, None)
    assert repr(efa).startswith("FabricFacts(name='efa', addons=(), nic='efa', node_group=False")
    assert clouds.fabric("efa") == clouds.get("aws").fabrics[0]
    assert clouds.fabric("nothing") == FabricFacts("nothing")


def test_every_builtin_cloud_is_placed_in_its_own_folder() -> None:
    for f in clouds.all_facts():
        assert f.home == Path(clouds.__file__).with_name("providers") / f.name
        assert clouds.get(f.name).runs_here is (f.kind == "here")
