"""Which Artifact Registry repository the job's image comes from, so the GKE node service
account can be granted image pull on that repository only (roles/artifactregistry.reader on
the repository, cloud.google.com/artifact-registry/docs/access-control#grant-repo), instead of
read access to every bucket and registry of the project. Pure.

Image names (cloud.google.com/artifact-registry/docs/docker/names):
`LOCATION-docker.pkg.dev/PROJECT/REPOSITORY/IMAGE`, and Container Registry hosts, now served by
Artifact Registry repositories named after the host (cloud.google.com/artifact-registry/docs/
transition/gcr-repositories: gcr.io and us.gcr.io in `us`, eu.gcr.io in `europe`, asia.gcr.io
in `asia`). Images from anywhere else (ghcr.io, Docker Hub, Google's public GPUDirect images)
need no grant: the nodes reach them through Cloud NAT. The stack grants only on a repository
in the project it deploys to (stacks/gcp/program.py): another project's repository is its
owners' to share (Google's public Deep Learning Containers need no grant, and a grant there
is a 403).
"""

from __future__ import annotations

import re
from typing import NamedTuple

GCR_LOCATIONS = {"gcr.io": "us", "us.gcr.io": "us", "eu.gcr.io": "europe", "asia.gcr.io": "asia"}
_PKG_DEV = re.compile(r"^(?P<location>[a-z0-9-]+)-docker\.pkg\.dev/(?P<project>[^/]+)/"
                      r"(?P<repository>[^/]+)/.+")


class Repository(NamedTuple):
    project: str
    location: str
    repository: str


def repository(image: str | None) -> Repository | None:
    """The Artifact Registry repository holding `image`; None for any other registry."""
    if not image:
        return None
    m = _PKG_DEV.match(image)
    if m:
        return Repository(m["project"], m["location"], m["repository"])
    host, _, rest = image.partition("/")
    project = rest.split("/", 1)[0]
    if host in GCR_LOCATIONS and project and "/" in rest:
        return Repository(project, GCR_LOCATIONS[host], host)
    return None
