"""Checkpoints in a bucket on each cloud, under mocks: the bucket (tagged, encrypted, private,
lifecycle), the job's workload identity scoped to its prefix, and the policy checks over them."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import yaml

from reclaunch.tags import CLUSTER_TAG, MANAGED_TAG

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
URLS = {"aws": "s3://acme-ckpt/run-1", "gcp": "gs://acme-ckpt/run-1", "azure": "az://ckpt/run-1"}
BASE = {"aws": "aws-spot-bucket.yaml", "gcp": "gcp-dcnv2-a3mega.yaml", "azure": "azure-din-nd96amsr.yaml"}


def bucket_plan(cloud: str, *, kind: str = "bucket", data: str | None = None,
                expire: int | None = None, url: str | None = None,
                existing: str | None = None, grants: str | None = None):
    from reclaunch.planner import make_plan
    from reclaunch.spec import parse_spec

    doc = yaml.safe_load((EXAMPLES / BASE[cloud]).read_text())
    doc["storage"] = {"kind": kind, **({"existing": existing} if existing else {})}
    if grants:
        doc.setdefault("security", {})["bucket_grants"] = grants
    doc["spot"] = {"enabled": True}
    doc["job"]["checkpoint"] = {"path": url or URLS[cloud], "every_minutes": 15,
                                **({"expire_days": expire} if expire else {})}
    doc["job"]["dataset"].pop("path", None)
    if data:
        doc["job"]["dataset"]["path"] = data
    return make_plan(parse_spec(yaml.safe_dump(doc), f"{cloud}-bucket.yaml"))


@pytest.fixture(scope="module")
def previews():
    from reclaunch.providers import preview_plan

    cache = {}

    def get(cloud, **kw):
        key = (cloud, tuple(sorted(kw.items())))
        if key not in cache:
            plan = bucket_plan(cloud, **kw)
            cache[key] = (plan, preview_plan(plan))
        return cache[key]
    return get


def _of(res, typ):
    return [r for r in res if r["type"] == typ]


def _one(res, typ):
    (r,) = _of(res, typ)
    return r


def _sa(res):
    return _one(res, "kubernetes:core/v1:ServiceAccount")["inputs"]["metadata"]


def test_aws_bucket_private_encrypted_expiring_and_pod_identity_on_the_prefix(previews):
    from stacks.policy import check

    plan, res = previews("aws")
    b = _one(res, "aws:s3/bucket:Bucket")
    assert b["inputs"]["bucket"] == "acme-ckpt" and b["inputs"]["forceDestroy"] is True
    assert b["tags"] == {CLUSTER_TAG: plan.name, MANAGED_TAG: "true"}
    pab = _one(res, "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock")["inputs"]
    assert all(pab[k] is True for k in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls",
                                        "restrictPublicBuckets"))
    sse = _one(res, "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration")
    assert sse["inputs"]["rules"][0]["applyServerSideEncryptionByDefault"]["sseAlgorithm"] == "aws:kms"
    rule = _one(res, "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration")["inputs"]["rules"][0]
    assert rule["filter"]["prefix"] == "run-1/" and rule["abortIncompleteMultipartUpload"]
    assert not rule.get("expiration")
    pol = next(r for r in _of(res, "aws:iam/rolePolicy:RolePolicy") if r["name"].endswith("trainer-s3"))
    st = json.loads(pol["inputs"]["policy"])["Statement"]
    resources = {x for s in st for x in s["Resource"]}
    assert resources <= {"arn:aws:s3:::acme-ckpt", "arn:aws:s3:::acme-ckpt/run-1/*",
                         "arn:mock:aws:kms/key:Key:" + plan.name + "-kms"}
    assert not [a for s in st for a in s["Action"] if a in ("*", "s3:*")]
    assert st[0]["Condition"] == {"StringLike": {"s3:prefix": ["run-1", "run-1/*"]}}
    pia = next(r for r in _of(res, "aws:eks/podIdentityAssociation:PodIdentityAssociation")
               if r["name"].endswith("trainer-pia"))["inputs"]
    assert (pia["namespace"], pia["serviceAccount"]) == (plan.spec.namespace, f"{plan.name}-trainer")
    role = next(r for r in _of(res, "aws:iam/role:Role") if r["name"].endswith("trainer-role"))
    assert "pods.eks.amazonaws.com" in role["inputs"]["assumeRolePolicy"]
    assert _sa(res)["annotations"] == {}          # Pod Identity: no key, no annotation
    assert check(plan, res) == []


def test_gcp_bucket_and_workload_identity(previews):
    from stacks.policy import check

    plan, res = previews("gcp")
    b = _one(res, "gcp:storage/bucket:Bucket")["inputs"]
    assert b["publicAccessPrevention"] == "enforced" and b["uniformBucketLevelAccess"] is True
    assert b["labels"] == {CLUSTER_TAG: plan.name, MANAGED_TAG: "true"} and b["lifecycleRules"]
    (m,) = _of(res, "gcp:storage/bucketIAMMember:BucketIAMMember")
    assert m["inputs"]["role"] == "roles/storage.objectUser"
    assert 'startsWith("projects/_/buckets/acme-ckpt/objects/run-1/")' in m["inputs"]["condition"]["expression"]
    wi = _one(res, "gcp:serviceaccount/iAMMember:IAMMember")
    # The pool PROJECT.svc.id.goog exists once the project's first GKE cluster does.
    assert _one(res, "gcp:container/cluster:Cluster")["urn"] in wi["depends_on"]
    wi = wi["inputs"]
    assert wi["role"] == "roles/iam.workloadIdentityUser"
    assert wi["member"] == f"serviceAccount:mock-project.svc.id.goog[{plan.spec.namespace}/{plan.name}-trainer]"
    assert _sa(res)["annotations"]["iam.gke.io/gcp-service-account"] == m["inputs"]["member"].split(":", 1)[1]
    assert check(plan, res) == []


def test_azure_account_container_and_federated_identity(previews):
    from stacks.azure.policy import BLOB_DATA_ROLES
    from stacks.policy import check

    plan, res = previews("azure")
    acct = _one(res, "azure-native:storage:StorageAccount")
    assert acct["inputs"]["allowBlobPublicAccess"] is False and acct["inputs"]["allowSharedKeyAccess"] is False
    assert acct["tags"] == {CLUSTER_TAG: plan.name, MANAGED_TAG: "true"}
    assert _one(res, "azure-native:storage:BlobContainer")["inputs"]["publicAccess"] == "None"
    assert not _of(res, "azure-native:storage:ManagementPolicy")   # nothing expires unasked
    fic = _one(res, "azure-native:managedidentity:FederatedIdentityCredential")["inputs"]
    assert fic["subject"] == f"system:serviceaccount:{plan.spec.namespace}:{plan.name}-trainer"
    assert fic["audiences"] == ["api://AzureADTokenExchange"] and fic["issuer"].startswith("https://")
    ra = next(r for r in _of(res, "azure-native:authorization:RoleAssignment") if "trainer-blob" in r["name"])
    assert ra["inputs"]["roleDefinitionId"].rsplit("/", 1)[-1] in BLOB_DATA_ROLES
    assert ra["inputs"]["scope"].endswith("/blobServices/default/containers/ckpt")
    assert "azure.workload.identity/client-id" in _sa(res)["annotations"]
    assert check(plan, res) == []


def _expiry(res) -> list:
    """(days, prefix) of every lifecycle rule that deletes checkpoints by age, on any cloud."""
    out = []
    for r in res:
        i = r["inputs"]
        for x in i.get("rules") or [] if r["type"].endswith("BucketLifecycleConfiguration") else []:
            if x.get("expiration"):
                out.append((x["expiration"]["days"], x["filter"]["prefix"]))
        for x in i.get("lifecycleRules") or []:
            if x["action"]["type"] == "Delete":
                out.append((x["condition"]["age"], x["condition"]["matchesPrefixes"][0]))
        for x in i["policy"]["rules"] if r["type"].endswith(":ManagementPolicy") else []:
            d = x["definition"]
            out.append((d["actions"]["baseBlob"]["delete"]["daysAfterModificationGreaterThan"],
                        d["filters"]["prefixMatch"][0]))
    return out


@pytest.mark.parametrize("cloud", sorted(URLS))
def test_checkpoints_expire_only_when_the_spec_asks(previews, cloud):
    """A run paused for a month still resumes: by default no rule deletes checkpoints
    (issue 37: every object under the prefix went after 30 days); expire_days opts in."""
    from stacks.policy import check

    plan, res = previews(cloud)
    assert _expiry(res) == [] and check(plan, res) == []
    plan, res = previews(cloud, expire=45)
    assert [d for d, _ in _expiry(res)] == [45] and _expiry(res)[0][1].endswith("run-1/")
    assert check(plan, res) == []
    unasked = dataclasses.replace(plan, spec=plan.spec.model_copy(update={
        "job": plan.spec.job.model_copy(update={"checkpoint": plan.spec.job.checkpoint.model_copy(
            update={"expire_days": None})})}))
    assert [f for f in check(unasked, res) if f.startswith("bucket-keeps-checkpoints:")]


def test_expire_days_needs_a_bucket_the_stack_creates():
    from reclaunch.errors import SpecError

    with pytest.raises(SpecError, match="job.checkpoint.expire_days: sets the lifecycle rule"):
        bucket_plan("aws", kind="none", expire=30)


def test_a_named_bucket_gets_identity_but_no_bucket_and_data_is_read_only(previews):
    plan, res = previews("aws", kind="none", data="s3://acme-data/criteo")
    assert not _of(res, "aws:s3/bucket:Bucket")
    pol = next(r for r in _of(res, "aws:iam/rolePolicy:RolePolicy") if r["name"].endswith("trainer-s3"))
    st = json.loads(pol["inputs"]["policy"])["Statement"]
    data = [s for s in st if "arn:aws:s3:::acme-data/criteo/*" in s["Resource"]]
    assert data and data[0]["Action"] == ["s3:GetObject"]


def test_policy_check_catches_a_broad_grant_and_an_open_bucket(previews):
    from stacks.policy import check

    plan, res = previews("aws")
    broad = json.dumps({"Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]})
    bad = [{**r, "inputs": {**r["inputs"], "policy": broad}} if r["name"].endswith("trainer-s3") else r
           for r in res if not r["type"].startswith("aws:s3/bucketPublicAccessBlock")]
    found = check(plan, bad)
    assert any(f.startswith("bucket-scoped:") and "all of S3" in f for f in found)
    assert any(f.startswith("scoped-iam:") for f in found)
    assert any(f.startswith("bucket-private:") and "public access block" in f for f in found)
    untagged = [{**r, "tags": {}} if r["type"] == "aws:s3/bucket:Bucket" else r for r in res]
    assert any(f.startswith("tagged:") and "ckpt" in f for f in check(plan, untagged))


def test_render_runs_the_job_as_the_identity_with_no_volume():
    from reclaunch.manifests.job import render

    for cloud in ("aws", "azure"):
        plan = bucket_plan(cloud)
        objs = render(plan)
        job = next(o for o in objs if o["kind"] == "PyTorchJob")
        for rs in job["spec"]["pytorchReplicaSpecs"].values():
            pod = rs["template"]
            assert pod["spec"]["serviceAccountName"] == f"{plan.name}-trainer"
            env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
            assert env["CHECKPOINT_DIR"] == URLS[cloud] and "DATA_DIR" not in env
            assert not [v for v in pod["spec"]["volumes"] if "persistentVolumeClaim" in v]
            assert (pod["metadata"]["labels"].get("azure.workload.identity/use") == "true") == (cloud == "azure")
            assert ("AZURE_STORAGE_ACCOUNT_NAME" in env) == (cloud == "azure")
        assert not [o for o in objs if o["kind"] in ("PersistentVolumeClaim", "Secret")]


def test_down_keep_storage_keeps_the_bucket_and_destroys_the_identity():
    from reclaunch.runtime.infra import storage_keep_set

    res = [
        {"urn": "kms", "type": "aws:kms/key:Key"},
        {"urn": "bucket", "type": "aws:s3/bucket:Bucket", "id": "acme-ckpt"},
        {"urn": "pab", "type": "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
         "dependencies": ["bucket"]},
        {"urn": "sse", "type": "aws:s3/bucketServerSideEncryptionConfiguration:"
         "BucketServerSideEncryptionConfiguration", "dependencies": ["bucket", "kms"]},
        {"urn": "role", "type": "aws:iam/role:Role"},
        {"urn": "policy", "type": "aws:iam/rolePolicy:RolePolicy", "dependencies": ["role", "kms"]},
        {"urn": "pia", "type": "aws:eks/podIdentityAssociation:PodIdentityAssociation",
         "dependencies": ["role"]},
    ]
    # The bucket, its settings and the key its objects are encrypted with stay; the job's
    # identity goes with the cluster.
    assert storage_keep_set(res, {"acme-ckpt"}) == {"bucket", "pab", "sse", "kms"}


def test_a_named_gcs_bucket_without_uniform_access_is_refused_before_anything_exists(monkeypatch):
    """The prefix condition on the job's grant needs uniform bucket-level access: a bucket of
    the user's with fine-grained ACLs stops the program before its first resource."""
    from reclaunch.errors import ProviderError
    from reclaunch.providers import preview_plan
    from reclaunch.runtime import preview as mocks

    plan = bucket_plan("gcp", kind="none")
    assert check_ok(plan, preview_plan(plan))           # the mock bucket has uniform access
    calls = mocks._call

    def acl_bucket(token, args, plan):
        out = calls(token, args, plan)
        return {**out, "uniformBucketLevelAccess": False} if token.endswith("getBucket") else out
    monkeypatch.setattr(mocks, "_call", acl_bucket)
    with pytest.raises(ProviderError, match="needs uniform bucket-level access") as err:
        preview_plan(plan)
    assert "--uniform-bucket-level-access" in err.value.hint


def check_ok(plan, res) -> bool:
    from stacks.policy import check

    return check(plan, res) == [] and not any(
        r["type"] == "gcp:storage/bucket:Bucket" for r in res)
