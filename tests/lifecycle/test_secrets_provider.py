"""Stack secrets: a cloud KMS key when the user names one, with advice for bucket state."""

from __future__ import annotations

import pytest

from reclaunch.errors import UsageError
from reclaunch.runtime.backend import SECRETS_ENV, kms_advice, secrets_provider


def test_kms_key_url_is_the_secrets_provider():
    key = "awskms://alias/reclaunch-state?region=us-east-1"
    assert secrets_provider("s3://bucket/state", {SECRETS_ENV: key}) == key
    gcp = "gcpkms://projects/p/locations/global/keyRings/r/cryptoKeys/k"
    assert secrets_provider("gs://b", {SECRETS_ENV: gcp}) == gcp
    assert secrets_provider("file:///x", {}) == "passphrase"


def test_an_unknown_provider_is_bad_input():
    with pytest.raises(UsageError, match="passphrase or a key URL"):
        secrets_provider("s3://b", {SECRETS_ENV: "vault://x"})


def test_bucket_state_with_a_passphrase_gets_the_kms_advice():
    assert "awskms://" in kms_advice("s3://bucket/state", {})
    assert "azurekeyvault://" in kms_advice("azblob://container", {})
    assert kms_advice("s3://bucket", {SECRETS_ENV: "awskms://alias/k"}) is None
    assert kms_advice("file:///home/me/state", {}) is None


def test_the_workspace_uses_it(monkeypatch, tmp_path):
    pytest.importorskip("pulumi.automation")
    from reclaunch.runtime.infra import PulumiInfra

    monkeypatch.setenv(SECRETS_ENV, "awskms://alias/k?region=us-east-1")
    opts = PulumiInfra(program=lambda plan: (lambda: None), backend="s3://b/state")._opts("n")
    assert opts.secrets_provider == "awskms://alias/k?region=us-east-1"
