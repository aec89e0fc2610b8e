"""cluster.yaml: the pydantic models and presets (loading and cross-field rules: spec/__init__, rules).

The field names are a contract (design.md). Every model forbids unknown keys; an unknown key
gets "did you mean ...?". Rules that need the catalog (instance exists, GPU agrees, fabric
exists on that cloud) run after pydantic in `cross_check`, still pure and offline.
"""

import inspect
import re
from pathlib import Path
from typing import Annotated, Any, Callable, Literal

# From pydantic's public submodules, not the package: each first `from pydantic import X` of a
# module's names runs pydantic's module __getattr__ (a scan of its lazy-import table, issue 25).
from pydantic.fields import Field, PrivateAttr
from pydantic.functional_serializers import PlainSerializer
from pydantic.functional_validators import (AfterValidator, BeforeValidator, field_validator,
                                            model_validator)
from pydantic.json_schema import WithJsonSchema
from pydantic.main import BaseModel
from pydantic.types import Discriminator, Tag
from pydantic_core import PydanticCustomError

from reclaunch import clouds
from reclaunch.errors import SpecError
from reclaunch.spec import env_rules
from reclaunch.spec.config import NESTED, STRICT, no_bool
from reclaunch.spec.facts import runs_here
from reclaunch.spec.kubernetes import KubernetesTarget
from reclaunch.spec.stacks import STACKS, fill_knobs
from reclaunch.spec.units import (COUNT_JSON_SCHEMA, SIZE_JSON_SCHEMA, image_size, parse_count,
                                  parse_spec_size)


def _signed(fn: Callable) -> Callable:
    """pydantic reads a validator's signature (does it take `info`?) at every field that uses it;
    inspect.signature returns a function's __signature__ where it has one (PEP 362), so a validator
    many fields share is read once per validator, not once per field."""
    fn.__signature__ = inspect.signature(fn)
    return fn


Count = Annotated[int, BeforeValidator(_signed(parse_count)), WithJsonSchema(COUNT_JSON_SCHEMA)]
# One rule for every size in a spec: a unit ("12GB", "1.2TiB"), or a bare number of GiB (units.py).
# Dumped as bytes with their unit ("67108864B"): a dumped spec read back (the journal's spec
# text, model_validate of a dump) must not take its byte counts for GiB.
Size = Annotated[int, BeforeValidator(parse_spec_size), WithJsonSchema(SIZE_JSON_SCHEMA),
                 PlainSerializer(lambda n: f"{n}B", return_type=str)]
ImageSize = Annotated[Size, AfterValidator(image_size)]   # and no bigger than an image can be


def _str_value(v: object) -> object:
    # `FOO: 1` in YAML is an int; environment variables are strings, so take the text.
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    return v


EnvValue = Annotated[str, BeforeValidator(_signed(_str_value)), AfterValidator(_signed(env_rules.env_value))]
# job.env: a value, or {secret: NAME, key: KEY} (manifests/secrets.py renders it). The tags
# start "function-" so messages.py leaves them out of the field path it prints.
JobEnvValue = Annotated[Annotated[env_rules.SecretRef, Tag(env_rules.REF)]
                        | Annotated[EnvValue, Tag(env_rules.VALUE)],
                        Discriminator(env_rules.discriminate)]


Int = Annotated[int, BeforeValidator(_signed(no_bool))]
Float = Annotated[float, BeforeValidator(no_bool)]
EnvName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=256)]


def _one_of(choices: Callable[[], tuple[str, ...]],
            alias: Callable[[object], str | None] = lambda v: None):
    """A Literal read from the registry when a spec is validated, not when this module is
    imported (reclaunch/clouds.py: a cloud or fabric registered later is a valid choice).
    The error is pydantic's own literal_error, so messages.py words it as for any Literal;
    `alias` names the choice another word means (`amazon` -> aws) for its "did you mean"."""

    def check(v: object) -> object:
        known = choices()
        if not isinstance(v, str) or v not in known:
            expected = ", ".join(f"'{c}'" for c in known[:-1]) + f" or '{known[-1]}'"
            raise PydanticCustomError("literal_error", "Input should be {expected}",
                                      {"expected": expected, "meant": alias(v) or ""})
        return v

    # The enum is filled in live by schema_docs.finish.
    return Annotated[str, BeforeValidator(check), WithJsonSchema({"type": "string"})]


