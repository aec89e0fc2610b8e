"""The AKS stack as Azure takes it (the stacks review, items 2, 3, 10 and 8 on Azure), read
off the preview `up` deploys."""

from __future__ import annotations

import re

import pytest

from reclaunch.errors import SpecError

ACCOUNT = "azure-native:storage:StorageAccount"
POOL = "azure-native:containerservice:AgentPool"


def _of(resources, typ):
    return [r for r in resources if r["type"] == typ]


def test_an_azure_files_account_fits_24_characters_for_a_long_cluster_name(previews):
    plan, _ = previews("azure")
    name = "criteo-deepfm-azfiles"                       # the review's case: 32 characters
    _, res = previews("azure", spec=plan.spec.model_copy(update={"name": name}))
    (account,) = _of(res, ACCOUNT)
    given = account["inputs"]["accountName"]
    assert re.fullmatch(r"[a-z0-9]{3,24}", given) and account["engine"] == []
    assert account["inputs"]["kind"] == "FileStorage"
    # main's account: auto-named from its logical name, which azure-native refuses in check
    # (pulumi/pulumi-azure-native#4294); the rule sees it
    from stacks.azure.api_rules import refusals

    assert refusals(ACCOUNT, "criteodeepfmazfilesfiles", {})


def _decode(tags):
    """The scale-from-zero template the azure cloud provider builds from a scale set's tags
    (kubernetes/autoscaler cluster-autoscaler/cloudprovider/azure/azure_template.go:
    extractAllocatableResourcesFromScaleSet, extractLabelsFromTags, extractTaintsFromTags)."""
    prefix = "k8s.io_cluster-autoscaler_node-template_"
    res, labels, taints = {}, {}, {}
    for k, v in tags.items():
        if k.startswith(prefix + "resources_"):
            res[k[len(prefix) + 10:].replace("_", "/").replace("~2", "/")] = v
        elif k.startswith(prefix + "label_"):
            labels[k[len(prefix) + 6:].replace("_", "/").replace("~2", "_")] = v
        elif k.startswith(prefix + "taint_"):
            value, effect = v.split(":", 1)
            taints[k[len(prefix) + 6:].replace("_", "/").replace("~2", "_")] = (value, effect)
    return res, labels, taints


def test_aks_pools_at_zero_offer_the_autoscaler_what_the_training_pod_asks(previews):
    from reclaunch.manifests.job import render

    plan, res = previews("azure")
    job = next(o for o in render(plan) if o["kind"] == "PyTorchJob")
    pod = next(iter(job["spec"]["pytorchReplicaSpecs"].values()))["template"]["spec"]
    requests = pod["containers"][0]["resources"]["requests"]
    assert requests["rdma/ib"] == 8
    pools = _of(res, POOL)
    assert {p["inputs"]["minCount"] for p in pools} == {0, plan.min_nodes}   # od starts at zero
    for p in pools:
        have, labels, taints = _decode(p["inputs"]["tags"])
        for k in ("rdma/ib", "nvidia.com/gpu"):
            assert int(have[k]) >= int(requests[k]), (p["name"], k)
        for k, v in pod.get("nodeSelector", {}).items():
            assert labels.get(k) == v, (p["name"], k)
        assert labels["reclaunch.io/fabric-group"] == p["inputs"]["agentPoolName"]
        tolerated = {t["key"] for t in pod.get("tolerations", [])}
        assert set(taints) <= tolerated, (p["name"], taints)
        assert p["engine"] == []                           # 50 tags at most, names Azure takes


def test_azure_rules_refuse_names_and_tags_azure_refuses():
    from stacks.azure.api_rules import refusals

    assert refusals(POOL, "x", {"agentPoolName": "gpu-spot"})       # AKS: [a-z][a-z0-9]{0,11}
    assert refusals(POOL, "x", {"agentPoolName": "gpuspot"}) == []
    assert refusals("azure-native:keyvault:Vault", "kv", {}) == []      # kv + 8 hex
    many = {f"t{i}": "v" for i in range(51)}
    assert any("at most 50" in f for f in refusals(POOL, "x", {"agentPoolName": "a", "tags": many}))


def _spec(**storage):
    import yaml

    from reclaunch.spec import parse_spec
    from tests.stacks.conftest import EXAMPLES

    doc = yaml.safe_load((EXAMPLES / "azure-din-nd96amsr.yaml").read_text())
    doc["storage"] = {"kind": "none", **storage.pop("storage", {})}
    doc["job"]["checkpoint"] = {"path": "abfs://ckpt@acmeckpt.dfs.core.windows.net/run-1"}
    doc.update(storage)
    return parse_spec(yaml.safe_dump(doc), "azure-own-container.yaml")


def test_a_container_up_cannot_grant_on_is_refused_by_validate():
    with pytest.raises(SpecError, match=r"job.checkpoint.path: `up` can give the job's identity "
                                        r"rights on abfs://ckpt only with storage.existing"):
        _spec()
    account = ("/subscriptions/0000/resourceGroups/acme/providers/Microsoft.Storage/"
               "storageAccounts/acmeckpt")
    assert _spec(storage={"existing": account})
    assert _spec(security={"bucket_grants": "manual"})
    with pytest.raises(SpecError, match="names the storage account other"):
        _spec(storage={"existing": account.replace("acmeckpt", "other")})


def test_the_role_assignment_is_scoped_to_the_container_under_existing(previews):
    from tests.stacks.test_owned_storage import ACCOUNT_ID
    from tests.stacks.test_stacks_bucket import bucket_plan
    from reclaunch.providers import preview_plan

    plan = bucket_plan("azure", kind="none", url="abfs://ckpt@acmeckpt.dfs.core.windows.net/r",
                       existing=ACCOUNT_ID)
    scopes = [r["inputs"]["scope"] for r in preview_plan(plan)
              if r["type"] == "azure-native:authorization:RoleAssignment"
              and "trainer-blob" in r["name"]]
    assert scopes == [f"{ACCOUNT_ID}/blobServices/default/containers/ckpt"]
