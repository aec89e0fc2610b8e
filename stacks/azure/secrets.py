"""Envelope encryption of Kubernetes Secrets on AKS with a Key Vault key of our own: the KMS
plugin (learn.microsoft.com/azure/aks/use-kms-etcd-encryption, "public key vault"), the AKS
counterpart of GKE's application-layer secrets encryption (stacks/gcp/secrets.py).

- A key vault with Azure RBAC authorization (no access policies), soft delete and purge
  protection (Key Vault's own guidance for keys that encrypt data), public network access:
  the doc's limitations rule out a firewall that admits only some networks or addresses, and
  a private vault needs API Server VNet integration, which this stack does not use.
- An RSA 2048 key; `security_profile.azure_key_vault_kms.key_id` takes its versioned URI.
- The cluster's user-assigned identity gets Key Vault Crypto User on the vault before the
  cluster is created (KMS does not work with a system-assigned identity: it does not exist
  before the cluster does).
The vault's name is left to Pulumi's auto-naming (a random suffix): purge protection keeps a
deleted vault's name reserved for the retention period, so a cluster re-created under the
same name after `down` must not ask for the same vault name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stacks import common as c

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

KEY_VAULT_CRYPTO_USER = "12338af0-0e69-4776-bea7-57ae8d297424"   # built-in role id
RETENTION_DAYS = 7          # the minimum soft-delete retention; purge protection stays on


def secrets_key(az: Any, plan: "Plan", rg: Any, identity: Any, client: Any, tags: dict,
                role_id) -> tuple[dict, Any]:
    """(the cluster's azure_key_vault_kms settings, the role grant the cluster depends on)."""
    vault = az.keyvault.Vault(
        "kv", resource_group_name=rg.name, location=plan.region, tags=tags,
        properties={"tenant_id": client.tenant_id, "sku": {"family": "A", "name": "standard"},
                    "enable_rbac_authorization": True, "enable_soft_delete": True,
                    "soft_delete_retention_in_days": RETENTION_DAYS,
                    "enable_purge_protection": True, "public_network_access": "Enabled"})
    key = az.keyvault.Key(
        c.name(plan, "secrets-key"), resource_group_name=rg.name, vault_name=vault.name,
        key_name="etcd", tags=tags, properties={"kty": "RSA", "key_size": 2048,
                                                "key_ops": ["encrypt", "decrypt", "wrapKey",
                                                            "unwrapKey"]})
    grant = az.authorization.RoleAssignment(
        c.name(plan, "kms-crypto-user"), scope=vault.id, principal_id=identity.principal_id,
        principal_type="ServicePrincipal",
        role_definition_id=role_id(client.subscription_id, KEY_VAULT_CRYPTO_USER))
    kms = {"enabled": True, "key_id": key.key_uri_with_version,
           "key_vault_network_access": "Public"}
    return kms, grant