Cloud = _one_of(clouds.names, clouds.alias_of)
Fabric = _one_of(lambda: ("auto", *clouds.selectable_fabrics()))
ReservationKindName = _one_of(lambda: tuple(clouds.reservation_kinds()))
StorageKind = _one_of(lambda: tuple(clouds.storage_kinds()))
Precision = Literal["fp32", "tf32", "fp16", "bf16"]
Optimizer = Literal["sgd", "adagrad", "rowwise_adagrad", "adam"]
Preset = Literal["deepfm", "dcnv2", "din", "dlrm", "wide_deep", "custom"]


# STRICT and NESTED (spec/config.py): NESTED not for the models with a default instance below
# (built at once anyway) nor Model, which the planner dumps (planner/measured.py).


class Interconnect(BaseModel):
    model_config = STRICT
    intra_node: Literal["nvlink", "pcie"] | None = Field(
        None, description="Defaults to what the instance has")
    inter_node: Fabric = "auto"


class Storage(BaseModel):
    model_config = STRICT
    kind: StorageKind = "none"
    size: Size | None = Field(None, description=(
        'Capacity, e.g. "1.2TiB" or "2400GiB"; a bare number is GiB. The plan prices what the '
        'service creates after its minimum and steps (FSx for Lustre: 1.2 TiB, then 2.4 TiB steps)'))
    mount_path: Annotated[str, AfterValidator(env_rules.mount_path)] = Field(
        "/data", pattern=r"^/[^\s]*$", max_length=1024)
    existing: str | None = Field(None, description="Existing file system id / StorageClass (cephfs, pvc)")
    storage_class: str | None = None


class Spot(BaseModel):
    model_config = STRICT
    enabled: bool = False
    fallback: Literal["on-demand", "none"] = "on-demand"
    max_price: Float | None = Field(None, gt=0, le=10_000,
                                    description="USD per instance-hour; null = up to on-demand")
    reclaim_rate_per_node_hour: Float | None = Field(
        None, ge=0, le=1, description="Override the planner's expected reclaims per node-hour")
    restart_minutes: Float = Field(10, ge=0, le=24 * 60,
                                   description="Time to replace a node and resume")


class Capacity(BaseModel):
    """Capacity bought ahead: the stack launches into it, the planner prices it."""

    model_config = NESTED
    reservation: str = Field(min_length=1, max_length=512)
    kind: ReservationKindName
    price_usd_per_hour: Float | None = Field(
        None, gt=0, le=10_000, description="Per instance-hour as bought; null = on-demand price")


def _cidr(v: str) -> str:
    import ipaddress

    try:
        return str(ipaddress.ip_network(v, strict=False))
    except ValueError:
        raise ValueError(f"{v!r} is not a CIDR such as 203.0.113.7/32") from None


class Security(BaseModel):
    model_config = STRICT
    api_cidrs: list[Annotated[str, BeforeValidator(_cidr)]] = Field(
        [], max_length=100, description=(
            "CIDRs allowed to reach the Kubernetes API. [] = only the address `up` runs from "
            "(detected then); 0.0.0.0/0 opens it to the world and must be written here"))
    encryption_at_host: bool | None = Field(None, description=(
        "azure: encrypt VM temp disks and disk caches at the host. Unset: on wherever the VM "
        "size supports it and the subscription feature Microsoft.Compute/EncryptionAtHost is "
        "Registered (`up` checks); true: required; false: off"))
    bucket_grants: Literal["stack", "manual"] = "stack"   # schema_docs.py says what each means


class Autoscaling(BaseModel):
    model_config = NESTED
    min_nodes: Count = Field(ge=1, le=10_000)
    max_nodes: Count = Field(ge=1, le=10_000)


