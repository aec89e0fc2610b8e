"""GKE: the control-plane versions a region accepts for a cluster without a release channel
(projects.locations.getServerConfig `validMasterVersions`,
cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations/getServerConfig).
Our clusters use no channel (stacks/gcp/program.py), so the channel lists do not apply."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

ENDPOINT = "https://container.googleapis.com"


def offered(plan: "Plan", session: Any = None, project: str | None = None,
            endpoint: str = ENDPOINT) -> list[str]:
    from reclaunch.providers.gcp.auth import session_and_project

    session, project = session_and_project(session, project)
    r = session.get(f"{endpoint}/v1/projects/{project}/locations/{plan.region}/serverConfig",
                    timeout=30)
    r.raise_for_status()
    return list(r.json().get("validMasterVersions", []))
