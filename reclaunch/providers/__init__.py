"""Targets. The only place that knows cloud names: everything above picks by `get(cloud)`.

A provider module implements `Provider` (below). Cloud providers share the Kubernetes path
(Pulumi stack + PyTorchJob) from `reclaunch.lifecycle`; `local` runs torchrun on this machine.
Each module is imported lazily so one cloud's SDK never loads for another.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator, Protocol

from reclaunch.errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan


# cloud name -> "module:attribute" returning a Provider instance
REGISTRY: dict[str, str] = {
    "aws": "reclaunch.providers.aws:provider",
    "azure": "reclaunch.providers.azure:provider",
    "gcp": "reclaunch.providers.gcp:provider",
    "local": "reclaunch.providers.local:provider",
}


@dataclass
class JobStatus:
    """What `reclaunch status` shows. `state` is one of lifecycle.JOB_STATES' keys."""

    name: str
    cloud: str
    state: str                      # Created | Running | Restarting | Succeeded | Failed | Unknown ...
    message: str = ""
    nodes: list[dict[str, Any]] = field(default_factory=list)    # {name, capacity_type, ready}
    pods: list[dict[str, Any]] = field(default_factory=list)     # {name, rank, phase, restarts}
    started_at: float | None = None
    elapsed_seconds: float | None = None
    spend_usd: float | None = None
    details: dict[str, Any] = field(default_factory=dict)


class Provider(Protocol):
    name: str

    def check_ready(self, plan: "Plan") -> None:
        """Raise ProviderError (one line, with the fix) if credentials/CLI/tools are missing."""

    def up(self, plan: "Plan", *, yes: bool = False, watch: bool = True, **opts: Any) -> JobStatus:
        """Provision (idempotently) and start the job; with watch, follow it to the end."""

    def status(self, name: str) -> JobStatus: ...

    def logs(self, name: str, rank: int | None = None, follow: bool = False) -> Iterator[str]: ...

    def down(self, name: str, *, keep_storage: bool = False) -> None:
        """Destroy everything of this cluster and verify nothing is left."""


def get(cloud: str) -> Provider:
    try:
        target = REGISTRY[cloud]
    except KeyError:
        raise UsageError(f"unknown cloud {cloud!r}; known: {', '.join(REGISTRY)}") from None
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)()