class Checkpoint(BaseModel):
    model_config = STRICT
    path: str = Field("/data/ckpt", min_length=1, max_length=1024, description=(
        "A path on the storage mount, or a bucket URL (s3://BUCKET/PREFIX, gs://, az://, "
        "abfs://CONTAINER@ACCOUNT.dfs.core.windows.net/PREFIX): spot then needs no file system"))
    every_minutes: Float = Field(15, gt=0, le=7 * 24 * 60)
    # Off unless asked: a run paused for longer must still find its checkpoints (the trainer
    # itself deletes superseded steps, keeping the newest few).
    expire_days: Int | None = Field(None, ge=1, le=36500)


class Dataset(BaseModel):
    model_config = STRICT
    samples: Count = Field(ge=1, le=10**15)
    epochs: Float = Field(1, gt=0, le=10_000)
    path: str | None = Field(None, description="Where real shards live: on the storage mount, or a bucket URL (s3://...)")


class Job(BaseModel):
    model_config = NESTED
    image: str | None = Field(None, min_length=1, max_length=512)
    image_size: ImageSize | None = Field(
        None, ge=1, description='Compressed image size, e.g. "12GB" (a bare number is GiB, as for '
        'every size): prices its pull in the startup timeline')
    command: list[Annotated[str, Field(min_length=1)]] = Field(min_length=1)
    args: list[EnvValue] = []
    # Code without an image rebuild (SkyPilot's workdir, dstack's repo): runtime/workdir.py.
    workdir: str | None = Field(None, min_length=1, max_length=1024, description=(
        "A local directory (relative to this file) that `up` packs (its .gitignore applied, "
        "secrets refused, at most workdir_max_size), puts where the pods read it (a ConfigMap "
        "when tiny, else the checkpoint bucket) and unpacks before job.command runs in it"))
    workdir_max_size: Size = Field("64MiB", ge=1, le=2**32, description=(
        'Largest job.workdir, before packing, e.g. "64MiB" (a bare number is GiB)'))
    env: dict[EnvName, JobEnvValue] = {}
    batch_size: Count = Field(4096, ge=1, le=1 << 24, description="Per GPU (per process)")
    grad_accumulation: Int = Field(1, ge=1, le=4096)
    precision: Precision = "bf16"
    optimizer: Optimizer = "adam"
    checkpoint: Checkpoint = Checkpoint()
    dataset: Dataset = Dataset(samples=1_000_000)
    max_restarts: Int = Field(10, ge=0, le=1000)
    num_workers: Int | None = Field(None, ge=0, le=256, description=(
        "Dataloader workers per process (0: the training process builds every batch itself, "
        "between steps; the plan counts that time)"))
    # The training software the step time assumes (spec/stacks.py): sets the three knobs below
    # at once; a knob given here too wins. None: the reference trainer's (torchrec).
    stack: Literal[tuple(STACKS)] | None = None  # type: ignore[valid-type]
    # How the step is launched: the reference trainer runs eager PyTorch; cuda_graph (or an
    # XLA-compiled step) pays far less per kernel launch (planner.yaml perf.kernel_launch_seconds).
    execution: Literal["eager", "cuda_graph"] = "eager"
    # Dense gradients on the wire: fp32 under autocast (the reference trainer), fp16/bf16 when the
    # stack all-reduces in half precision (HugeCTR mixed precision, Horovod --compress).
    gradient_dtype: Literal["fp32", "fp16", "bf16"] = "fp32"
    # What the stack runs beside the dense compute: input = the next batch's id all-to-all only
    # (TorchRec TrainPipelineSparseDist, the reference trainer); full = the embedding lookups and
    # their all-to-all too (HugeCTR train_intra/inter_iteration_overlap), planner/perf.py.
    embedding_overlap: Literal["input", "full"] = "input"

    _env_names = field_validator("env")(env_rules.job_env)
    _stack_knobs = model_validator(mode="before")(_signed(fill_knobs))

    @field_validator("command", "args", mode="before")
    @classmethod
    def _one_word_is_a_list(cls, v: object) -> object:
        return [v] if isinstance(v, str) else v


