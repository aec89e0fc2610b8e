"""The Azure subscription the environment names: the credential check, the stack's config,
`down`'s sweep, `gc` and the encryption-at-host probe all read it here."""

from __future__ import annotations

import os
from typing import Mapping


def env_subscription(env: Mapping[str, str] | None = None) -> str | None:
    env = os.environ if env is None else env
    return env.get("AZURE_SUBSCRIPTION_ID") or env.get("ARM_SUBSCRIPTION_ID") or None
