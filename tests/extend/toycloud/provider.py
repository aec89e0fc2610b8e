"""The toy cloud's behaviour: its credential check and where its stack program lives (the
shared Kubernetes-cloud path does the rest)."""

import os

from reclaunch.providers.kubecloud import Answer, CloudSpec, KubeCloudProvider


def credentials() -> Answer:
    """The toy's SDK would log in with TOY_TOKEN; nothing else is looked at."""
    if os.environ.get("TOY_TOKEN"):
        return Answer(True, "TOY_TOKEN is set")
    return Answer(False, "no toy credentials found", "export TOY_TOKEN=<token>")


CLOUD = CloudSpec(name="toy", program="toycloud.stack:program", sweeper="", prices="",
                  credentials=credentials, errors=[], quota_fix="", capacity_fix="",
                  quota_by_hand="`toyctl quota --region {region}`")


def provider(**overrides) -> KubeCloudProvider:
    return KubeCloudProvider(CLOUD, env_overrides=overrides)
