"""Issue 39: what the trainer computes is what the plan costs and what the math says (DCNv2's
cross net, the FM term under bf16, the data-parallel tables' update)."""
import pytest
import torch
from torch import nn

import sharding
from optim import RecsysOptimizer
from tests.needs import need_module

WIDTH_ROWS = [50, 40, 30, 20]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("rank", [0, 8])
def test_dcnv2_cross_net_is_the_one_the_plan_costs(rank):
    """cross_rank 0 is full rank: one width x width matrix per layer (planner/memory.py
    "cross": x0*x0 + x0 parameters), not TorchRec's low-rank U V with rank = width (2 x0^2)."""
    need_module("torchrec", "local")
    import rec_model

    dim, layers = 8, 3
    plan = sharding.fallback(WIDTH_ROWS, dim, 1)
    model = rec_model.build("dcnv2", plan, [16], [8], layers, rank, [], torch.device("cpu"))
    cross = model.inner.inter_arch.crossnet
    width = (len(WIDTH_ROWS) + 1) * dim
    per_layer = 2 * width * rank + width if rank else width * width + width
    assert sum(p.numel() for p in cross.parameters()) == layers * per_layer
    x = torch.randn(4, width)
    assert cross(x).shape == (4, width)


class _Pooled(nn.Module):
    """A stand-in for the sharded EBC: the pooled embeddings a bf16 TBE hands back."""

    def __init__(self, values: torch.Tensor):
        super().__init__()
        self.v = values

    def forward(self, _kjt):
        return type("KT", (), {"values": lambda _self: self.v})()


@pytest.mark.timeout(60)
def test_the_fm_term_is_computed_in_fp32_under_bf16_autocast():
    """sum_{i<j} <v_i, v_j> = ((sum v)^2 - sum v^2) / 2: in bf16 both big terms carry 8 bits
    and their difference is noise. With the rest of the logit zeroed, the DeepFM logit must
    be the FM of its (bf16) inputs to fp32 accuracy."""
    need_module("torchrec", "local")
    import rec_model

    torch.manual_seed(0)
    dim, b = 16, 64
    plan = sharding.fallback(WIDTH_ROWS, dim, 1)
    model = rec_model.DeepFM(plan, [8], torch.device("cpu"))
    # Correlated fields (a shared offset): the sums are large, the pairwise products not.
    pooled = (2.0 + 0.05 * torch.randn(b, len(WIDTH_ROWS) * dim)).to(torch.bfloat16)
    model.sparse.ebc = _Pooled(pooled)
    zero = _Zero()
    model.first, model.deep = zero, zero
    dense = torch.randn(b, 13)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        got = model(dense, None).double()
        emb = model.dense_embed(dense)
    assert emb.dtype == torch.bfloat16        # what the model concatenated with the pooled values
    v = torch.cat([pooled.view(b, -1, dim), emb.unsqueeze(1)], 1).double()
    s = v.sum(1)
    want = 0.5 * (s * s - (v * v).sum(1)).sum(1)
    rel = ((got - want).abs() / want.abs()).max().item()
    assert rel < 1e-5, rel


class _Zero(nn.Module):
    def forward(self, x):
        return torch.zeros(x.shape[0], 1, dtype=x.dtype)


def _lazy_adam_reference(w, grads, lr, b1=0.9, b2=0.999, eps=1e-8):
    """Row by row, the textbook lazy Adam (torch.optim.SparseAdam's rule): a row's moments and
    weights change only on the steps its gradient is non-zero; bias correction by step count."""
    w, m, v = w.clone().double(), torch.zeros_like(w).double(), torch.zeros_like(w).double()
    for t, g in enumerate(grads, 1):
        g = g.double()
        for r in range(w.shape[0]):
            if g[r].ne(0).any():
                m[r] = b1 * m[r] + (1 - b1) * g[r]
                v[r] = b2 * v[r] + (1 - b2) * g[r] * g[r]
                w[r] -= lr * (m[r] / (1 - b1 ** t)) / ((v[r] / (1 - b2 ** t)).sqrt() + eps)
    return w


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["sgd", "adagrad", "rowwise_adagrad", "adam"])
def test_data_parallel_rows_update_on_the_device_without_a_host_sync(kind, monkeypatch):
    """The row-sparse update of a data-parallel (replicated) table selects its rows with a mask
    on the device: nothing in the step may ask the host for a data-dependent shape or value
    (nonzero, item, tolist: a CUDA sync per table per step). Same result as row by row."""
    torch.manual_seed(1)
    w0 = torch.randn(12, 4)
    grads = []
    for rows in ([0, 3, 7], [3, 5], [0, 11]):
        g = torch.zeros(12, 4)
        g[rows] = torch.randn(len(rows), 4)
        grads.append(g)
    p = nn.Parameter(w0.clone())
    opt = RecsysOptimizer([{"params": [p], "rows": True, "rowwise": True}], kind, 0.1)

    def no_sync(*_a, **_k):
        raise AssertionError("host sync in the optimizer step")
    for name in ("nonzero", "item", "tolist"):
        monkeypatch.setattr(torch.Tensor, name, no_sync)
    monkeypatch.setattr(torch, "nonzero", no_sync)
    for g in grads:
        p.grad = g.clone()
        opt.step()
    monkeypatch.undo()
    untouched = [1, 2, 4, 6, 8, 9, 10]
    assert torch.equal(p.detach()[untouched], w0[untouched])
    if kind == "adam":
        torch.testing.assert_close(p.detach().double(), _lazy_adam_reference(w0, grads, 0.1), rtol=1e-5, atol=1e-6)
    else:
        ref = nn.Parameter(w0.clone())
        dense = RecsysOptimizer([{"params": [ref], "rowwise": True}], kind, 0.1)   # no rows flag: dense math
        for g in grads:
            ref.grad = g.clone()
            dense.step()
        torch.testing.assert_close(p.detach(), ref.detach())


@pytest.mark.timeout(120)
@pytest.mark.parametrize("engine", ["ddp", "torchrec"])
def test_the_trainer_reports_the_precision_its_forward_ran_under(run_main, engine):
    """bench/gpu_check.py asserts this line (issue 39: grepping `precision=X` passed on CPU with
    autocast off). On CPU the forward runs fp32 whatever was asked; under autocast it says so."""
    import precision

    if engine == "torchrec":
        need_module("torchrec", "local")
    code, out = run_main("--engine", engine, "--table-rows", "60,40,30", "--embedding-dim", "4", "--mlp", "8",
                         "--batch-size", "16", "--steps", "3", "--log-every", "3", "--precision", "bf16")
    assert code == 0, out
    states = [line for line in out.splitlines() if line.startswith("info precision_state ")]
    assert len(states) == 1 and "autocast=off logits_dtype=float32" in states[0], out
    with torch.autocast("cpu", dtype=torch.bfloat16):
        seen = precision.observe(nn.Linear(4, 1)(torch.randn(2, 4)), "cpu")
    assert seen.startswith("autocast=bfloat16 logits_dtype=bfloat16 ")
