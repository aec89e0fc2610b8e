"""EKS with EFA GPU node groups."""

from stacks.aws.pools import job_placement, node_pools  # noqa: F401  (contract 3: pure)
