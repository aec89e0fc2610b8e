"""cloud: local (torchrun on this machine): the facts the pure layers need, as data."""

from reclaunch.clouds import BUCKET, GLOO, NO_STORAGE, S3, CloudFacts, StorageKind

# A directory of this machine every simulated node sees (the provider maps storage.mount_path
# into its run directory): no claim, nothing billed.
HOSTPATH = StorageKind("hostpath", claim=False)

# Time to first step (planner/startup.py): no image, no file system, no preflight on this
# machine.
STARTUP = {
    "image": False,
    "steps": [
        {"name": "torchrun agents + rendezvous", "seconds": 3, "billed": False,
         "source": "assumption: torch.distributed.run start and c10d rendezvous on 127.0.0.1"},
        {"name": "python + torch + torchrec import, model build", "seconds": 12, "billed": False,
         "source": ("assumption: torch 2.x + torchrec import on a shared 2-core VM; `reclaunch "
                    "calibrate` measures this host's time to first step and replaces both steps")},
    ],
}


FACTS = CloudFacts(
    # Runs on this machine: no catalog offer, no region, gloo over loopback. It takes the
    # clouds' DNS-1035 name rule: it is the rehearsal for a cloud, and its name must survive
    # the move.
    name="local", kind="here", aliases=("localhost", "laptop", "here"),
    storage=(HOSTPATH, BUCKET, NO_STORAGE),
    object_stores=(S3,),   # whatever AWS_ENDPOINT_URL names (MinIO, moto)
    fabrics=(GLOO,),
    planner={"reclaim_rate_per_node_hour": 0.0, "control_plane_usd_per_hour": 0.0,
             "pvc_usd_per_gb_month": 0.0, "startup": STARTUP,
             # s3:// here is a MinIO / moto endpoint on this machine (planner/bucket_cost.py)
             "bucket_prices": {"storage_usd_per_gb_month": 0.0, "write_usd_per_1000": 0.0,
                               "read_usd_per_1000": 0.0, "as_of": "2026-12-01",
                               "source": "cloud: local: the endpoint at AWS_ENDPOINT_URL is "
                                         "not billed by reclaunch"}},
    pip_extra="local", sdk_modules=("torch", "torchrec", "fbgemm_gpu"),
)
