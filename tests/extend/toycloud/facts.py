"""Everything reclaunch's pure layers need of the toy cloud: its fabric, storage kind,
reservation kind and object store, as data (a test's stand-in, not a product)."""

from fractions import Fraction

from reclaunch.clouds import (ETHERNET, NO_STORAGE, PVC, CloudFacts, Existing,
                              FabricFacts, ObjectStore, PreviewFacts, ReservationKind,
                              StorageKind, Steps)

TOYFAB = FabricFacts("toyfab", nic="toynic", mtu=9000,
                     prerequisites=("toyfab: enable the toy fabric on the account",),
                     profiles="toycloud.fabric:PROFILES")


def _toyfs_volume(plan, existing: str) -> dict:
    return {"csi": {"driver": "toyfs.csi.toy.example", "volumeHandle": existing}}


# A file system the toy stack creates: 100 GiB steps up to 10 TiB.
TOYFS = StorageKind("toyfs", sized=True, created_by_stack=True, resource_hints=("toyfs",),
                    steps=Steps(((100, 100, 10240),)), usd_per_gb_month=0.09,
                    existing=Existing("<share id>", "share-0001", _toyfs_volume),
                    created_in=(900, "toyfs: 15 min to create (a test's stand-in)"))
# Capacity bought ahead: tr-<6 digits>, a fixed number of nodes.
TOY_RESERVATION = ReservationKind("toy-reservation", r"tr-[0-9]{6}", "tr-000123",
                                  fixed_count="a toy reservation holds a fixed number of nodes")
# The toy's object store, reached by the job's workload identity.
TOYOBJ = ObjectStore(("toyobj",), "toy", "toyfs_fsspec", (r"[a-z]{3,20}", "3-20 lowercase letters"))

FACTS = CloudFacts(
    name="toy", kind="kube", stack="toycloud.stack",
    storage=(TOYFS, PVC, NO_STORAGE), reservation_kinds=(TOY_RESERVATION,),
    object_stores=(TOYOBJ,), fabrics=(TOYFAB, ETHERNET),
    spot_tolerations=({"key": "toy.example/spot", "operator": "Equal", "value": "true",
                       "effect": "NoSchedule"},),
    capacity_labels={"toy.example/capacity": {"spot": "spot", "regular": "on-demand"}},
    allocatable={"source": "toy: 6% of cores, 10% of memory",
                 "cpu_tiers": ((None, Fraction(6, 100)),),
                 "memory_tiers": ((None, Fraction(10, 100)),), "eviction_mib": 100},
    system_shapes={"toy-small": (4, 16)},
    planner={"reclaim_rate_per_node_hour": 0.001, "control_plane_usd_per_hour": 0.05,
             "pvc_usd_per_gb_month": 0.07,
             "startup": {"steps": [{"name": "toy control plane", "seconds": 300, "billed": False,
                                    "source": "toy: 5 min (a test's stand-in)"},
                                   {"name": "toy GPU nodes", "seconds": 100, "per_node": 10,
                                    "billed": True, "source": "toy: 100 s + 10 s a node"}]},
             "bucket_prices": {"storage_usd_per_gb_month": 0.01, "write_usd_per_1000": 0.002,
                               "read_usd_per_1000": 0.0002, "as_of": "2026-11-30",
                               "source": "toyobj price list (a test's stand-in)"}},
    # The toy stack's resources say which input holds their tags (no SDK to ask).
    preview=PreviewFacts(nested_tags={"toy:index:Network": "tags", "toy:index:Cluster": "tags",
                                      "toy:index:NodePool": "tags", "toy:index:FileSystem": "tags"}),
    sdk_modules=("pulumi",),
    addons=("toy-device-plugins",), addon_file="addons.yaml",
    offers="offers.csv",
)
