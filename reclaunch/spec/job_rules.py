"""Rules for what the job would otherwise die of after `validate` said ok. Pure and offline.

Each returns (field path, message) problems like rules.cross_check, which calls them:
    offer_in_region  the region sells the instance (or a GPU/count match), else `plan` fails
    table_names      the trainer refuses two tables (or DIN features) with one name
    din_sequence     DIN's attention needs a behaviour-sequence table
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.spec.models import Spec

Problem = tuple[tuple[str | int, ...], str]

# examples/trainer/sharding.py TARGET_SUFFIX: a DIN sequence table `item_id` also feeds the
# candidate item as feature `item_id__target` (rec_model.DIN), so that name is taken too.
DIN_TARGET_SUFFIX = "__target"


def is_sequence(spec: "Spec", table) -> bool:
    """The planner's rule (planner/shard_plan.tables_in): a DIN table looked up more than once
    per sample is the behaviour sequence."""
    return spec.model.preset == "din" and table.pooling_factor > 1


def table_names(spec: "Spec") -> list[Problem]:
    out: list[Problem] = []
    seen: dict[str, int] = {}
    for i, t in enumerate(spec.model.tables):
        names = [t.name] + ([t.name + DIN_TARGET_SUFFIX] if is_sequence(spec, t) else [])
        for name in names:
            if name in seen:
                first = spec.model.tables[seen[name]].name
                what = (f"table {seen[name]} ({first!r})" if first == name else
                        f"the candidate feature of sequence table {first!r}")
                out.append((("model", "tables", i, "name"), f"{t.name!r} is already the name of "
                            f"{what}; every table needs its own name (the trainer refuses the job)"))
                break
        for name in names:
            seen.setdefault(name, i)
    return out


def din_sequence(spec: "Spec") -> list[Problem]:
    m = spec.model
    if m.preset != "din" or any(is_sequence(spec, t) for t in m.tables):
        return []
    return [(("model", "tables"), "preset din needs a behaviour-sequence table: give the "
             f"history table pooling_factor: {m.history_length or 50} (its lookups per sample, "
             "e.g. {name: item_id, rows: 10e6, pooling_factor: 50}); without one the trainer "
             "fails on every restart")]


def offer_in_region(spec: "Spec", cat, gpu: str | None) -> list[Problem]:
    """`region` must sell what the spec asks for, or `plan` has no row to price."""
    if not spec.region or spec.region not in cat.regions(spec.cloud):
        return []   # cross_check already said so
    if spec.instance_type:
        if cat.instance(spec.cloud, spec.instance_type) is None:
            return []
        rows = [o for o in cat.offers
                if o.cloud == spec.cloud and o.instance_type == spec.instance_type]
        what = spec.instance_type
    elif gpu:
        rows = [o for o in cat.offers if o.cloud == spec.cloud and o.gpu == gpu
                and o.gpu_count == spec.gpus_per_node]
        what = f"instance with {spec.gpus_per_node} x {gpu}"
    else:
        return []
    if not rows or any(o.region == spec.region for o in rows):
        return []
    sold = sorted({o.region for o in rows})
    shown = ", ".join(sold[:12]) + (f" and {len(sold) - 12} more" if len(sold) > 12 else "")
    return [(("region",), f"{spec.region} sells no {what} in the catalog; regions that do: "
             f"{shown} (`reclaunch catalog --region R` lists what a region sells)")]
