"""One authorized HTTP session and project for the GCP REST calls made before `up` creates
anything (GKE serverConfig, Service Usage): Application Default Credentials, the project
from them or GOOGLE_CLOUD_PROJECT / CLOUDSDK_CORE_PROJECT. A test passes its own session."""

from __future__ import annotations

import os
from typing import Any


def session_and_project(session: Any = None, project: str | None = None) -> tuple[Any, str]:
    if session is None:
        import google.auth
        from google.auth.transport.requests import AuthorizedSession

        creds, found = google.auth.default(
            scopes=["https://www.googleapis.com/auth/cloud-platform"])
        session, project = AuthorizedSession(creds), project or found
    project = project or os.environ.get("GOOGLE_CLOUD_PROJECT") or \
        os.environ.get("CLOUDSDK_CORE_PROJECT")
    if not project:
        raise LookupError("no Google Cloud project (set GOOGLE_CLOUD_PROJECT)")
    return session, project
