"""GKE with A3 multi-network GPU node pools."""