# TorchRec ShardingType values a table can be pinned to (torchrec/distributed/types.py).
ShardingType = Literal["data_parallel", "table_wise", "row_wise", "column_wise", "table_row_wise"]


class Table(BaseModel):
    model_config = NESTED
    name: str = Field(min_length=1, max_length=128)
    rows: Count = Field(ge=1, le=10**12)
    dim: Int | None = Field(None, ge=1, le=4096)
    pooling_factor: Float = Field(1.0, gt=0, le=100_000, description="Lookups per sample")
    sharding: ShardingType | None = Field(
        None, description="Pin this table's TorchRec sharding (default: the planner's choice)")


CRITEO_1TB_ROWS = (40000000, 39060, 17295, 7424, 20265, 3, 7122, 1543, 63, 40000000, 3067956,
                   405282, 10, 2209, 11938, 155, 4, 976, 14, 40000000, 40000000, 40000000, 590152,
                   12973, 108, 36)
CRITEO_1TB_HOTS = (3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1)


def _criteo_1tb(multi_hot: bool) -> list[dict[str, Any]]:
    # reference/recsys.md: MLPerf Criteo 1TB cardinalities (capped at 40M) and lookups per sample.
    return [{"name": f"cat_{i}", "rows": r, "pooling_factor": (h if multi_hot else 1)}
            for i, (r, h) in enumerate(zip(CRITEO_1TB_ROWS, CRITEO_1TB_HOTS))]


# Presets fill what the user leaves out (reference/recsys.md). Tables only where a public
# dataset fixes them; DeepFM/DIN/Wide&Deep users bring their own tables.
PRESETS: dict[str, dict[str, Any]] = {
    "deepfm": {"embedding_dim": 16, "mlp": [400, 400, 400]},
    "dcnv2": {"embedding_dim": 128, "bottom_mlp": [512, 256, 128], "cross_layers": 3,
              "cross_low_rank": 512, "mlp": [1024, 1024, 512, 256, 1],
              "tables": _criteo_1tb(multi_hot=True)},
    "dlrm": {"embedding_dim": 128, "bottom_mlp": [512, 256, 128],
             "mlp": [1024, 1024, 512, 256, 1], "tables": _criteo_1tb(multi_hot=False)},
    # The DIN paper's Amazon setup uses 18; 16 keeps FBGEMM's fused TBE kernels, which need a
    # dim divisible by 4 (a sequence table on TorchRec's dense kernel does not run on CPU).
    "din": {"embedding_dim": 16, "mlp": [200, 80], "attention_mlp": [80, 40], "history_length": 50},
    "wide_deep": {"embedding_dim": 64, "mlp": [1024, 1024, 1024, 1024, 1024]},
    "custom": {},
}


class Model(BaseModel):
    model_config = STRICT
    preset: Preset = "custom"
    embedding_dim: Int = Field(64, ge=1, le=4096)
    embedding_dtype: Literal["fp32", "fp16", "bf16", "int8"] = "fp32"
    # Factories are lambdas, not `list`/`dict`: pydantic reads each factory's signature, and a
    # builtin's is parsed from its text signature by tokenize (a regex compiled at import).
    tables: list[Table] = Field(default_factory=lambda: [], min_length=1, max_length=100_000,
                                description="Required unless the preset brings them (dlrm, dcnv2)")
    mlp: list[Annotated[Int, Field(ge=1, le=1 << 20)]] = Field([1024, 1024, 512], max_length=1000)
    bottom_mlp: list[Annotated[Int, Field(ge=1, le=1 << 20)]] = Field([], max_length=1000)
    dense_features: Int = Field(13, ge=0, le=100_000)
    cross_layers: Int = Field(0, ge=0, le=100)
    cross_low_rank: Int | None = Field(None, ge=1, le=1 << 16)
    attention_mlp: list[Annotated[Int, Field(ge=1, le=1 << 20)]] = Field([], max_length=100)
    history_length: Int = Field(0, ge=0, le=100_000, description="DIN behaviour sequence length")
    sharding: Literal["auto", "data", "table_wise", "row_wise", "column_wise", "table_row_wise"] = Field(
        "auto", description="auto: per table by modeled step time; anything else pins every table")

    @model_validator(mode="before")
    @classmethod
    def _apply_preset(cls, data: Any) -> Any:
        if isinstance(data, dict):
            preset = PRESETS.get(str(data.get("preset", "custom")), {})
            data = {**preset, **data}
        return data


