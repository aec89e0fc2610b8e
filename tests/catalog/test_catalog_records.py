"""Catalog and Gpu are NamedTuples (start-up cost, issue 25): the index a Catalog answers
from belongs to its own offers, also after _replace, and a Gpu reads as its fields."""

from reclaunch.catalog import Catalog, Gpu, bundled_catalog, offers


def test_a_replaced_catalog_answers_from_its_own_offers() -> None:
    cat = bundled_catalog()
    first = cat.offers[0]
    assert cat.instance(first.cloud, first.instance_type) is not None   # index built
    rest = tuple(o for o in cat.offers if o.instance_type != first.instance_type)
    smaller = cat._replace(offers=rest)
    assert smaller.instance(first.cloud, first.instance_type) is None
    assert first.instance_type not in smaller.instance_types(first.cloud)
    assert cat.instance(first.cloud, first.instance_type) is not None   # the old one unchanged
    assert smaller.regions() == sorted({o.region for o in rest})
    for _ in range(20):   # more catalogs than the index keeps: each still answers rightly
        one = Catalog(version="t", offers=(first,))
        assert one.regions() == [first.region] and one.gpus == {}
    assert cat.regions(first.cloud) == sorted({o.region for o in offers(cat, cloud=first.cloud)})


def test_a_gpu_reads_as_its_fields() -> None:
    gpu = bundled_catalog().gpu("H100-80GB")
    assert isinstance(gpu, Gpu)
    assert list(gpu._asdict()) == ["name", "memory_gib", "hbm_tbps", "fp32_tflops",
                                   "tf32_tflops", "bf16_tflops", "fp16_tflops", "source"]
    assert gpu.peak_tflops("bf16") == gpu.bf16_tflops > 0
