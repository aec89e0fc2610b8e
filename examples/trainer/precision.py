"""What `job.precision` and `model.embedding_dtype` mean on each engine (issue 22).

Both engines (CUDA):
- tf32 / bf16 / fp16 turn TF32 matmuls and convolutions on (fp32 turns them off: the user
  asked for IEEE fp32); bf16 / fp16 run the dense forward under torch.autocast.
- fp16 needs loss scaling (GradScaler). The ddp engine has it. The TorchRec engine refuses
  fp16: its embedding optimizer runs INSIDE backward (FBGEMM's fused TBE update), so the rows
  would be updated with gradients still multiplied by the loss scale, and GradScaler's
  inf/NaN skip could not undo an update already applied. bf16 needs no scaling.
TorchRec engine, as pytorch/torchrec examples/golden_training/train_dlrm.py does:
- tables are built with EmbeddingBagConfig/EmbeddingConfig(data_type=...) from
  embedding_dtype (the dtype the planner budgets memory with);
- pooled outputs leave the TBE as bf16 under bf16 (fused_params output_dtype), so the
  output all-to-all moves half the bytes;
- quantized comms (QCommsConfig: forward FP16, backward BF16, the golden example's choice)
  on NCCL under bf16; `--qcomms off|fp16|bf16` overrides.
CPU trains in plain fp32 dense math (autocast on CPU is slower than fp32 for these MLPs);
table dtypes are still honoured where fbgemm's CPU kernels have them (fp32, fp16).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import torch

TABLE_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
CPU_TABLE_DTYPES = ("fp32", "fp16")   # fbgemm_gpu_cpu's TBE: FP32 and FP16 weights


class PrecisionError(ValueError):
    """This precision / table dtype cannot run on this engine and device; one line says why."""


@dataclass
class Precision:
    name: str
    device_type: str
    table_dtype: str
    autocast_dtype: torch.dtype | None = None
    tf32: bool = False
    scaler: object = None
    output_dtype: str = "fp32"             # TBE pooled output (TorchRec engine)
    qcomms: tuple[str, str] | None = None  # (forward, backward) CommType names
    notes: list[str] = field(default_factory=list)

    def autocast(self):
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device_type, dtype=self.autocast_dtype)

    def describe(self) -> str:
        qc = f"{self.qcomms[0]}/{self.qcomms[1]}" if self.qcomms else "off"
        amp = str(self.autocast_dtype).replace("torch.", "") if self.autocast_dtype else "off"
        return (f"precision={self.name} autocast={amp} tf32={str(self.tf32).lower()} "
                f"table_dtype={self.table_dtype} output_dtype={self.output_dtype} qcomms={qc}")


def resolve(precision: str, table_dtype: str, engine: str, device_type: str, qcomms: str = "auto",
            apply: bool = True) -> Precision:
    """-> Precision; raises PrecisionError. apply=True sets the process-wide TF32 flags."""
    if table_dtype not in TABLE_DTYPES:
        raise PrecisionError(f"embedding dtype {table_dtype!r}: the trainer trains fp32, fp16 or bf16 tables "
                             "(int8 tables are inference-only in FBGEMM)")
    cuda = device_type == "cuda"
    p = Precision(precision, device_type, table_dtype)
    if engine == "torchrec" and precision == "fp16" and cuda:
        raise PrecisionError("precision fp16 with the torchrec engine: the fused embedding update runs inside "
                             "backward and would apply loss-scaled gradients; use bf16 (no loss scaling), "
                             "or --engine ddp for fp16 with GradScaler")
    if engine == "torchrec" and not cuda and table_dtype not in CPU_TABLE_DTYPES:
        raise PrecisionError(f"embedding dtype {table_dtype} on CPU: fbgemm's CPU kernels train "
                             f"{' and '.join(CPU_TABLE_DTYPES)} tables only")
    if engine == "ddp" and table_dtype != "fp32":
        # The ddp engine keeps fp32 master tables (its row-sparse optimizer updates them in place).
        p.notes.append(f"embedding_dtype={table_dtype}: the ddp engine keeps fp32 tables "
                       "(planner memory for this run is an underestimate by the dtype ratio, not over)")
        p.table_dtype = "fp32"
    if not cuda:
        if precision != "fp32":
            p.notes.append(f"precision={precision} requested; CPU trains in fp32")
        return p
    p.tf32 = precision != "fp32"
    if apply:
        torch.backends.cuda.matmul.allow_tf32 = p.tf32
        torch.backends.cudnn.allow_tf32 = p.tf32
    if precision in ("bf16", "fp16"):
        p.autocast_dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    if precision == "fp16":
        p.scaler = torch.amp.GradScaler("cuda")
    if engine == "torchrec":
        p.output_dtype = "bf16" if precision == "bf16" else "fp32"
        if qcomms == "auto":
            p.qcomms = ("FP16", "BF16") if precision == "bf16" else None
        elif qcomms != "off":
            p.qcomms = (qcomms.upper(), "BF16")
    return p


def sharder_kwargs(p: Precision, fused_extra: dict, nccl: bool) -> dict:
    """Keyword arguments for TorchRec's EmbeddingBagCollectionSharder / EmbeddingCollectionSharder."""
    fused = dict(fused_extra)
    kwargs: dict = {}
    if p.output_dtype != "fp32":
        from fbgemm_gpu.split_embedding_configs import SparseType
        fused["output_dtype"] = SparseType.BF16 if p.output_dtype == "bf16" else SparseType.FP16
    if fused:
        kwargs["fused_params"] = fused
    if p.qcomms and nccl:
        from torchrec.distributed.fbgemm_qcomm_codec import CommType, QCommsConfig, get_qcomm_codecs_registry
        kwargs["qcomm_codecs_registry"] = get_qcomm_codecs_registry(QCommsConfig(
            forward_precision=CommType[p.qcomms[0]], backward_precision=CommType[p.qcomms[1]]))
    return kwargs


def torchrec_data_type(table_dtype: str):
    from torchrec.modules.embedding_configs import DataType
    return {"fp32": DataType.FP32, "fp16": DataType.FP16, "bf16": DataType.BF16}[table_dtype]


def observe(logits: torch.Tensor, device_type: str) -> str:
    """What the forward really ran under, seen from inside it (not what was asked for): the
    autocast state and the dtype the logits came out in, and the TF32 switches. The trainer
    logs it once (`info precision_state ...`); bench/gpu_check.py asserts it."""
    on = torch.is_autocast_enabled(device_type)
    amp = str(torch.get_autocast_dtype(device_type)).replace("torch.", "") if on else "off"
    return (f"autocast={amp} logits_dtype={str(logits.dtype).replace('torch.', '')} "
            f"matmul_tf32={str(torch.backends.cuda.matmul.allow_tf32).lower()} "
            f"cudnn_tf32={str(torch.backends.cudnn.allow_tf32).lower()}")
