import pytest
import torch

from model import DCNv2, DeepFM, FusedEmbeddingBag, PerTableEmbedding, build_model
from optim import RecsysOptimizer, build_optimizer

ROWS = [7, 3, 11, 5]


def _batch(b=6, rows=ROWS, seed=0):
    g = torch.Generator().manual_seed(seed)
    dense = torch.randn(b, 13, generator=g)
    sparse = torch.stack([torch.randint(0, r, (b,), generator=g) for r in rows], 1)
    return dense, sparse


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name", ["deepfm", "dcnv2"])
@pytest.mark.parametrize("fused", [True, False])
def test_forward_backward_shapes(name, fused):
    model = build_model(name, ROWS, 8, [16, 8], cross_rank=4 if name == "dcnv2" else 0, fused=fused)
    dense, sparse = _batch()
    logits = model(dense, sparse)
    assert logits.shape == (6,)
    loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, torch.ones(6))
    loss.backward()
    for n, p in model.named_parameters():
        assert p.grad is not None and p.grad.shape == p.shape, n


@pytest.mark.timeout(30)
def test_fused_is_one_embeddingbag_with_offsets():
    emb = FusedEmbeddingBag(ROWS, 4)
    bags = [m for m in emb.modules() if isinstance(m, torch.nn.EmbeddingBag)]
    assert len(bags) == 1 and bags[0].weight.shape == (sum(ROWS), 4) and bags[0].mode == "sum"
    assert emb.offsets.tolist() == [0, 7, 10, 21]
    ids = torch.tensor([[6, 2, 10, 4], [0, 0, 0, 0]])
    flat = emb.flat_ids(ids)
    assert flat.tolist() == [[6, 9, 20, 25], [0, 7, 10, 21]]
    out = emb(ids)
    assert torch.equal(out[0, 2], emb.weight[20]) and torch.equal(out[1, 1], emb.weight[7])
    # out-of-range ids wrap inside their own table, never into the next one
    assert emb.flat_ids(torch.tensor([[7, 3, 11, 5]])).tolist() == [[0, 7, 10, 21]]


@pytest.mark.timeout(30)
def test_fused_matches_per_table_baseline():
    fused = FusedEmbeddingBag(ROWS, 5)
    base = PerTableEmbedding(ROWS, 5)
    base.copy_from_fused(fused)
    _, sparse = _batch(32)
    torch.testing.assert_close(fused(sparse), base(sparse), rtol=0, atol=0)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("cls", [DeepFM, DCNv2])
def test_whole_model_fused_equals_per_table_with_same_weights(cls):
    torch.manual_seed(0)
    a = cls(ROWS, 8, [16], fused=True)
    b = cls(ROWS, 8, [16], fused=False)
    sd = {k: v for k, v in a.state_dict().items() if not k.startswith("embedding.")}
    b.load_state_dict(sd, strict=False)
    b.embedding.copy_from_fused(a.embedding)
    dense, sparse = _batch(16)
    torch.testing.assert_close(a(dense, sparse), b(dense, sparse))


@pytest.mark.timeout(30)
def test_deepfm_fm_term_is_pairwise_sum():
    m = DeepFM([4, 4], 3, [4])
    v = torch.randn(2, 3, 3)
    s = v.sum(1)
    fm = 0.5 * (s * s - (v * v).sum(1)).sum(1)
    pairwise = sum((v[:, i] * v[:, j]).sum(1) for i in range(3) for j in range(i + 1, 3))
    torch.testing.assert_close(fm, pairwise)
    assert m.embedding.dim == 4  # D + first-order column in the same fused lookup


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name", ["sgd", "adagrad", "rowwise_adagrad", "adam"])
def test_optimizers_step(name):
    model = build_model("deepfm", ROWS, 4, [8])
    opt = build_optimizer(name, model)
    before = model.embedding.weight.detach().clone()
    dense, sparse = _batch()
    model(dense, sparse).sum().backward()
    opt.step()
    assert not torch.equal(before, model.embedding.weight)


@pytest.mark.timeout(30)
def test_rowwise_adagrad_state_is_one_per_row_and_untouched_rows_stay():
    model = build_model("dcnv2", ROWS, 4, [8])
    opt = build_optimizer("rowwise_adagrad", model)
    assert isinstance(opt, RecsysOptimizer)
    before = model.embedding.weight.detach().clone()
    sparse = torch.zeros(3, len(ROWS), dtype=torch.long)  # only row 0 of each table is used
    model(torch.randn(3, 13), sparse).sum().backward()
    opt.step()
    w = model.embedding.weight
    assert opt.state[w]["sum"].shape == (sum(ROWS), 1)
    used = model.embedding.offsets
    unused = torch.ones(sum(ROWS), dtype=torch.bool)
    unused[used] = False
    assert torch.equal(before[unused], w.detach()[unused])
    assert not torch.equal(before[used], w.detach()[used])


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name,ref", [("sgd", torch.optim.SGD), ("adagrad", torch.optim.Adagrad),
                                      ("adam", torch.optim.Adam)])
def test_row_sparse_updates_match_torch_dense_optimizers(name, ref):
    """Skipping zero-gradient rows changes nothing for SGD/Adagrad (and for Adam's first step)."""
    torch.manual_seed(0)
    a = build_model("deepfm", ROWS, 4, [8])
    b = build_model("deepfm", ROWS, 4, [8])
    b.load_state_dict(a.state_dict())
    opt_a = build_optimizer(name, a, lr=0.01)
    opt_b = ref(b.parameters(), lr=0.01, **({"eps": 1e-8} if name != "sgd" else {}))
    if name == "adagrad":
        opt_b = ref(b.parameters(), lr=0.01, eps=1e-8, initial_accumulator_value=0.0)
    steps = 3 if name != "adam" else 1
    for i in range(steps):
        dense, sparse = _batch(seed=i)
        for m, o in ((a, opt_a), (b, opt_b)):
            m(dense, sparse).pow(2).mean().backward()
            o.step()
            o.zero_grad()
    for (n, x), y in zip(a.named_parameters(), b.parameters()):
        torch.testing.assert_close(x, y, rtol=1e-5, atol=1e-6, msg=n)


@pytest.mark.timeout(30)
def test_cpu_fast_path_gives_embeddingbag_values_and_gradients():
    emb = FusedEmbeddingBag(ROWS, 5)
    _, sparse = _batch(64)
    g = torch.randn(64, len(ROWS), 5)
    out_fast = emb(sparse)
    (out_fast * g).sum().backward()
    grad_fast, emb.bag.weight.grad = emb.bag.weight.grad.clone(), None
    emb.cpu_fast_backward = False
    out_bag = emb(sparse)
    (out_bag * g).sum().backward()
    torch.testing.assert_close(out_fast, out_bag, rtol=0, atol=0)
    torch.testing.assert_close(grad_fast, emb.bag.weight.grad)
