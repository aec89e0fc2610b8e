"""Which training software a plan's figure assumes, and what the other stack would give.

A plan's step time depends on the stack as much as on the hardware: the same MLPerf DCNv2 job
on 8 x H100 runs several times faster under HugeCTR (CUDA graphs, embeddings beside the dense
compute, fp16 gradients) than under eager TorchRec. The plan names the stack it assumed
(spec/stacks.py: job.stack, the knobs, the reference trainer as the command, or the default)
and, when the spec does not say, rates the same sharding under the fastest published stack so
the reader sees both figures. The other figure is a separate, labelled scenario: the range
(uncertainty.py) covers the assumed stack only, and the scenario is not one the reference
trainer can switch to (it has no captured or compiled step), so the line says so.
"""

from __future__ import annotations

from typing import Any

from reclaunch.spec.stacks import ALTERNATIVE, KNOBS, STACKS, assumed


def describe(spec) -> dict[str, Any]:
    """The `stack` of plan --json (without the alternative)."""
    a = assumed(spec.job)
    st = STACKS.get(a.name)
    return {"name": a.name, "label": st.label if st is not None else "the knobs as the spec gives them",
            "stated": a.stated, "how": a.how,
            **{k: getattr(spec.job, k) for k in KNOBS},
            "embedding_kernels": a.embedding_kernels, "pipeline": a.pipeline}


def alternative(spec, throughput) -> dict[str, Any]:
    """The same job planned under the ALTERNATIVE stack (its own sharding search:
    `throughput(spec)` -> samples/s): {name, label, samples_per_s}."""
    st = STACKS[ALTERNATIVE]
    job = spec.job.model_copy(update={"stack": ALTERNATIVE, **{k: getattr(st, k) for k in KNOBS}})
    return {"name": ALTERNATIVE, "label": st.label,
            "samples_per_s": throughput(spec.model_copy(update={"job": job})),
            "note": "MLPerf-tuned HugeCTR, not what examples/trainer runs; not in the plan's range"}


def unexpressed(stack: dict[str, Any], nodes: int) -> str | None:
    """What the stack does across nodes that no spec field describes, said in the plan."""
    if stack["name"] != "hugectr" or nodes <= 1:
        return None
    return ("job.stack: hugectr across nodes: its hierarchical all-to-all and frequency-based "
            "hybrid embeddings (the hottest rows replicated, only the rest exchanged; MLPerf DLRM "
            "HybridSparseEmbedding) are not in the spec: planned with per-table sharding, which "
            "exchanges every lookup's output")


def known_biases(stack: dict[str, Any], gpu: str | None, nodes: int) -> list[str]:
    """Where the stack's figure is known to miss published runs it was never fitted to, said in
    the plan rather than corrected by a constant fitted to those rows (planner review 2026-12-03,
    defects 6 and 7: bench/bench_calibration.py prints the rows)."""
    out = []
    if stack["embedding_kernels"] == "per_table" and stack["execution"] == "eager":
        out.append("per-feature stack: a TensorFlow 1 estimator with feature columns copies embedding "
                   "inputs between host and device per feature (NVIDIA DeepLearningExamples TF1 "
                   "Wide&Deep's known issue), which no spec field describes: such jobs ran 3-12x "
                   "slower than this figure")
    if stack["name"] == "hugectr" and nodes == 1 and (gpu or "").split("-")[0] in ("H200", "B200"):
        out.append("hugectr on one H200/B200 node: published MLPerf runs (v4.1-v5.1) did about 10-15% less "
                   "than this figure; expect the lower part of the range")
    return out


def line(stack: dict[str, Any], rate) -> str:
    """The plan table's `stack` line: what was assumed, how the spec said it, the alternative."""
    how = stack["how"] if stack["stated"] else f"assumed, {stack['how']}"
    text = f"{stack['name']} ({how}): {stack['label']}"
    alt = stack.get("alternative")
    if alt:
        text += (f"; separate scenario, not in the range: {alt['name']} as tuned for MLPerf "
                 f"({rate(alt['samples_per_s'])} samples/s; not what examples/trainer runs)")
    return text
