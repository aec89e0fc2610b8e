"""`reclaunch check`: Pulumi CLI, extras, credentials, GPU quota (AWS Service Quotas, stubbed).
Each cloud's answers are its own (CloudSpec.credentials / quota); `up` asks the same check."""

from __future__ import annotations

import subprocess
import sys

import pytest

from reclaunch.providers.aws.quota import quota as aws_quota
from reclaunch.providers.check import exit_code, extras, quota, run_checks
from reclaunch.providers.gcp.provider import credentials as gcp_credentials


@pytest.fixture
def aws_plan():
    from reclaunch.catalog import load_catalog
    from reclaunch.planner import make_plan
    from reclaunch.spec import load_spec

    return make_plan(load_spec("examples/aws-deepfm-p4d.yaml"), load_catalog())


def stubbed_quota(value: float, code: str):
    import boto3
    from botocore.stub import Stubber

    client = boto3.client("service-quotas", region_name="us-east-1",
                          aws_access_key_id="x", aws_secret_access_key="y")
    stub = Stubber(client)
    stub.add_response("get_service_quota", {"Quota": {"QuotaCode": code, "Value": value}},
                      {"ServiceCode": "ec2", "QuotaCode": code})
    stub.activate()
    return client


def test_aws_quota_enough_and_not_enough(aws_plan):
    # The example is spot: the All P Spot Instance Requests quota (L-7212CCBC), 4 x 96 vCPUs.
    ok = aws_quota(aws_plan, stubbed_quota(400, "L-7212CCBC"))
    assert ok.ok is True and "400 vCPUs, 384 needed" in ok.detail
    low = aws_quota(aws_plan, stubbed_quota(96, "L-7212CCBC"))
    assert low.ok is False and "96 vCPUs, 384 needed" in low.detail and "L-7212CCBC" in low.fix


def test_aws_quota_without_an_answer_cannot_tell(aws_plan):
    from botocore.stub import Stubber
    import boto3

    client = boto3.client("service-quotas", region_name="us-east-1",
                          aws_access_key_id="x", aws_secret_access_key="y")
    stub = Stubber(client)
    stub.add_client_error("get_service_quota", "AccessDeniedException", "no")
    stub.activate()
    got = aws_quota(aws_plan, client)
    assert got.ok is None and "AccessDenied" in got.detail and "get-service-quota" in got.fix


def test_other_clouds_say_cannot_tell_with_how_to_check():
    from reclaunch.catalog import load_catalog
    from reclaunch.planner import make_plan
    from reclaunch.spec import load_spec

    plan = make_plan(load_spec("examples/gcp-dcnv2-a3mega.yaml"), load_catalog())
    got = quota(plan)
    assert got.ok is None and "gcloud compute regions describe" in got.fix


def test_missing_extra_names_the_pip_line():
    rows = extras(find_spec=lambda m: None if m.startswith("pulumi_aws") else object(), want="aws")
    aws = next(r for r in rows if r.topic == "extra aws")
    assert aws.ok is False and "pulumi_aws" in aws.detail and aws.fix == "pip install 'reclaunch[aws]'"
    assert aws.needed and not next(r for r in rows if r.topic == "extra gcp").needed


def test_gcp_credentials_from_environment(tmp_path):
    assert gcp_credentials({"CLOUDSDK_CONFIG": str(tmp_path)}).ok is False
    (tmp_path / "application_default_credentials.json").write_text("{}")
    assert gcp_credentials({"CLOUDSDK_CONFIG": str(tmp_path)}).ok is None   # no project: cannot tell
    got = gcp_credentials({"CLOUDSDK_CONFIG": str(tmp_path), "GOOGLE_CLOUD_PROJECT": "p"})
    assert got.ok is True
    missing = gcp_credentials({"GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "nope.json")})
    assert missing.ok is False and "no such file" in missing.detail


def test_azure_needs_an_identity_and_a_subscription(tmp_path):
    from reclaunch.providers.azure.provider import credentials

    none = credentials({"AZURE_CONFIG_DIR": str(tmp_path)})
    assert none.ok is False and "az login" in none.fix
    sp = {"AZURE_CLIENT_ID": "c", "AZURE_TENANT_ID": "t", "AZURE_CONFIG_DIR": str(tmp_path)}
    assert credentials(sp).ok is False and "AZURE_SUBSCRIPTION_ID" in credentials(sp).detail
    got = credentials({**sp, "ARM_SUBSCRIPTION_ID": "s"})
    assert got.ok is None and "subscription s; a service principal" in got.detail


def test_what_up_needs_and_the_exit_code(aws_plan, monkeypatch):
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    checks = run_checks(aws_plan, which=lambda _: None, quota_client=stubbed_quota(400, "L-7212CCBC"))
    topics = {c.topic: c for c in checks}
    assert topics["pulumi"].ok is False and topics["pulumi"].needed
    assert any(c.topic == "needs a person" and "L-417A185B" in c.detail for c in checks)
    assert exit_code(checks) == 1
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "y")
    checks = run_checks(aws_plan, which=lambda _: "/usr/bin/pulumi",
                        quota_client=stubbed_quota(400, "L-7212CCBC"))
    assert exit_code(checks) == 0


def test_check_cli_local_spec_needs_no_cloud(tmp_path):
    out = subprocess.run([sys.executable, "-m", "reclaunch", "check", "examples/local-deepfm.yaml"],
                         capture_output=True, text=True, timeout=120,
                         env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                              "RECLAUNCH_HOME": str(tmp_path / "h"),
                              "AWS_EC2_METADATA_DISABLED": "true"})
    assert "extra local" in out.stdout and "quota" in out.stdout
    assert "`reclaunch up examples/local-deepfm.yaml`" in out.stdout
