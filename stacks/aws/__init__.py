"""EKS with EFA GPU node groups."""
