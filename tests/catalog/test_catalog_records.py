"""The indexes a Catalog answers from belong to its own offers, also after
dataclasses.replace, and a Gpu reads as its fields."""

import dataclasses

import pytest

from reclaunch.catalog import Catalog, Gpu, bundled_catalog, offers


def test_a_replaced_catalog_answers_from_its_own_offers() -> None:
    cat = bundled_catalog()
    first = cat.offers[0]
    assert cat.instance(first.cloud, first.instance_type) is not None   # index built
    rest = tuple(o for o in cat.offers if o.instance_type != first.instance_type)
    smaller = dataclasses.replace(cat, offers=rest)
    assert smaller.instance(first.cloud, first.instance_type) is None
    assert first.instance_type not in smaller.instance_types(first.cloud)
    assert cat.instance(first.cloud, first.instance_type) is not None   # the old one unchanged
    assert smaller.regions() == sorted({o.region for o in rest})
    one = Catalog(version="t", offers=(first,))
    assert one.regions() == [first.region] and one.gpus == {}
    assert cat.regions(first.cloud) == sorted({o.region for o in offers(cat, cloud=first.cloud)})
    assert bundled_catalog() is cat   # one bundled catalog per process, its indexes built once
    with pytest.raises(dataclasses.FrozenInstanceError):
        cat.offers = rest   # type: ignore[misc]


def test_a_gpu_reads_as_its_fields() -> None:
    gpu = bundled_catalog().gpu("H100-80GB")
    assert isinstance(gpu, Gpu)
    assert list(gpu._asdict()) == ["name", "memory_gib", "hbm_tbps", "fp32_tflops",
                                   "tf32_tflops", "bf16_tflops", "fp16_tflops", "source"]
    assert gpu.peak_tflops("bf16") == gpu.bf16_tflops > 0
