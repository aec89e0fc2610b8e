"""Blob checkpoints: a storage account + container (storage.kind: bucket) and the job's AKS
workload identity on that container.

Compared field by field with learn.microsoft.com/azure/aks/workload-identity-deploy-cluster
(2026): the cluster has `oidcIssuerProfile.enabled` and `securityProfile.workloadIdentity.enabled`
(program.py); a user-assigned managed identity; a federated identity credential with
issuer = the cluster's OIDC issuer URL, subject `system:serviceaccount:NAMESPACE:KSA`, audience
`api://AzureADTokenExchange`; the ServiceAccount annotated `azure.workload.identity/client-id`;
the pods labelled `azure.workload.identity/use: "true"` (stacks/azure/identity.py). The role
is Storage Blob Data Contributor at the container's scope, the finest RBAC scope for blobs
(learn.microsoft.com/azure/storage/blobs/assign-azure-role-data-access). The account: no
public blob access, no shared-key access (so no account key exists to leak; adlfs and the
Azure SDKs use the federated token through DefaultAzureCredential), TLS 1.2, blob encryption,
a lifecycle management policy deleting old checkpoints under the prefix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reclaunch.spec.buckets import grant_scope
from stacks import common as c
from stacks import identity
from stacks.azure.identity import account_name

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

BLOB_DATA_CONTRIBUTOR = "ba92f5b4-2d11-453d-a403-e96b0029c9fe"
READER = "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1"   # Storage Blob Data Reader
TOKEN_AUDIENCE = "api://AzureADTokenExchange"


def bucket_and_identity(az: Any, pulumi: Any, k8s: Any, plan: "Plan", *, rg: Any, aks: Any,
                        tags: dict, client: Any, role_id: Any, provider: Any,
                        namespace: Any, depends_on: list) -> Any:
    if not identity.grants(plan):
        return None
    u = identity.created(plan)
    account = None
    if u is not None:
        account = az.storage.StorageAccount(
            c.name(plan, "ckpt-account"), account_name=account_name(plan),
            resource_group_name=rg.name, kind="StorageV2", sku={"name": "Standard_LRS"},
            allow_blob_public_access=False, allow_shared_key_access=False,
            minimum_tls_version="TLS1_2", enable_https_traffic_only=True,
            encryption={"key_source": "Microsoft.Storage",
                        "services": {"blob": {"enabled": True, "key_type": "Account"}}},
            tags=tags)
        az.storage.BlobContainer(c.name(plan, "ckpt"), account_name=account.name,
                                 resource_group_name=rg.name, container_name=u.bucket,
                                 public_access="None")
        prefix = f"{u.bucket}/{u.prefix.rstrip('/')}/" if u.prefix else f"{u.bucket}/"
        # Blob storage has no torn-upload rule to set: uncommitted blocks are discarded by the
        # service itself after 7 days (learn.microsoft.com/rest/api/storageservices/put-block).
        if days := identity.expire_days(plan):
            az.storage.ManagementPolicy(
                c.name(plan, "ckpt-lifecycle"), account_name=account.name,
                resource_group_name=rg.name, management_policy_name="default", policy={"rules": [{
                    "name": "expire-checkpoints", "enabled": True, "type": "Lifecycle",
                    "definition": {"filters": {"blob_types": ["blockBlob"], "prefix_match": [prefix]},
                                   "actions": {"base_blob": {"delete": {
                                       "days_after_modification_greater_than": days}}}}}]})
    ident = az.managedidentity.UserAssignedIdentity(c.name(plan, "trainer-id"),
                                                    resource_group_name=rg.name, tags=tags)
    ns, ksa = plan.spec.namespace, identity.service_account(plan)
    az.managedidentity.FederatedIdentityCredential(
        c.name(plan, "trainer-fic"), resource_group_name=rg.name, resource_name_=ident.name,
        issuer=aks.oidc_issuer_profile.apply(lambda p: (p or {}).get("issuer_url") if isinstance(p, dict)
                                             else getattr(p, "issuer_url", None)),
        subject=f"system:serviceaccount:{ns}:{ksa}", audiences=[TOKEN_AUDIENCE])
    for i, g in enumerate(identity.grants(plan)):
        if account is not None and g.write:
            scope = pulumi.Output.concat(account.id, f"/blobServices/default/containers/{g.url.bucket}")
        elif account_id := grant_scope(g.url, plan.spec.storage.existing):
            scope = f"{account_id}/blobServices/default/containers/{g.url.bucket}"
        else:   # security.bucket_grants: manual (validate refuses this otherwise)
            c.warn(f"{g.url.url}: grant the job's identity (reclaunch {plan.name} trainer-id) "
                   "Storage Blob Data access on that container yourself, or set storage.existing "
                   "to the storage account's resource id")
            continue
        az.authorization.RoleAssignment(
            c.name(plan, "trainer-blob", str(i)), scope=scope, principal_id=ident.principal_id,
            principal_type="ServicePrincipal",
            role_definition_id=role_id(client.subscription_id, BLOB_DATA_CONTRIBUTOR if g.write else READER))
    identity.kube_service_account(k8s, pulumi, plan, provider, namespace, depends_on=depends_on,
                                  annotations={"azure.workload.identity/client-id": ident.client_id})
    return account.id if account is not None else None
