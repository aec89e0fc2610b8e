import numpy as np
import pytest
from tests.needs import optional_module

import data
from data import BatchStream, ShardReader, SyntheticCriteo, make_source

ROWS = data.DEFAULT_TABLE_ROWS


@pytest.mark.timeout(30)
def test_synthetic_is_deterministic_and_shaped():
    a = SyntheticCriteo(ROWS, 64, seed=7, rank=0, world_size=2).batch(3)
    b = SyntheticCriteo(ROWS, 64, seed=7, rank=0, world_size=2).batch(3)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    dense, sparse, labels = a
    assert dense.shape == (64, 13) and dense.dtype == np.float32
    assert sparse.shape == (64, 26) and sparse.dtype == np.int64
    assert labels.shape == (64,) and set(np.unique(labels)) <= {0.0, 1.0}
    assert (sparse >= 0).all() and (sparse < np.array(ROWS)).all()


@pytest.mark.timeout(30)
def test_synthetic_differs_across_ranks_batches_and_seeds():
    r0 = SyntheticCriteo(ROWS, 64, seed=7, rank=0, world_size=2)
    r1 = SyntheticCriteo(ROWS, 64, seed=7, rank=1, world_size=2)
    other = SyntheticCriteo(ROWS, 64, seed=8, rank=0, world_size=2)
    assert not np.array_equal(r0.batch(0)[1], r1.batch(0)[1])
    assert not np.array_equal(r0.batch(0)[1], r0.batch(1)[1])
    assert not np.array_equal(r0.batch(0)[1], other.batch(0)[1])


@pytest.mark.timeout(30)
def test_synthetic_ids_are_power_law_and_labels_learnable():
    src = SyntheticCriteo([10000] * 26, 4096, seed=1)
    dense, sparse, labels = src.batch(0)
    col = sparse[:, 0]
    head, tail = (col < 100).mean(), (col >= 9900).mean()  # 1% of the id space at each end
    assert head > 0.15 and head > 20 * tail
    assert 0.2 < labels.mean() < 0.8
    # labels follow the teacher: the hottest id's label rate differs from the rest's
    assert (col == 0).sum() > 50


@pytest.mark.timeout(30)
def test_batch_stream_resumes_at_position_with_any_worker_count():
    import torch
    src = SyntheticCriteo(ROWS, 8, seed=3)
    seq = [b[1] for _, b in zip(range(6), torch.utils.data.DataLoader(BatchStream(src, 0), batch_size=None))]
    resumed = [b[1] for _, b in zip(range(3), data.loader(src, 3, num_workers=2))]
    for x, y in zip(seq[3:], resumed):
        assert torch.equal(x, y)


def _write_npy_shards(root, sizes):
    rng = np.random.default_rng(0)
    rows = []
    for i, n in enumerate(sizes):
        d = rng.standard_normal((n, 13)).astype(np.float32)
        s = rng.integers(0, 50, (n, 26)).astype(np.int64)
        y = (rng.random(n) < 0.5).astype(np.float32)
        np.save(root / f"part-{i}.dense.npy", d)
        np.save(root / f"part-{i}.sparse.npy", s)
        np.save(root / f"part-{i}.labels.npy", y)
        rows.append((d, s, y))
    return [np.concatenate(x) for x in zip(*rows)]


@pytest.mark.timeout(30)
def test_npy_shard_reader_splits_ranks_and_wraps(tmp_path):
    dense, sparse, labels = _write_npy_shards(tmp_path, [10, 7])
    r0 = ShardReader(str(tmp_path), 4, rank=0, world_size=2)
    r1 = ShardReader(str(tmp_path), 4, rank=1, world_size=2)
    assert r0.num_rows == 17
    np.testing.assert_array_equal(r0.batch(0)[1], sparse[0:4])
    np.testing.assert_array_equal(r1.batch(0)[1], sparse[4:8])
    np.testing.assert_array_equal(r0.batch(1)[0], dense[8:12])   # crosses the shard boundary
    np.testing.assert_array_equal(r1.batch(1)[2], labels[[12, 13, 14, 15]])
    np.testing.assert_array_equal(r0.batch(2)[1], sparse[[16, 0, 1, 2]])  # wraps: next epoch
    assert isinstance(make_source("auto", str(tmp_path), ROWS, 4, 0, 0, 1), ShardReader)


@pytest.mark.timeout(30)
def test_make_source_falls_back_to_synthetic_and_files_requires_shards(tmp_path):
    assert isinstance(make_source("auto", str(tmp_path), ROWS, 4, 0, 0, 1), SyntheticCriteo)
    assert isinstance(make_source("auto", None, ROWS, 4, 0, 0, 1), SyntheticCriteo)
    with pytest.raises(FileNotFoundError):
        make_source("files", str(tmp_path), ROWS, 4, 0, 0, 1)


@pytest.mark.timeout(30)
def test_parquet_reader(tmp_path):
    pa = optional_module("pyarrow", "no extra installs it (the Parquet reader is optional)")
    pq = optional_module("pyarrow.parquet", "no extra installs it")
    n = 9
    cols = {"label": np.arange(n) % 2}
    cols.update({f"I{i}": np.full(n, float(i)) for i in range(1, 14)})
    cols.update({f"C{i}": np.arange(n) + i for i in range(1, 27)})
    pq.write_table(pa.table(cols), tmp_path / "part-0.parquet")
    r = ShardReader(str(tmp_path), 3)
    d, s, y = r.batch(1)
    assert d.shape == (3, 13) and s[0, 0] == 4 and list(y) == [1, 0, 1]


@pytest.mark.timeout(30)
def test_parquet_without_pyarrow_names_the_fix(tmp_path, monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_pyarrow(name, *a, **k):
        if name.startswith("pyarrow"):
            raise ImportError("no pyarrow")
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    (tmp_path / "x.parquet").write_bytes(b"PAR1")
    with pytest.raises(ImportError, match="pip install pyarrow"):
        ShardReader(str(tmp_path), 3)
