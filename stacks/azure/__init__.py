"""AKS with InfiniBand ND node pools."""

from stacks.azure.pools import job_placement, node_pools  # noqa: F401  (contract 3: pure)
