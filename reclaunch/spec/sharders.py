"""What each TorchRec module type can be sharded to, and which tables are which module.

The reference trainer (examples/trainer/rec_model.py) puts pooled tables in an
EmbeddingBagCollection and DIN's behaviour-sequence tables (looked up many times per sample,
not pooled) in an EmbeddingCollection. TorchRec builds each with its own sharder, and a
sharding type the sharder does not list raises at model build. Data from pytorch/torchrec
1.8.0 (the venv's torchrec==1.8.0):

  EmbeddingBagCollection  torchrec/distributed/embedding_types.py BaseEmbeddingSharder.sharding_types:
                          data_parallel, table_wise, column_wise, table_column_wise, and on CUDA
                          row_wise, table_row_wise, grid_shard
  EmbeddingCollection     torchrec/distributed/embedding.py EmbeddingCollectionSharder.sharding_types:
                          data_parallel, table_wise, column_wise, row_wise (any device)

Only the types reclaunch plans and executes are listed (not table_column_wise, grid_shard).
Kernels: BaseEmbeddingSharder.compute_kernels gives data_parallel the dense kernel only;
construct_module_sharding_plan (torchrec/distributed/sharding_plan.py _get_compute_kernel)
takes fused or dense for the others, except that table_row_wise() takes no kernel argument and
picks fused whenever the optimizer runs in backward (the trainer's case), so it is fused only.
FBGEMM's fused kernels need a shard width divisible by 4 (batched_embedding_kernel.py
_assert_local_cols_divisible_by_4).
"""

from __future__ import annotations

TORCHREC_VERSION = "1.8.0"

EBC, EC = "EmbeddingBagCollection", "EmbeddingCollection"

# module type -> sharding types its TorchRec sharder accepts on CUDA (of those we plan). What a
# device kind runs at all (CPU + gloo: fewer) is planner.yaml's sharding.supported.
MODULE_SHARDING: dict[str, tuple[str, ...]] = {
    EBC: ("data_parallel", "table_wise", "row_wise", "column_wise", "table_row_wise"),
    EC: ("data_parallel", "table_wise", "row_wise", "column_wise"),
}

# sharding type -> compute kernels the trainer's TorchRec path can give it
KERNELS: dict[str, tuple[str, ...]] = {
    "data_parallel": ("dense",),
    "table_wise": ("fused", "dense"),
    "row_wise": ("fused", "dense"),
    "column_wise": ("fused", "dense"),
    "table_row_wise": ("fused",),
}
FUSED_WIDTH_MULTIPLE = 4

# spec model.sharding value -> TorchRec sharding type
PIN = {"data": "data_parallel", "table_wise": "table_wise", "row_wise": "row_wise",
       "column_wise": "column_wise", "table_row_wise": "table_row_wise"}


def is_sequence(model, table) -> bool:
    """DIN's behaviour sequence: a din model's tables looked up more than once per sample
    (planner/memory.dense_shape treats the same tables as the attention's sequence)."""
    return model.preset == "din" and table.pooling_factor > 1


def module_type(model, table) -> str:
    return EC if is_sequence(model, table) else EBC


def module_kinds(model, table) -> tuple[str, ...]:
    return MODULE_SHARDING[module_type(model, table)]


def kernel_for(kind: str, width: int) -> str | None:
    """The compute kernel a shard of `width` columns gets under `kind`; None: none can run it."""
    ok = KERNELS[kind]
    if "fused" in ok and width % FUSED_WIDTH_MULTIPLE == 0:
        return "fused"
    return "dense" if "dense" in ok else None


def pin_problems(model) -> list[tuple[tuple[str | int, ...], str]]:
    """Pins a table's module type cannot be sharded to: (field path, message), for validate."""
    out = []
    whole = PIN.get(model.sharding)
    for i, t in enumerate(model.tables):
        want, path = (t.sharding, ("model", "tables", i, "sharding")) if t.sharding else \
            (whole, ("model", "sharding"))
        if want is None:
            continue
        mod = module_type(model, t)
        ok = MODULE_SHARDING[mod]
        if want not in ok:
            why = "a behaviour-sequence table" if mod == EC else "a pooled table"
            out.append((path, f"{want} cannot shard {t.name}: {why} is a TorchRec {mod}, whose "
                        f"sharder (torchrec {TORCHREC_VERSION}) takes {', '.join(ok)}"))
            if not t.sharding:
                break
    return out
