"""Which APIs the project has enabled, asked once before `up` creates anything: a stack whose
key ring or Filestore API is off fails halfway, with a cluster billing beside it
(stacks/gcp/prerequisites.py required_services; Service Usage services.list,
cloud.google.com/service-usage/docs/reference/rest/v1/services/list)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from reclaunch.errors import ProviderError

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

ENDPOINT = "https://serviceusage.googleapis.com"
MAX_PAGES = 50          # 200 a page: far more services than any project enables
log = logging.getLogger("reclaunch.gcp")


def enabled(session: Any, project: str, endpoint: str = ENDPOINT) -> set[str]:
    """Names of the project's enabled services (e.g. container.googleapis.com)."""
    names: set[str] = set()
    token = None
    for _ in range(MAX_PAGES):
        params = {"filter": "state:ENABLED", "pageSize": 200, **({"pageToken": token} if token else {})}
        r = session.get(f"{endpoint}/v1/projects/{project}/services", params=params, timeout=30)
        r.raise_for_status()
        doc = r.json()
        names |= {(s.get("config") or {}).get("name") or s.get("name", "").rsplit("/", 1)[-1]
                  for s in doc.get("services") or []}
        token = doc.get("nextPageToken")
        if not token:
            break
    return names


def prerequisites(plan: "Plan", *, session: Any = None, project: str | None = None,
                  endpoint: str = ENDPOINT) -> list[str]:
    """The "needs a person" list `up` prints; a required API that is off stops `up` here,
    before anything exists. When Service Usage cannot be asked, the list says so and `up` goes
    on (the list names the APIs). Without credentials the provider does not call this
    (provider.prerequisites: `up --dry-run` shows the list alone)."""
    from stacks.gcp.prerequisites import manual_prerequisites, required_services

    lines = manual_prerequisites(plan)
    from reclaunch.providers.gcp.auth import session_and_project

    try:
        session, project = session_and_project(session, project)
        on = enabled(session, project, endpoint)
    except Exception as exc:  # noqa: BLE001 - any failure: unknown, said, not fatal
        why = " ".join(str(exc).split())[:200]
        log.warning("could not ask Service Usage which APIs are enabled: %s", why)
        return [*lines, f"could not check the enabled APIs ({why}); enable those listed"]
    missing = [s for s in required_services(plan) if s not in on]
    if missing:
        raise ProviderError(f"APIs not enabled in project {project}: {', '.join(missing)}",
                            hint=f"gcloud services enable {' '.join(missing)} --project {project}")
    return lines
