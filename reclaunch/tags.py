"""The tag and label names every layer must agree on (stacks create them; render, kube,
lifecycle, preflight, preview and the gc sweep select on them). Kept import-free so the
Pulumi programs in stacks/ and the CLI's light paths can both use it."""

CLUSTER_TAG = "reclaunch-cluster"             # tag (AWS, Azure) / label (GCP, k8s) = <name>
MANAGED_TAG = "reclaunch-managed"             # "true" on everything reclaunch creates
CAPACITY_LABEL = "reclaunch.io/capacity"      # node label: spot | on-demand
GPU_LABEL = "reclaunch.io/gpu"                # node label: "true" on GPU pools
POOL_LABEL = "reclaunch.io/pool"              # node label: system | gpu | gpu-spot | gpu-od
# The Kubeflow training operator's names (kubeflow/training-operator v1): the job's API group
# and version, and the label the operator puts on every pod of a job.
PYTORCHJOB_API = "kubeflow.org/v1"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
