"""GKE with A3 multi-network GPU node pools."""

from stacks.gcp.pools import job_placement, node_pools  # noqa: F401  (stacks.StackFacts: pure)
from stacks.gcp.prerequisites import manual_prerequisites  # noqa: F401  (printed by `up`)
