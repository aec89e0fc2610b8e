"""EKS with EFA GPU node groups."""

from stacks.aws.pools import job_placement, node_pools  # noqa: F401  (contract 3: pure)
from stacks.aws.prerequisites import manual_prerequisites  # noqa: F401  (printed by `up`)
