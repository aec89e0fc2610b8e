"""cloud: kubernetes plans on the nodes the API returns (recorded EKS, GKE, on-prem clusters)."""

from __future__ import annotations

import json


def test_eks_p5_group_with_efa_from_the_catalog(standin, spec_file, cli):
    srv = standin("eks-p5")
    code, out, err = cli("plan", spec_file(top="nodes: 2\ngpus_per_node: 8"), "--json")
    assert code == 0, err
    plan = json.loads(out)
    assert (plan["cloud"], plan["region"], plan["instance_type"]) == ("kubernetes", "ctx", "p5.48xlarge")
    assert plan["gpu"] == "H100-80GB" and plan["gpus_per_node"] == 8
    src = plan["constants"]["sources"]["price"]
    assert "node group p5-efa: 4 node(s) (on-demand), 4 with 8 GPUs free now" in src
    assert "GPU from the catalog row aws p5.48xlarge" in src and "efa: the catalog's fabric" in src
    assert "catalog on-demand aws p5.48xlarge in us-east-1" in src
    assert plan["cost"]["on_demand_usd_per_hour"] == 2 * 55.04     # the catalog row's price
    assert plan["nccl_env"]["NCCL_NET"] == "AWS Libfabric" and plan["fabric"].startswith("efa")
    assert [r.path for r in srv.calls("GET")] == ["/api/v1/nodes", "/api/v1/pods"]


def test_gke_a3mega_pool_multi_network_is_tcpxo(standin, spec_file, cli):
    standin("gke-a3mega")
    code, out, err = cli("plan", spec_file(top="nodes: 2", extra="price: {usd_per_gpu_hour: 3.5}"),
                         "--json")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["instance_type"] == "a3-megagpu-8g" and plan["gpus_per_node"] == 8
    assert "tcpxo" in plan["fabric"]
    assert plan["cost"]["on_demand_usd_per_hour"] == 2 * 8 * 3.5   # the spec's price wins
    assert "kubernetes.price.usd_per_gpu_hour 3.5" in plan["constants"]["sources"]["price"]


def test_onprem_gpu_from_feature_discovery_labels(standin, spec_file, cli):
    standin("onprem")
    code, out, err = cli("plan", spec_file(extra="price: {usd_per_gpu_hour: 0}"))
    assert code == 0, err
    assert "1 x nvidia-l40s-x4 (kubernetes ctx), 4 x L40S-48GB" in out
    assert "nvidia.com/gpu.product=NVIDIA-L40S" in out     # the plan says where the GPU came from
    assert "ethernet" in out


def test_more_gpus_per_node_than_any_node_exits_1_naming_the_largest(standin, spec_file, cli):
    standin("onprem")
    code, out, err = cli("plan", spec_file(top="gpus_per_node: 8"))
    assert code == 1
    assert "gpus_per_node 8: no node of cluster ctx has that many; the largest, gpu-1, has 4" in err
    assert ".yaml:" in err and len(err.strip().splitlines()) == 1


def test_a_fabric_the_nodes_lack_is_refused(standin, spec_file, cli):
    standin("onprem")
    path = spec_file(top="interconnect: {inter_node: efa}")
    code, _, err = cli("plan", path)
    assert code == 2
    assert f"{path}:" in err and "interconnect.inter_node: no node group of cluster ctx offers efa" in err
    assert "nvidia-l40s-x4: ethernet: the nodes advertise no EFA" in err


def test_catalog_p5_without_efa_devices_is_planned_on_ethernet():
    from fractions import Fraction

    from reclaunch.catalog import load_catalog
    from reclaunch.runtime.kube_nodes import Node
    from reclaunch.providers.kubernetes.offers import group_offer

    labels = {"node.kubernetes.io/instance-type": "p5.48xlarge",
              "eks.amazonaws.com/nodegroup": "p5-plain"}
    n = Node("n1", labels, {}, [], {"cpu": Fraction(190), "memory": Fraction(2000 * 2**30),
                                    "nvidia.com/gpu": Fraction(8)})
    offer, _ = group_offer("p5-plain", [n], load_catalog(overlay=False), context="c",
                           usd_per_gpu_hour=None, gpus_wanted=None)
    assert offer.fabric == "ethernet" and offer.instance_type == "p5-plain"
    assert "advertise no efa devices" in offer.basis


def test_gfd_product_names_map_to_catalog_gpus():
    from reclaunch.catalog import load_catalog
    from reclaunch.providers.kubernetes.offers import _gpu_name

    gpus = load_catalog(overlay=False).gpus
    assert _gpu_name("NVIDIA-H100-80GB-HBM3", "81559", gpus) == "H100-80GB"
    assert _gpu_name("NVIDIA-A100-SXM4-40GB", "40960", gpus) == "A100-40GB"
    assert _gpu_name("NVIDIA-A100-SXM4-80GB", None, gpus) == "A100-80GB"
    assert _gpu_name("NVIDIA-H100-NVL", "95830", gpus) == "H100-NVL-94GB"
    assert _gpu_name("NVIDIA-L40S", "46068", gpus) == "L40S-48GB"
    assert _gpu_name("Tesla-V100-SXM2-16GB", "16384", gpus) is None


def test_unknown_hardware_with_rdma_is_named_and_planned_on_ethernet():
    from fractions import Fraction

    from reclaunch.catalog import load_catalog
    from reclaunch.runtime.kube_nodes import Node
    from reclaunch.providers.kubernetes.offers import group_offer

    labels = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.memory": "81559"}
    n = Node("dgx-1", labels, {}, [], {"cpu": Fraction(220), "memory": Fraction(1900 * 2**30),
                                       "nvidia.com/gpu": Fraction(8), "rdma/ib": Fraction(8)})
    offer, _ = group_offer("dgx", [n], load_catalog(overlay=False), context="c",
                           usd_per_gpu_hour=2.0, gpus_wanted=None)
    assert (offer.gpu, offer.gpu_count, offer.fabric) == ("H100-80GB", 8, "ethernet")
    assert "advertise infiniband, but no fabric profile knows this hardware" in offer.basis
    assert offer.on_demand_usd == 16.0 and offer.selector == (("nvidia.com/gpu.product",
                                                                "NVIDIA-H100-80GB-HBM3"),)