class Nccl(BaseModel):
    model_config = STRICT
    env: dict[EnvName, EnvValue] = {}
    debug: Literal["WARN", "INFO"] = "WARN"


class Teardown(BaseModel):
    model_config = STRICT
    when: Literal["on_success", "on_completion", "never"] = "on_success"
    idle_minutes: Float = Field(30, ge=1, le=7 * 24 * 60)
    keep_on_failure: bool = False


class Budget(BaseModel):
    model_config = STRICT
    max_usd: Float | None = Field(None, gt=0, le=1e9)


class Spec(BaseModel):
    model_config = STRICT
    name: str = Field(pattern=f"^{clouds.CLUSTER_NAME}$", description="[a-z0-9-], 1..40 chars")
    cloud: Cloud
    region: str | None = Field(None, min_length=1, max_length=64)
    zones: list[Annotated[str, Field(min_length=1, max_length=64)]] = []
    nodes: Count = Field(1, ge=1, le=10_000)
    gpus_per_node: Int = Field(8, ge=1, le=16)
    gpu: str | None = None
    instance_type: str | None = None
    namespace: str = Field("reclaunch", pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63)
    interconnect: Interconnect = Interconnect()
    storage: Storage = Storage()
    spot: Spot = Spot()
    autoscaling: Autoscaling | None = None
    capacity: Capacity | None = None
    security: Security = Security()
    kubernetes: KubernetesTarget | None = Field(None, description="Only for cloud: kubernetes")
    job: Job
    model: Model
    nccl: Nccl = Nccl()
    teardown: Teardown = Teardown()
    budget: Budget = Budget()

    _source: str = PrivateAttr("cluster.yaml")
    _lines: dict = PrivateAttr(default_factory=lambda: {})   # a lambda: see Model.tables

    @field_validator("name", mode="before")
    @classmethod
    def _name_hint(cls, v: object) -> object:
        if isinstance(v, str) and v and not re.fullmatch(clouds.CLUSTER_NAME, v):
            shown = v if len(v) <= 48 else v[:45] + "..."
            raise ValueError(f"{shown!r} must be 1..40 characters of a-z, 0-9 and '-' "
                             "(it names stacks, tags and jobs)")
        return v

    def where(self, *path: str | int) -> str:
        """`file:line` for a field path, for errors raised after loading."""
        from reclaunch.spec.messages import line_for

        return f"{self._source}:{line_for(self._lines, tuple(path))}"

    @field_validator("namespace")
    @classmethod
    def _not_a_system_namespace(cls, v: str) -> str:
        if v.startswith("kube-") or v == "default":
            raise ValueError(f"{v!r} is a system namespace; the job gets its own (default: reclaunch)")
        return v

    @model_validator(mode="after")
    def _kubernetes_namespace(self) -> "Spec":
        # kubernetes.namespace names where the job goes on a cluster you bring (spec/kubernetes.py)
        if self.kubernetes is not None and self.kubernetes.namespace:
            self.namespace = self.kubernetes.namespace
        return self

    @property
    def runs_here(self) -> bool:
        """True for targets that run on this machine (cloud: local): no catalog, no region."""
        return runs_here(self.cloud)

    @property
    def min_nodes(self) -> int:
        return self.autoscaling.min_nodes if self.autoscaling else self.nodes

    @property
    def max_nodes(self) -> int:
        return self.autoscaling.max_nodes if self.autoscaling else self.nodes
