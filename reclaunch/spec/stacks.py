"""The training software a plan's step time assumes: named stacks and the three low-level knobs
(`job.execution`, `job.embedding_overlap`, `job.gradient_dtype`) they stand for.

A stack is a fact about software, not a number: how it launches kernels (eager, or one captured
CUDA graph / compiled step), whether the embedding lookups and their all-to-all run beside the
dense compute, what precision the dense gradients travel in, and whether the embedding tables
run as fused kernels per sharding group (TorchRec's FBGEMM TBE, HugeCTR, SOK, distributed-
embeddings) or as framework ops per table (Keras / nn.Embedding per feature). The planner's
per-kernel costs live in planner/data/planner.yaml; this table only names what each stack does.

`job.stack` sets all of it at once; a knob the spec also gives wins over the stack's. A spec
that gives neither is planned as `torchrec` (what examples/trainer/train.py runs), and the plan
says so, with the figure of the fastest stack beside it (planner/stack_view.py).
"""

from __future__ import annotations

from typing import Any, NamedTuple

KNOBS = ("execution", "embedding_overlap", "gradient_dtype")
REFERENCE_TRAINER = "trainer/train.py"


class Stack(NamedTuple):
    execution: str            # eager | cuda_graph
    embedding_overlap: str    # input | full
    gradient_dtype: str       # fp32 | fp16 | bf16
    embedding_kernels: str    # fused (one kernel group per sharding group) | per_table
    label: str
    source: str
    # Host work per step besides launches: "torchrec" = TorchRec's train pipeline and sharded
    # modules run Python per step and batch (input-dist splits, KJT permutes, awaitables);
    # "plain" = a framework's optimizer/loss call only.
    pipeline: str = "plain"


STACKS: dict[str, Stack] = {
    "torchrec": Stack(
        "eager", "input", "fp32", "fused",
        "TorchRec (eager PyTorch, fused embedding kernels, input-dist overlap)",
        "examples/trainer (TorchRec DistributedModelParallel + TrainPipelineSparseDist, DDP with "
        "fp32 gradients under autocast); facebookresearch/dlrm torchrec_dlrm/dlrm_main.py",
        pipeline="torchrec"),
    "cuda-graph": Stack(
        "cuda_graph", "input", "fp32", "fused",
        "a captured or compiled step (CUDA graphs, XLA) with fused embedding kernels",
        "NVIDIA DeepLearningExamples PyTorch/Recommendation/DLRM (--cuda_graphs) and "
        "TensorFlow2/Recommendation/DLRM_and_DCNv2 (--xla, Merlin distributed-embeddings); "
        "HugeCTR SOK with --xla"),
    "hugectr": Stack(
        "cuda_graph", "full", "fp16", "fused",
        "HugeCTR (CUDA graphs, lookups and all-to-all beside the dense compute, fp16 gradients)",
        "mlcommons training_results v0.7-v5.0 NVIDIA .../merlin_hugectr (use_cuda_graph / "
        "holistic_cuda_graph, train_intra/inter_iteration_overlap or enable_overlap, mixed_precision)"),
    "per-feature": Stack(
        "eager", "input", "fp32", "per_table",
        "one framework embedding op per feature (Keras layers, nn.Embedding per table), eager",
        "NVIDIA DeepLearningExamples TensorFlow2/Recommendation/WideAndDeep (Keras per-feature "
        "embeddings) and PyTorch/Recommendation/NCF (nn.Embedding per table)"),
    "per-feature-compiled": Stack(
        "cuda_graph", "input", "fp32", "per_table",
        "one embedding op per feature, the step compiled (XLA) or captured (CUDA graphs)",
        "NVIDIA DeepLearningExamples TensorFlow2/Recommendation/WideAndDeep (--xla)"),
}
DEFAULT = "torchrec"
# What a user whose spec names no stack is shown beside the default: the fastest published one.
ALTERNATIVE = "hugectr"


def fill_knobs(data: Any) -> Any:
    """Job's before-validator: a named stack fills the knobs the spec leaves out (the spec's own
    knobs win). An unknown name is left for the Literal check (its "did you mean")."""
    if isinstance(data, dict) and isinstance(data.get("stack"), str) and data["stack"] in STACKS:
        st = STACKS[data["stack"]]
        data = {**{k: getattr(st, k) for k in KNOBS}, **data}
    return data


def runs_reference_trainer(job) -> bool:
    return any(str(w).replace("\\", "/").endswith(REFERENCE_TRAINER) for w in job.command)


class Assumed(NamedTuple):
    """The stack a plan's figure assumes, and how the spec said so (or did not)."""

    name: str                 # a STACKS key, or "custom" (knobs only)
    stated: bool              # job.stack, a knob, or the reference trainer as the command
    how: str                  # "job.stack", "job.execution/...", "the reference trainer", "default"
    embedding_kernels: str
    pipeline: str = "plain"


def assumed(job) -> Assumed:
    """The stack of `job`, and whether the spec stated it."""
    if job.stack is not None:
        st = STACKS[job.stack]
        return Assumed(job.stack, True, "job.stack", st.embedding_kernels, st.pipeline)
    given = [k for k in KNOBS if k in job.model_fields_set]
    base = STACKS[DEFAULT]     # knobs without a stack: the reference trainer's kernels and pipeline
    if given:
        mine = tuple(getattr(job, k) for k in KNOBS)
        name = next((n for n, s in STACKS.items() if tuple(getattr(s, k) for k in KNOBS) == mine
                     and s.embedding_kernels == base.embedding_kernels and s.pipeline == base.pipeline),
                    "custom")
        return Assumed(name, True, "/".join(f"job.{k}" for k in given), base.embedding_kernels, base.pipeline)
    if runs_reference_trainer(job):
        return Assumed(DEFAULT, True, "the reference trainer (examples/trainer/train.py)",
                       base.embedding_kernels, base.pipeline)
    return Assumed(DEFAULT, False, "default: job.stack not set", base.embedding_kernels, base.pipeline)
