"""torchrun worker for test_trainer_resume_optimizers: for each optimizer the trainer offers,
build the TorchRec engine as train.py does, train two steps, save, build a fresh engine, restore,
and check that the model and the optimizer state came back. Prints one line per optimizer on
rank 0: `resumed OPT step=N` or `failed OPT: ...`."""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "trainer"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import data  # noqa: E402
import train  # noqa: E402
from config import parse_config  # noqa: E402

TINY = ["--table-rows", "60,40,30,20", "--embedding-dim", "4", "--mlp", "16,8", "--bottom-mlp", "8",
        "--batch-size", "32", "--pipeline", "off"]


def _plain(state: dict) -> dict:
    """name -> this rank's tensor (a ShardedTensor's local shards), for comparing two states."""
    out = {}

    def walk(prefix, value):
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}", v)
        elif hasattr(value, "local_shards"):
            for i, s in enumerate(value.local_shards()):
                out[f"{prefix}#{i}"] = s.tensor.detach().clone()
        elif torch.is_tensor(value):
            out[prefix] = value.detach().clone()
    walk("", state)
    return out


def one(opt: str, directory: str, d, log) -> str:
    args = parse_config([*TINY, "--optimizer", opt, "--checkpoint-dir", directory])
    torch.manual_seed(0)
    engine, plan = train.make_engine(args, d, log)
    source = data.make_source("synthetic", None, [t.rows for t in plan.pooled], args.batch_size, 0,
                              d.rank, d.world_size)
    batches = iter(data.loader(source, 0, 0, transform=engine.transform()))
    for step in (1, 2):
        engine.set_lr(step)
        engine.forward_backward(engine.prepare(next(batches)))
        engine.optimizer_step()
    fingerprint = train.config_fingerprint(args, plan)
    engine.save(directory, 2, {"config": fingerprint, "world_size": d.world_size}, keep=2)
    saved = _plain(engine.state())
    torch.manual_seed(1)                      # a fresh engine starts elsewhere
    fresh, _ = train.make_engine(args, d, log)
    step, _, path = fresh.restore(directory, fingerprint)
    back = _plain(fresh.state())
    missing = sorted(set(saved) - set(back))
    differ = sorted(k for k in saved if k in back and not torch.equal(saved[k], back[k]))
    if step != 2 or path is None or missing or differ:
        return f"failed {opt}: step={step} missing={missing[:3]} differ={differ[:3]}"
    optim_tensors = sum(1 for k in saved if k.startswith(".optim"))
    return f"resumed {opt} step={step} optim_tensors={optim_tensors}"


def main() -> int:
    d = train.init_distributed(2.0)
    root = sys.argv[1]
    for opt in sys.argv[2].split(","):
        try:
            line = one(opt, os.path.join(root, opt), d, lambda m: None)
        except BaseException as exc:          # SystemExit included: the trainer's error line
            line = f"failed {opt}: {type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"
        if d.is_main:
            print(line, flush=True)
        dist.barrier()
    train._shutdown(d.world_size > 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
