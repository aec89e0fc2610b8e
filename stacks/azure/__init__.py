"""AKS with InfiniBand ND node pools."""
