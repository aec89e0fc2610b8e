"""What every target implements (`Provider`) and the optional abilities a target may have,
checked with isinstance. Re-exported by reclaunch.providers, which imports this module only
when one of these names is asked for: `validate` and `plan` never need them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Protocol, runtime_checkable

from reclaunch.providers.options import UpOptions
from reclaunch.runtime.states import JobStatus

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan


class Provider(Protocol):
    """What every target implements. `up`'s options are one typed UpOptions (a misspelt field
    is a TypeError where it is built, never silently swallowed)."""

    name: str

    def check_ready(self, plan: "Plan | None") -> None:
        """Raise ProviderError (one line, with the fix) if credentials/CLI/tools are missing."""

    def up(self, plan: "Plan", options: UpOptions = UpOptions()) -> JobStatus:
        """Provision (idempotently) and start the job; unless options.detach, follow it to the
        end. options.on_started: called once the job runs (the CLI releases the name's lock)."""

    def holds(self, name: str) -> tuple[str, str | None, str] | None:
        """(cloud, region, description) when this target holds a live cluster `name`."""

    def interrupted_hint(self, name: str, path: str) -> str:
        """What to tell a user who pressed Ctrl-C during `up`."""

    def status(self, name: str) -> JobStatus: ...

    def logs(self, name: str, rank: int | None = None, follow: bool = False) -> Iterator[str]: ...

    def all_logs(self, name: str) -> Iterator[str]:
        """Every rank's log lines so far, all pods / nodes (what `diagnose` reads)."""

    def down(self, name: str, *, keep_storage: bool = False, yes: bool = False,
             backend: str | None = None) -> None:
        """Destroy everything of this cluster and verify nothing is left."""


@runtime_checkable
class ListsClusters(Protocol):
    """A target that can list its clusters without the journal (cloud: local: its state dirs)."""

    def names(self) -> list[str]: ...


@runtime_checkable
class Adoptable(Protocol):
    """A target that can rebuild a lost journal record from the spec (clouds: the stack name
    and tags follow from the spec), so `down FILE` still destroys and verifies."""

    def adopt(self, spec_path: str, backend: str | None) -> None: ...


@runtime_checkable
class Preemptible(Protocol):
    """A target that can rehearse a spot reclaim on a running job (`reclaunch preempt`)."""

    def preempt(self, name: str, node: int, *, notice: float = 10.0,
                replace_after: float = 5.0) -> dict[str, Any]: ...


@runtime_checkable
class Shell(Protocol):
    """A target that runs a command beside a rank of a running job (`reclaunch exec`) and
    forwards a port of rank 0 to this machine (`reclaunch port-forward`)."""

    def exec(self, name: str, command: list[str], *, rank: int = 0,
             interactive: bool = False) -> int: ...

    def port_forward(self, name: str, port: int, *, local_port: int | None = None,
                     rank: int = 0, ready: Any = None, stop: Any = None,
                     connections: int | None = None, on_error: Any = None) -> str | None:
        """Serve until `stop` (or `connections` served); a str: nothing to forward, and why."""
