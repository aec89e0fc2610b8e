"""job.env's values and names: what validate refuses, and a Secret reference's shape.

A value is handed to execve (cloud: local) or written into a pod spec: a NUL byte cannot be
in an environment string at all, and a value over 128 KiB (Linux MAX_ARG_STRLEN, one env
string incl. its name) fails at exec with E2BIG. Names the launcher or the plan sets (torchrun's
rank variables, the rendezvous address, the sharding plan) must not be replaced by job.env:
the job would silently run another plan than the one shown. The trainer's own knobs
(RECLAUNCH_LR, RECLAUNCH_FAULT, RECLAUNCH_BATCH_SIZE, ...) stay the user's to set.
"""

import re
from typing import Any

from pydantic.config import ConfigDict
from pydantic.fields import Field
from pydantic.main import BaseModel

MAX_ENV_BYTES = 128 * 1024   # linux/binfmts.h MAX_ARG_STRLEN = PAGE_SIZE * 32

# torchrun (torch/distributed/elastic/agent/server/api.py, local_elastic_agent.py) sets these
# for every worker; reclaunch sets the rest (manifests/env.py, providers/local).
RESERVED = frozenset({
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
    "ROLE_RANK", "ROLE_NAME", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
    "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS",
    "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE", "TORCH_DISABLE_SHARE_RDZV_TCP_STORE",
    "RECLAUNCH_SHARDING", "RECLAUNCH_CLUSTER", "RECLAUNCH_LOCAL_RUN", "RECLAUNCH_LOCAL_NODE",
    "RECLAUNCH_RESULT", "RECLAUNCH_HOME",
})


class SecretRef(BaseModel):
    """`{secret: NAME, key: KEY}`: key KEY of the Kubernetes Secret NAME (same namespace)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)   # built inside Spec (models.NESTED)
    # Secret names are DNS subdomains; data keys are [-._a-zA-Z0-9]+ (Kubernetes API docs).
    secret: str = Field(pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length=253)
    key: str = Field(pattern=r"^[-._a-zA-Z0-9]+$", max_length=253)


# Credentials whose format their issuer documents: a literal one in job.env would sit in the
# PyTorchJob's manifest, readable by anyone who may read the job, and in `render --out` files.
# AWS: IAM "unique identifier prefixes" (AKIA access key, ASIA temporary key); GitHub: "About
# authentication to GitHub" token formats; Hugging Face: User access tokens (hf_); Slack:
# token types (xoxb-, xoxp-, ...). A name that merely looks secret (TOKENIZER_PATH) is no proof.
# PEM private keys: RFC 7468 labels. `job.workdir`'s file scan reads the same list.
CREDENTIAL_FORMATS = (
    ("a PEM private key", re.compile(r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----")),
    ("an AWS access key ID", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{22,})\b")),
    ("a Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
)


def env_value(v: str) -> str:
    for what, pattern in CREDENTIAL_FORMATS:
        if pattern.search(v):   # the value itself is never repeated in the message
            raise ValueError(f"holds {what} as plain text, which would be written into the job's "
                             "manifest; keep it in a Kubernetes Secret and write "
                             "{secret: NAME, key: KEY} (on cloud: local, the same reference reads "
                             "an owner-only env file or your environment)")
    if "\0" in v:
        raise ValueError("holds a NUL byte, which no environment variable can")
    if len(v.encode("utf-8", "surrogatepass")) > MAX_ENV_BYTES:
        raise ValueError(f"is over {MAX_ENV_BYTES // 1024} KiB, more than Linux passes in one "
                         "environment variable (E2BIG at start)")
    return v


def job_env(env: dict[str, Any]) -> dict[str, Any]:
    taken = sorted(k for k in env if k in RESERVED)
    if taken:
        raise ValueError(f"{', '.join(taken)} {'is' if len(taken) == 1 else 'are'} set by the "
                         "launcher or the plan; job.env must not replace "
                         f"{'it' if len(taken) == 1 else 'them'}")
    return env


REF, VALUE = "function-secret-ref", "function-value"


def discriminate(v: Any) -> str:
    return REF if isinstance(v, (dict, SecretRef)) else VALUE


# A volume mounted over these hides (or on a hostpath, exposes) the system the job needs.
SYSTEM_PATHS = ("/proc", "/dev", "/sys", "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib64", "/boot")


def mount_path(v: str) -> str:
    import posixpath

    norm = "/" + posixpath.normpath(v).lstrip("/")   # "//x" is "/x" here
    if norm == "/" or any(norm == p or norm.startswith(p + "/") for p in SYSTEM_PATHS):
        raise ValueError(f"{v!r} is a system directory; mount the storage on its own path "
                         "(default /data)")
    return v
