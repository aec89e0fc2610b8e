"""The GKE node service account pulls the job image from its own Artifact Registry repository
and reads nothing else of the project's storage (issue 37 §3: it held objectViewer on the
whole project, i.e. every bucket)."""

from __future__ import annotations

import dataclasses

import pytest

from stacks.gcp.registry import Repository, repository
from stacks.policy import check

from .conftest import make_plan


@pytest.mark.parametrize("image,want", [
    ("us-central1-docker.pkg.dev/acme-ml/train/recsys:1.4", Repository("acme-ml", "us-central1", "train")),
    ("europe-docker.pkg.dev/acme/imgs/deep/nested:1@sha256:ab", Repository("acme", "europe", "imgs")),
    ("gcr.io/acme-ml/recsys:1.4", Repository("acme-ml", "us", "gcr.io")),
    ("eu.gcr.io/acme-ml/recsys", Repository("acme-ml", "europe", "eu.gcr.io")),
    ("ghcr.io/acme/recsys-train:1.4", None), ("nvcr.io/nvidia/pytorch:24.04-py3", None),
    ("gcr.io/just-a-name", None), (None, None)])
def test_the_images_repository(image, want):
    assert repository(image) == want


def _with_image(image: str):
    plan = make_plan("gcp")
    return dataclasses.replace(plan, spec=plan.spec.model_copy(update={
        "job": plan.spec.job.model_copy(update={"image": image})}))


def _preview(plan):
    from reclaunch.providers import preview_plan

    return preview_plan(plan)


def test_image_pull_is_granted_on_the_repository_only():
    # a repository in the project the stack deploys to (the mocks' project)
    plan = _with_image("us-central1-docker.pkg.dev/mock-project/train/recsys:1.4")
    res = _preview(plan)
    roles = [r["inputs"]["role"] for r in res if r["type"] == "gcp:projects/iAMMember:IAMMember"]
    assert not [x for x in roles if x.startswith(("roles/storage.", "roles/artifactregistry."))]
    (pull,) = [r["inputs"] for r in res
               if r["type"] == "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember"]
    assert (pull["project"], pull["location"], pull["repository"], pull["role"]) == (
        "mock-project", "us-central1", "train", "roles/artifactregistry.reader")
    assert pull["member"].startswith("serviceAccount:") and check(plan, res) == []


def test_an_image_outside_artifact_registry_gets_no_grant_and_project_wide_reads_are_refused():
    plan = _with_image("ghcr.io/acme/recsys-train:1.4")
    res = _preview(plan)
    assert not [r for r in res if "artifactregistry" in r["type"]]
    node = next(r for r in res if r["type"] == "gcp:projects/iAMMember:IAMMember")
    for role, policy in (("roles/storage.objectViewer", "bucket-scoped"),
                         ("roles/artifactregistry.reader", "scoped-iam")):
        planted = [{**r, "inputs": {**r["inputs"], "role": role}} if r is node else r for r in res]
        assert any(f.startswith(policy + ":") and role in f for f in check(plan, planted)), role


def test_another_projects_repository_gets_no_grant_and_is_named(caplog):
    # Google's public Deep Learning Containers: setIamPolicy there is a 403 for us (stacks
    # review item 5); a public image needs no grant, a private one is its owners' to share.
    plan = _with_image("us-docker.pkg.dev/deeplearning-platform-release/gcr.io/"
                       "pytorch-cu121.2-3.py310")
    with caplog.at_level("WARNING"):
        res = _preview(plan)
    assert not [r for r in res if "artifactregistry" in r["type"]]
    assert "deeplearning-platform-release, not mock-project: no image-pull grant" in caplog.text
    assert check(plan, res) == []
