"""Envelope encryption of Kubernetes Secrets on GKE with a Cloud KMS key of our own
(cloud.google.com/kubernetes-engine/docs/how-to/encrypting-secrets, "application-layer
secrets encryption"): a key ring and key in the cluster's region (a regional cluster needs
its key in the same location), and the GKE service agent
service-<project number>@container-engine-robot.iam.gserviceaccount.com granted
roles/cloudkms.cryptoKeyEncrypterDecrypter on that key before the cluster is created.

Key rings can never be deleted, so the ring is auto-named (Pulumi adds a random suffix):
a cluster re-created under the same name after `down` gets a fresh ring instead of a 409.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stacks import common as c

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

ROTATION = "7776000s"   # 90 days
KMS_ROLE = "roles/cloudkms.cryptoKeyEncrypterDecrypter"


def service_agent(project_number: str) -> str:
    return f"serviceAccount:service-{project_number}@container-engine-robot.iam.gserviceaccount.com"


def secrets_key(gcp: Any, pulumi: Any, plan: "Plan", labels: dict) -> tuple[Any, Any]:
    """(key, IAM grant): the cluster's database_encryption names the key and depends on the
    grant, else GKE cannot use the key at creation."""
    number = gcp.organizations.get_project().number
    ring = gcp.kms.KeyRing(c.name(plan, "kms"), location=plan.region)
    key = gcp.kms.CryptoKey(c.name(plan, "secrets-key"), key_ring=ring.id,
                            purpose="ENCRYPT_DECRYPT", rotation_period=ROTATION, labels=labels)
    grant = gcp.kms.CryptoKeyIAMMember(c.name(plan, "gke-kms"), crypto_key_id=key.id,
                                       role=KMS_ROLE, member=service_agent(str(number)))
    return key, grant
