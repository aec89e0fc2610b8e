"""AKS with InfiniBand ND node pools."""

from stacks.azure.pools import job_placement, node_pools  # noqa: F401  (stacks.StackFacts: pure)
from stacks.azure.prerequisites import manual_prerequisites  # noqa: F401  (printed by `up`)
