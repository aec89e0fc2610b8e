"""EKS with EFA GPU node groups."""

from stacks.aws.pools import job_placement, node_pools  # noqa: F401  (stacks.StackFacts: pure)
from stacks.aws.prerequisites import manual_prerequisites  # noqa: F401  (printed by `up`)
