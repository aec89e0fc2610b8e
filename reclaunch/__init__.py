"""reclaunch: recommender-model training onto GPU clusters and off them again."""

__version__ = "0.1.0"
