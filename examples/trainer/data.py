"""Batches by position: synthetic Criteo-like data, or real shards under DATA_DIR.

Every source answers `batch(k)` = the k-th micro-batch of THIS rank, a pure function of
(seed, rank, world_size, k). Resuming is therefore just "start at k = step * grad_accum":
no iterator state, no RNG state in the checkpoint, and DataLoader workers can split
batches by k without changing the order.
"""
from __future__ import annotations

import glob
import os
from typing import Iterator, Sequence

import numpy as np
import torch

import store

NUM_DENSE = 13
NUM_SPARSE = 26
# Criteo 1TB cardinalities scaled to CPU size (capped at 10k rows): ~68k rows in all.
DEFAULT_TABLE_ROWS = [10000, 3906, 1729, 742, 2026, 3, 712, 154, 63, 10000, 3067, 4052, 10,
                      220, 1193, 155, 4, 976, 14, 10000, 10000, 10000, 5901, 1297, 108, 36]
_TEACHER_BUCKETS = 1 << 16  # teacher weights are hashed: memory stays bounded for huge tables

Batch = tuple[np.ndarray, np.ndarray, np.ndarray]  # dense f32 [B,13], sparse i64 [B,T], labels f32 [B]


class SyntheticCriteo:
    """Deterministic Criteo-like data: 13 dense + len(table_rows) sparse features.

    Ids are power-law distributed (id = floor(rows * u**alpha): a few hot rows, a long
    tail) and labels are Bernoulli(sigmoid(teacher logit)) where the teacher — shared by
    all ranks, derived from the seed alone — has per-id first-order weights, a dense
    linear term and one pairwise interaction, so a DeepFM/DCNv2 can really learn it.
    """

    def __init__(self, table_rows: Sequence[int], batch_size: int, seed: int = 0,
                 rank: int = 0, world_size: int = 1, alpha: float = 3.0,
                 sequences: Sequence[tuple[int, int]] = ()):
        self.table_rows = np.asarray(table_rows, dtype=np.int64)
        self.sequences = [(int(r), max(1, int(n))) for r, n in sequences]  # DIN: (rows, length)
        self.batch_size, self.seed, self.rank, self.world_size = batch_size, seed, rank, world_size
        self.alpha = alpha
        t = len(table_rows)
        rng = np.random.default_rng([seed, 0x7EAC4E2])
        self.w_sparse = rng.normal(0.0, 1.0, size=(t, _TEACHER_BUCKETS)) * (2.0 / np.sqrt(t))
        self.z_sparse = rng.normal(0.0, 1.0, size=(t, _TEACHER_BUCKETS, 4)) / 2.0
        self.w_dense = rng.normal(0.0, 1.0, size=NUM_DENSE) / np.sqrt(NUM_DENSE)
        self.pair = (0, min(1, t - 1)) if t else None

    def _bucket(self, ids: np.ndarray) -> np.ndarray:
        return ((ids * 2654435761) & 0xFFFFFFFF) % _TEACHER_BUCKETS

    def batch(self, k: int) -> Batch:
        rng = np.random.default_rng([self.seed, self.rank, self.world_size, k])
        b, t = self.batch_size, len(self.table_rows)
        u = rng.random((b, t))
        sparse = np.minimum((u ** self.alpha * self.table_rows).astype(np.int64), self.table_rows - 1)
        dense = rng.standard_normal((b, NUM_DENSE)).astype(np.float32)
        h = self._bucket(sparse)
        cols = np.arange(t)
        logit = self.w_sparse[cols, h].sum(1) + dense @ self.w_dense
        if self.pair:
            a, c = self.pair
            logit += (self.z_sparse[a, h[:, a]] * self.z_sparse[c, h[:, c]]).sum(1)
        if not self.sequences:
            labels = (rng.random(b) < 1.0 / (1.0 + np.exp(-logit))).astype(np.float32)
            return dense, sparse, labels
        seq_ids, seq_lens, targets, affinity = self._behaviour(k)
        logit = logit + affinity
        labels = (rng.random(b) < 1.0 / (1.0 + np.exp(-logit))).astype(np.float32)
        return dense, sparse, labels, seq_ids, seq_lens, targets

    def _behaviour(self, k: int):
        """DIN-style behaviour sequences: each user prefers one of K item clusters (cluster =
        id % K); most of the history comes from it, and the click logit rises with the share of
        the history in the candidate's cluster -- learnable only by relating the target to the
        sequence (target attention). Own RNG stream: the pooled features stay as without it."""
        rng = np.random.default_rng([self.seed, self.rank, self.world_size, k, 0xD1])
        b = self.batch_size
        L = max(n for _, n in self.sequences)
        ids = np.zeros((len(self.sequences), b, L), np.int64)
        lens = np.zeros((len(self.sequences), b), np.int64)
        targets = np.zeros((len(self.sequences), b), np.int64)
        affinity = np.zeros(b)
        for s, (rows, n) in enumerate(self.sequences):
            kc = max(1, min(8, rows))
            per = max(1, rows // kc)
            pref = rng.integers(0, kc, b)
            lens[s] = rng.integers(max(1, n // 2), n + 1, b)
            cl = np.where(rng.random((b, n)) < 0.8, pref[:, None], rng.integers(0, kc, (b, n)))
            hist = np.minimum((rng.random((b, n)) ** self.alpha * per).astype(np.int64) * kc + cl, rows - 1)
            valid = np.arange(n)[None, :] < lens[s][:, None]
            ids[s, :, :n] = np.where(valid, hist, 0)
            tcl = np.where(rng.random(b) < 0.5, pref, rng.integers(0, kc, b))
            targets[s] = np.minimum((rng.random(b) ** self.alpha * per).astype(np.int64) * kc + tcl, rows - 1)
            same = ((hist % kc) == (targets[s] % kc)[:, None]) & valid
            affinity += 4.0 * (same.sum(1) / lens[s] - 0.45)
        return ids, lens, targets, affinity


class ShardReader:
    """Real data under a directory, read as one concatenated table of N rows.

    Formats: `.npy` triples `<name>dense.npy` (float32 [N,13]), `<name>sparse.npy`
    (int64 [N,26]), `<name>labels.npy` ([N]) — memory-mapped; or `.parquet` files with
    columns label, I1..I13, C1..C26 (integer ids; needs pyarrow). Rank r's k-th batch is
    rows [(k*W + r)*B, +B) modulo N, so ranks read disjoint slices and epochs wrap.
    """

    def __init__(self, data_dir: str, batch_size: int, rank: int = 0, world_size: int = 1):
        self.batch_size, self.rank, self.world_size = batch_size, rank, world_size
        self.parts: list[Batch] = []
        if store.is_url(data_dir):
            self.parts = _bucket_parts(data_dir)
        for dense_path in ([] if store.is_url(data_dir) else
                           sorted(glob.glob(os.path.join(data_dir, "**", "*dense*.npy"), recursive=True))):
            head, name = os.path.split(dense_path)
            arrays = [np.load(os.path.join(head, name.replace("dense", kind)), mmap_mode="r")
                      for kind in ("dense", "sparse", "labels")]
            self.parts.append(tuple(arrays))
        parquet = [] if store.is_url(data_dir) else \
            sorted(glob.glob(os.path.join(data_dir, "**", "*.parquet"), recursive=True))
        if parquet:
            self.parts += [_read_parquet(p) for p in parquet]
        if not self.parts:
            raise FileNotFoundError(f"no *dense*.npy or *.parquet shards under {data_dir}")
        for d, s, y in self.parts:
            if not (len(d) == len(s) == len(y)) or d.shape[1] != NUM_DENSE:
                raise ValueError(f"shard shapes disagree: dense {d.shape}, sparse {s.shape}, labels {y.shape}")
        self.sizes = np.array([len(p[0]) for p in self.parts], dtype=np.int64)
        self.starts = np.concatenate([[0], np.cumsum(self.sizes)[:-1]])
        self.num_rows = int(self.sizes.sum())
        self.num_sparse = self.parts[0][1].shape[1]

    def batch(self, k: int) -> Batch:
        first = (k * self.world_size + self.rank) * self.batch_size
        rows = (first + np.arange(self.batch_size)) % self.num_rows
        part = np.searchsorted(self.starts, rows, side="right") - 1
        dense = np.empty((self.batch_size, NUM_DENSE), np.float32)
        sparse = np.empty((self.batch_size, self.num_sparse), np.int64)
        labels = np.empty(self.batch_size, np.float32)
        for p in np.unique(part):
            sel = part == p
            local = rows[sel] - self.starts[p]
            d, s, y = self.parts[p]
            dense[sel], sparse[sel], labels[sel] = d[local], s[local], y[local]
        return dense, sparse, labels


def _bucket_parts(url: str) -> list[Batch]:
    """Shards in a bucket (dataset.path: s3://...), read through fsspec: whole objects into
    memory (a bucket has no mmap), the same formats and order as a directory."""
    import io

    fs, root = store.filesystem(url)
    found = sorted(fs.find(root))
    parts: list[Batch] = []
    for dense in (p for p in found if p.endswith(".npy") and "dense" in p.rsplit("/", 1)[-1]):
        head, name = dense.rsplit("/", 1)
        parts.append(tuple(np.load(io.BytesIO(fs.cat_file(f"{head}/{name.replace('dense', kind)}")))
                           for kind in ("dense", "sparse", "labels")))
    for pq_path in (p for p in found if p.endswith(".parquet")):
        with fs.open(pq_path, "rb") as f:
            parts.append(_read_parquet(f))
    return parts


def _read_parquet(path) -> Batch:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:  # optional: only needed for parquet shards
        raise ImportError(f"reading {path} needs pyarrow: pip install pyarrow (or convert to .npy shards)") from exc
    table = pq.read_table(path)
    dense = np.stack([table[f"I{i}"].to_numpy() for i in range(1, NUM_DENSE + 1)], 1).astype(np.float32)
    sparse = np.stack([table[f"C{i}"].to_numpy() for i in range(1, NUM_SPARSE + 1)], 1)
    if not np.issubdtype(sparse.dtype, np.integer):
        raise ValueError(f"{path}: C1..C26 must be integer ids (hash/categorify them first)")
    return dense, sparse.astype(np.int64), table["label"].to_numpy().astype(np.float32)


def has_shards(data_dir: str | None) -> bool:
    if store.is_url(data_dir):
        fs, root = store.filesystem(data_dir)
        return any(p.endswith(".parquet") or (p.endswith(".npy") and "dense" in p.rsplit("/", 1)[-1])
                   for p in fs.find(root))
    if not data_dir or not os.path.isdir(data_dir):
        return False
    return any(glob.glob(os.path.join(data_dir, "**", pat), recursive=True) for pat in ("*dense*.npy", "*.parquet"))


def make_source(kind: str, data_dir: str | None, table_rows: Sequence[int], batch_size: int,
                seed: int, rank: int, world_size: int, sequences: Sequence[tuple[int, int]] = ()):
    """kind: auto (shards if DATA_DIR has any, else synthetic) | synthetic | files.
    sequences: DIN behaviour tables (rows, length); the shard formats carry none, so they
    are synthetic only."""
    if kind == "files" or (kind == "auto" and has_shards(data_dir) and not sequences):
        if not data_dir:
            raise ValueError("--dataset files needs DATA_DIR / --data-dir")
        if sequences:
            raise ValueError("behaviour sequences (DIN) come from the synthetic source only: use --dataset synthetic")
        return ShardReader(data_dir, batch_size, rank, world_size)
    if kind not in ("auto", "synthetic"):
        raise ValueError(f"unknown dataset kind {kind!r}: expected auto, synthetic or files")
    return SyntheticCriteo(table_rows, batch_size, seed, rank, world_size, sequences=sequences)


def multi_hot(ids: np.ndarray, rows: int, pooling: int, table: int) -> np.ndarray:
    """[B] one-hot ids -> [B, pooling] ids, as the MLPerf DLRM multi-hot data (facebookresearch/dlrm
    torchrec_dlrm/multi_hot.py, dist "uniform"): column 0 is the one-hot id and columns 1.. are
    fixed uniform ids tied to it, so a hot row stays hot in every bag it opens. The reference
    keeps a [rows, pooling-1] lookup table; a hash of (id, column, table) gives the same mapping
    without the memory (a 40M-row table x 100 ids would be 32 GB per worker)."""
    ids = np.asarray(ids, dtype=np.int64)
    if pooling <= 1:
        return ids[:, None]
    cols = np.arange(1, pooling, dtype=np.uint64)[None, :]
    with np.errstate(over="ignore"):     # wrap-around is the hash
        return _mix(ids, cols, rows, table)


def _mix(ids, cols, rows, table):
    h = ids.astype(np.uint64)[:, None] * np.uint64(0x9E3779B97F4A7C15) + cols * np.uint64(0xBF58476D1CE4E5B9) \
        + np.uint64(table) * np.uint64(0x94D049BB133111EB)
    h ^= h >> np.uint64(31)
    h *= np.uint64(0xD6E8FEB86655B1FF)
    h ^= h >> np.uint64(29)
    extra = (h % np.uint64(max(1, int(rows)))).astype(np.int64)
    return np.concatenate([ids[:, None], extra], 1)


def pooling_list(pooling, n: int) -> list[int]:
    """Ids per sample for each of n pooled tables: a list (padded with 1) or a scalar."""
    if isinstance(pooling, (int, float)):
        return [max(1, int(round(pooling)))] * n
    out = [max(1, int(round(p))) for p in pooling][:n]
    return out + [1] * (n - len(out))


class MultiHot:
    """Batch transform run in the DataLoader workers: the [B, T] one-hot ids become [B, sum(P)]
    multi-hot ids (table t's P_t ids contiguous), the layout model.FusedEmbeddingBag bags."""

    def __init__(self, table_rows, pooling):
        self.rows = [int(r) for r in table_rows]
        self.pooling = pooling_list(pooling, len(self.rows))

    def __call__(self, batch):
        if all(p == 1 for p in self.pooling):
            return batch
        sparse = batch[1].numpy()
        ids = np.concatenate([multi_hot(np.remainder(sparse[:, t], r), r, p, t)
                              for t, (r, p) in enumerate(zip(self.rows, self.pooling))], 1)
        return (batch[0], torch.from_numpy(ids), *batch[2:])


class BatchStream(torch.utils.data.IterableDataset):
    """Micro-batches start, start+1, ... of a source; worker w of n takes k = w mod n.

    DataLoader takes one batch from each worker in turn, so the order is the same for
    any num_workers. `transform` (picklable) runs in the worker too: the engine's input
    (the TorchRec engine's KeyedJaggedTensor batch, multi-hot ids) is built off the
    training thread, and DataLoader pins what it returns (pin_memory).
    """

    def __init__(self, source, start: int = 0, transform=None):
        self.source, self.start, self.transform = source, start, transform

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        info = torch.utils.data.get_worker_info()
        wid, n = (info.id, info.num_workers) if info else (0, 1)
        k = self.start + wid
        while True:
            batch = tuple(torch.from_numpy(a) for a in self.source.batch(k))
            yield self.transform(batch) if self.transform else batch
            k += n


def ignore_stop_signals(_worker_id: int = 0) -> None:
    """DataLoader worker_init_fn: the workers outlive SIGTERM and SIGINT, not the trainer.

    A pod's stop reaches every process of the trainer's process group at once: the kubelet
    signals the container's PID 1 (torchrun), and torchrun sends SIGTERM to each worker's
    process group (torch/distributed/elastic/multiprocessing/subprocess_handler: os.killpg),
    DataLoader workers included. A worker that dies of it (torch's own worker SIGTERM handler
    re-raises it) makes the next batch fail, and the trainer died without its checkpoint. So
    the workers ignore the stop; the trainer finishes its step, saves and exits, and its
    DataLoader then shuts them down. Because the DataLoader's last resort (terminate(), a
    SIGTERM) no longer works, the kernel ends a worker when the trainer is gone, whatever the
    worker is doing (Linux PR_SET_PDEATHSIG, SIGKILL). Runs after torch installs its worker
    handlers (torch/utils/data/_utils/worker.py), so it wins."""
    import ctypes
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)       # PR_SET_PDEATHSIG
    except (OSError, AttributeError):                      # not Linux: torch's watchdog only
        return
    if os.getppid() != parent:                             # the trainer died before the prctl
        os._exit(0)


def loader(source, start: int, num_workers: int = 0, pin_memory: bool = False, transform=None):
    return torch.utils.data.DataLoader(BatchStream(source, start, transform), batch_size=None,
                                       num_workers=num_workers, pin_memory=pin_memory,
                                       persistent_workers=False,
                                       prefetch_factor=4 if num_workers else None,
                                       worker_init_fn=ignore_stop_signals if num_workers else None)


def shutdown_workers(batches) -> None:
    """Stop a loader iterator's workers now, on every way out of the trainer. Left to the
    interpreter's exit, multiprocessing terminate()s its daemon children (SIGTERM, which the
    workers ignore: ignore_stop_signals) and then joins them with no timeout, so a job that
    keeps its iterator alive to the end (s3fs's threads do) prints done and never exits.
    DataLoader's own shutdown asks each worker to finish (the path its iterator's __del__
    takes); a worker still alive after that gets SIGKILL: it is ours and holds nothing."""
    stop = getattr(batches, "_shutdown_workers", None)    # only the multi-process iterator
    if stop is None:
        return
    stop()
    for worker in getattr(batches, "_workers", ()):
        if worker.is_alive():
            worker.kill()
            worker.join(5)
