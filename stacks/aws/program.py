"""EKS: private VPC + NAT, KMS, a managed system node group, and self-managed GPU Auto
Scaling groups (one per capacity pool) from EFA launch templates in a cluster placement group.

GPU pools are self-managed ASGs, not EKS managed node groups, because managed node groups
reject `instance_market_options` (so `spot.max_price` could not be honoured) and the
cluster autoscaler's priority expander needs one ASG per capacity type to prefer spot.
"""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING

from reclaunch.errors import require
from stacks import common as c
from stacks import identity
from stacks.aws import bucket as s3bucket
from stacks.aws import interruption
from stacks.aws.network import network as _network
from stacks.aws.storage import storage
from stacks import versions
from stacks.aws.pools import SYSTEM_INSTANCE_TYPE, hugepage_count, node_pools

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

ROOT_VOLUME_GIB = 200
# Let `up` wait for the GPU groups' instances: with "0" the stack reports success while the
# group's launches fail (InsufficientInstanceCapacity), and the capacity fallback never runs.
# On timeout the AWS provider reads the groups' scaling activities into the error text
# (reclaunch.providers.aws.provider.scaling_failures), which classify() maps to a capacity kind.
WAIT_FOR_CAPACITY = "20m"
# kubernetes/autoscaler cluster-autoscaler/cloudprovider/aws/README.md, "Full Cluster
# Autoscaler Features Policy": describe calls on "*" (they take no resource), the two
# mutating calls restricted to our groups' ARNs, as the README recommends.
AUTOSCALER_DESCRIBE = ["autoscaling:DescribeAutoScalingGroups",
                       "autoscaling:DescribeAutoScalingInstances",
                       "autoscaling:DescribeLaunchConfigurations",
                       "autoscaling:DescribeScalingActivities", "ec2:DescribeImages",
                       "ec2:DescribeInstanceTypes", "ec2:DescribeLaunchTemplateVersions",
                       "ec2:GetInstanceTypesFromInstanceRequirements", "eks:DescribeNodegroup"]
AUTOSCALER_MUTATE = ["autoscaling:SetDesiredCapacity",
                     "autoscaling:TerminateInstanceInAutoScalingGroup"]
# Labels the kubelet sets itself, and EKS's own: never passed as --node-labels.
NOT_KUBELET_FLAGS = ("kubernetes.io/", "node.kubernetes.io/", "eks.amazonaws.com/")
GPU_AMI_PARAMETER = ("/aws/service/eks/optimized-ami/{version}/amazon-linux-2023/"
                     "x86_64/nvidia/recommended/image_id")
# docs.aws.amazon.com/eks/latest/userguide/create-node-role.html: image pull through
# AmazonEC2ContainerRegistryPullOnly (ReadOnly also lists and describes every repository of
# the account), and the VPC CNI's rights on a role of its own (CNI_POLICY, the vpc-cni
# add-on's pod identity) rather than on every node.
NODE_POLICIES = ("AmazonEKSWorkerNodePolicy", "AmazonEC2ContainerRegistryPullOnly",
                 "AmazonSSMManagedInstanceCore")
CNI_POLICY = "AmazonEKS_CNI_Policy"
# Add-ons made before any node (terraform-aws-modules/terraform-aws-eks `before_compute`:
# networking and pod identity must be there when a node boots); coredns after the system
# node group, else it is created with no node to run on and EKS reports it degraded.
EKS_ADDONS = ("vpc-cni", "kube-proxy", "eks-pod-identity-agent", "coredns")
AFTER_NODES = ("coredns",)
# EKS writes control-plane logs to this group, creating it untagged if it is missing, and
# nothing deletes it; made here first (terraform-aws-eks aws_cloudwatch_log_group.this), it is
# tagged for gc and destroyed with the stack.
LOG_GROUP = "/aws/eks/{cluster}/cluster"
LOG_RETENTION_DAYS = 30
def _assume(service: str) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": service},
        "Action": ["sts:AssumeRole", "sts:TagSession"]}]})


def _role(aws, pulumi, plan, key: str, service: str, policies, tags):
    """(role, its policy attachments): whatever the role's holder creates depends on the
    attachments too, else it may start before its rights exist (pulumi/pulumi-eks#1819;
    the aws_eks_node_group example of the Terraform provider's docs)."""
    role = aws.iam.Role(c.name(plan, key, max_len=64, auto=True),
                        assume_role_policy=_assume(service), tags=tags)
    attached = []
    for p in policies:
        arn = p if p.startswith("arn:") else f"arn:aws:iam::aws:policy/{p}"
        attached.append(aws.iam.RolePolicyAttachment(
            c.name(plan, key, p.rsplit("/", 1)[-1], max_len=200), role=role.name,
            policy_arn=arn))
    return role, attached


def kubelet_labels(labels: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in labels.items() if not k.startswith(NOT_KUBELET_FLAGS)}


def _node_user_data(pulumi, cluster, plan: "Plan", pool: c.NodePool):
    """nodeadm NodeConfig (AL2023): join, labels, taints, local NVMe as RAID0 ephemeral, and
    the pool's huge pages reserved by a shell part (cloud-init runs user-data scripts before
    nodeadm starts the kubelet, so the kubelet advertises them from its first status)."""
    labels = kubelet_labels(pool.labels)
    taints = [c.taint_str(t) for t in pool.taints]
    pages = hugepage_count(pool.hugepages["hugepages-2Mi"]) if pool.hugepages else 0

    def render(args):
        endpoint, ca, cidr = args
        spec = {"cluster": {"name": c.name(plan), "apiServerEndpoint": endpoint,
                            "certificateAuthority": ca, "cidr": cidr},
                "kubelet": {"flags": [
                    "--node-labels=" + ",".join(f"{k}={v}" for k, v in labels.items()),
                    *(["--register-with-taints=" + ",".join(taints)] if taints else [])]}}
        if plan.offer and plan.offer.local_nvme_gb:
            spec["instance"] = {"localStorage": {"strategy": "RAID0"}}
        doc = json.dumps({"apiVersion": "node.eks.aws/v1alpha1", "kind": "NodeConfig",
                          "spec": spec})
        script = ("" if not pages else
                  "--BOUNDARY\nContent-Type: text/x-shellscript; charset=\"us-ascii\"\n\n"
                  "#!/bin/bash\nset -euo pipefail\n"
                  f"echo 'vm.nr_hugepages = {pages}' > /etc/sysctl.d/90-reclaunch-hugepages.conf\n"
                  "sysctl -p /etc/sysctl.d/90-reclaunch-hugepages.conf\n\n")
        mime = ("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"BOUNDARY\"\n\n"
                f"{script}--BOUNDARY\nContent-Type: application/node.eks.aws\n\n"
                f"{doc}\n\n--BOUNDARY--\n")
        return base64.b64encode(mime.encode()).decode()
    return pulumi.Output.all(cluster.endpoint, cluster.certificate_authority.data,
                      cluster.kubernetes_network_config.service_ipv4_cidr).apply(render)


def _interfaces(plan: "Plan", security_groups: list) -> list[dict]:
    """One interface per network card: EFA with ENA on card 0 (the primary, device index 0,
    carries the IP), EFA-only on every other card at device index 0.

    Field by field against terraform-aws-modules/terraform-aws-eks modules/self-managed-node-
    group efa_network_interfaces (enable_efa_only): delete_on_termination, network_card_index
    and interface_type alike; associate_public_ip_address left out (EC2 refuses the parameter,
    even false, on a launch with several interfaces: InvalidParameterCombination,
    hashicorp/terraform-provider-aws#6777, aws/karpenter-provider-aws#5666; our subnets map no
    public IP anyway); device index 0 on cards >= 1 for EFA-only as
    docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html now documents (the
    module still uses 1, the page's earlier layout)."""
    base = {"delete_on_termination": "true", "security_groups": security_groups}
    nic = c.fabric_facts(plan).nic
    if not nic or not plan.offer or not plan.offer.nics:
        return [{**base, "device_index": 0}]
    return [{**base, "device_index": 0, "network_card_index": i,
             "interface_type": nic if i == 0 else f"{nic}-only"}
            for i in range(plan.offer.nics)]


def capacity_options(plan: "Plan") -> dict:
    """Launch template fields for `capacity:` (EC2 API LaunchTemplateCapacityReservation
    SpecificationRequest; Capacity Blocks also need market type "capacity-block")."""
    cap = plan.spec.capacity
    if cap is None:
        return {}
    out: dict = {"capacity_reservation_specification": {
        "capacity_reservation_target": {"capacity_reservation_id": cap.reservation}}}
    if cap.kind == "capacity-block":
        out["instance_market_options"] = {"market_type": "capacity-block"}
    return out


def _launch_template(aws, plan, key, *, tags, instance_type, image_id=None, profile=None,
                     interfaces=None, placement=None, user_data=None, spot=None,
                     capacity=None):
    """EBS volumes use the AWS-managed key (aws/ebs): the Auto Scaling service-linked role may
    use it without a key policy. A customer key would need the two statements of
    docs.aws.amazon.com/autoscaling/ec2/userguide/key-policy-requirements-EBS-encryption.html
    naming AWSServiceRoleForAutoScaling, which does not exist before the account's first
    group, so a fresh account could not even create such a key."""
    tag_specs = [{"resource_type": r, "tags": tags}
                 for r in ("instance", "volume", "network-interface")]
    args = dict(
        instance_type=instance_type, image_id=image_id, user_data=user_data,
        update_default_version=True, tags=tags, tag_specifications=tag_specs,
        # IMDSv2 only; hop limit 1 keeps pods (not on the host network) away from node creds.
        metadata_options={"http_endpoint": "enabled", "http_tokens": "required",
                          "http_put_response_hop_limit": 1},
        block_device_mappings=[{"device_name": "/dev/xvda", "ebs": {
            "volume_size": ROOT_VOLUME_GIB, "volume_type": "gp3", "encrypted": "true",
            "delete_on_termination": "true"}}],
        network_interfaces=interfaces, placement=placement,
        iam_instance_profile={"arn": profile.arn} if profile else None)
    if spot:
        args["instance_market_options"] = {"market_type": "spot", "spot_options": spot}
    args.update(capacity or {})
    return aws.ec2.LaunchTemplate(c.name(plan, key, "lt"), **args)


def endpoint_access(plan: "Plan") -> dict:
    """EKS API endpoint: private always; public only for the CIDRs the spec names, or the
    address `up` runs from (the provider passes it as stack config). Nothing -> private only."""
    cidrs = c.api_cidrs(plan)
    return {"endpoint_private_access": True, "endpoint_public_access": bool(cidrs),
            **({"public_access_cidrs": cidrs} if cidrs else {})}


def _asg_tags(plan: "Plan", pool: c.NodePool, tags: dict) -> dict[str, str]:
    """Discovery tags plus the node template the cluster autoscaler reads when a group is at
    zero (kubernetes/autoscaler cluster-autoscaler/cloudprovider/aws/README.md,
    "Auto-Discovery Setup"): every label and taint the nodes register with, and the extended
    resources and huge pages a job requests, else a pool at zero never scales up for it.
    cpu and memory: aws_manager.go buildNodeFromTemplate takes the instance's nominal figures
    as capacity and allocatable alike ("TODO: use proper allocatable!!") unless a resources
    tag overrides them, so the tags carry what the kubelet will report (stacks.common
    .node_template), the figures the render sized the pod from."""
    template = "k8s.io/cluster-autoscaler/node-template"
    out = {**tags, "Name": pool.cloud_name, "reclaunch-pool": pool.name,
           "k8s.io/cluster-autoscaler/enabled": "true",
           f"k8s.io/cluster-autoscaler/{c.name(plan)}": "owned",
           f"kubernetes.io/cluster/{c.name(plan)}": "owned",
           **{f"{template}/label/{k}": v for k, v in pool.labels.items()},
           **{f"{template}/taint/{t['key']}": f"{t['value']}:{t['effect']}" for t in pool.taints},
           f"{template}/resources/nvidia.com/gpu": str(plan.gpus_per_node),
           **{f"{template}/resources/{k}": v for k, v in c.node_template(plan, pool).items()},
           # aws-node-termination-handler acts only on instances with its managed tag.
           **({interruption.managed_tag(plan): ""} if interruption.wanted(plan) else {}),
           **{f"{template}/resources/{k}": v for k, v in pool.hugepages.items()}}
    if pool.labels.get("vpc.amazonaws.com/efa.present") == "true" and plan.offer:
        out[f"{template}/resources/vpc.amazonaws.com/efa"] = str(plan.offer.nics)
    return out


def provision_time() -> str:
    """--max-node-provision-time: the plan's own figure (providers/aws/facts.py STARTUP,
    provision_timeout), so the plan's notes and the autoscaler wait the same time."""
    from reclaunch.planner.startup import provision_timeout

    seconds, _ = provision_timeout("aws")
    return f"{int(seconds // 60)}m" if seconds % 60 == 0 else f"{int(seconds)}s"


def _autoscaler_policy(plan: "Plan", account: str) -> str:
    arns = [f"arn:aws:autoscaling:{plan.region}:{account}:autoScalingGroup:*:"
            f"autoScalingGroupName/{p.cloud_name}" for p in node_pools(plan) if p.role == "gpu"]
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": AUTOSCALER_DESCRIBE, "Resource": ["*"]},
        {"Effect": "Allow", "Action": AUTOSCALER_MUTATE, "Resource": arns}]})


def program(plan: "Plan") -> None:
    pulumi = require("pulumi", "aws")
    aws = require("pulumi_aws", "aws")
    k8s = require("pulumi_kubernetes", "aws")
    tags = c.tags(plan)
    k8s_version = versions.kubernetes_version(plan)
    pools = node_pools(plan)
    system_pool = pools[0]
    vpc, private, gpu_subnet, egress = _network(aws, pulumi, plan, tags)
    # Customer key for EKS secrets, FSx and EFS (each service uses it through grants made by
    # the caller); node volumes use aws/ebs (see _launch_template).
    kms = aws.kms.Key(c.name(plan, "kms"), description=f"reclaunch {plan.name}",
                      enable_key_rotation=True, deletion_window_in_days=7, tags=tags)

    cluster_role, cluster_rights = _role(aws, pulumi, plan, "cluster-role", "eks.amazonaws.com",
                                         ["AmazonEKSClusterPolicy"], tags)
    # Two node roles. EKS creates the access entry of a managed node group's role itself; a
    # second, explicit AccessEntry for that same role races it (409 ResourceInUseException).
    # The self-managed GPU groups get a role of their own with its own EC2_LINUX entry, as
    # aws-ia/terraform-aws-eks does (modules/self-managed-node-group creates
    # aws_eks_access_entry type EC2_LINUX for its role; modules/eks-managed-node-group none).
    node_role, node_rights = _role(aws, pulumi, plan, "node-role", "ec2.amazonaws.com",
                                   NODE_POLICIES, tags)
    gpu_role, gpu_rights = _role(aws, pulumi, plan, "gpu-node-role", "ec2.amazonaws.com",
                                 NODE_POLICIES, tags)
    cni_role, cni_rights = _role(aws, pulumi, plan, "cni-role", "pods.eks.amazonaws.com",
                                 [CNI_POLICY], tags)
    logs = aws.cloudwatch.LogGroup(c.name(plan, "eks-logs"),
                                   name=LOG_GROUP.format(cluster=c.name(plan)),
                                   retention_in_days=LOG_RETENTION_DAYS, tags=tags)
    cluster = aws.eks.Cluster(
        c.name(plan, "eks"), name=c.name(plan), version=k8s_version,
        role_arn=cluster_role.arn, tags=tags,
        vpc_config={"subnet_ids": [s.id for s in private], **endpoint_access(plan)},
        access_config={"authentication_mode": "API",
                       "bootstrap_cluster_creator_admin_permissions": True},
        encryption_config={"resources": ["secrets"], "provider": {"key_arn": kms.arn}},
        enabled_cluster_log_types=["api", "audit", "authenticator"],
        opts=pulumi.ResourceOptions(depends_on=[*cluster_rights, logs]))
    cluster_sg = cluster.vpc_config.cluster_security_group_id

    def addon(name: str, after: list):   # the VPC CNI's rights: its own role (CNI_POLICY)
        identity = ({"pod_identity_associations": [{"role_arn": cni_role.arn,
                                                    "service_account": "aws-node"}]}
                    if name == "vpc-cni" else {})
        return aws.eks.Addon(c.name(plan, name), cluster_name=cluster.name, addon_name=name,
                             tags=tags, resolve_conflicts_on_update="OVERWRITE", **identity,
                             opts=pulumi.ResourceOptions(depends_on=after))
    addons = {a: addon(a, cni_rights) for a in EKS_ADDONS if a not in AFTER_NODES}

    system_lt = _launch_template(aws, plan, "system", tags=tags, instance_type=None)
    system = aws.eks.NodeGroup(
        c.name(plan, "system"), cluster_name=cluster.name, node_role_arn=node_role.arn,
        node_group_name=system_pool.cloud_name,
        subnet_ids=[s.id for s in private], instance_types=[SYSTEM_INSTANCE_TYPE],
        ami_type="AL2023_x86_64_STANDARD", capacity_type="ON_DEMAND", tags=tags,
        launch_template={"id": system_lt.id, "version": system_lt.latest_version},
        scaling_config={"min_size": system_pool.min_nodes, "desired_size": system_pool.desired,
                        "max_size": system_pool.max_nodes},
        labels=kubelet_labels(system_pool.labels),
        opts=pulumi.ResourceOptions(depends_on=[*node_rights, *egress, *addons.values()]))
    addons.update({a: addon(a, [system]) for a in AFTER_NODES})
    addons = list(addons.values())

    # GPU nodes: all traffic within the EFA group (EFA needs it in both directions), and
    # egress anywhere through the NAT. No ingress from outside the VPC, no SSH (use SSM).
    gpu_sgs = [cluster_sg]
    if c.fabric_facts(plan).nic:
        efa_sg = aws.ec2.SecurityGroup(
            c.name(plan, "efa"), vpc_id=vpc.id, description="EFA: all traffic within itself",
            ingress=[{"protocol": "-1", "from_port": 0, "to_port": 0, "self": True}],
            egress=[{"protocol": "-1", "from_port": 0, "to_port": 0, "self": True},
                    {"protocol": "-1", "from_port": 0, "to_port": 0,
                     "cidr_blocks": ["0.0.0.0/0"]}], tags=tags)
        gpu_sgs.append(efa_sg.id)
    profile = aws.iam.InstanceProfile(c.name(plan, "gpu-node-profile"), role=gpu_role.name,
                                      tags=tags)
    gpu_access = aws.eks.AccessEntry(c.name(plan, "gpu-node-access"), cluster_name=cluster.name,
                                     principal_arn=gpu_role.arn, type="EC2_LINUX", tags=tags)
    pg = aws.ec2.PlacementGroup(c.name(plan, "pg"), strategy="cluster", tags=tags)
    ami = aws.ssm.get_parameter(
        name=GPU_AMI_PARAMETER.format(version=k8s_version)).value

    groups = {}
    max_price = c.spot_max_price(plan)
    for pool in (p for p in pools if p.role == "gpu"):
        spot = None if not pool.spot else {
            "spot_instance_type": "one-time", "instance_interruption_behavior": "terminate",
            **({"max_price": f"{max_price:g}"} if max_price else {})}
        lt = _launch_template(
            aws, plan, pool.name, tags={**tags, "reclaunch-pool": pool.name},
            instance_type=pool.instance_type, image_id=ami, profile=profile,
            interfaces=_interfaces(plan, gpu_sgs),
            # A targeted reservation decides where instances land (a Capacity Block sits in
            # its own UltraCluster; an ODCR used with a placement group must be created in
            # that group), so ours is added only without one.
            placement=None if plan.spec.capacity else {"group_name": pg.name},
            user_data=_node_user_data(pulumi, cluster, plan, pool), spot=spot,
            capacity=capacity_options(plan))
        groups[pool.name] = aws.autoscaling.Group(
            pool.cloud_name, name=pool.cloud_name, min_size=pool.min_nodes,
            max_size=pool.max_nodes, desired_capacity=pool.desired,
            vpc_zone_identifiers=[gpu_subnet.id],
            launch_template={"id": lt.id, "version": lt.latest_version},
            capacity_rebalance=pool.spot, wait_for_capacity_timeout=WAIT_FOR_CAPACITY,
            tags=[{"key": k, "value": v, "propagate_at_launch": True}
                  for k, v in _asg_tags(plan, pool, tags).items()],
            opts=pulumi.ResourceOptions(ignore_changes=["desired_capacity"], depends_on=[
                cluster, gpu_access, *addons, *gpu_rights, *egress]))

    kubeconfig = pulumi.Output.all(cluster.endpoint, cluster.certificate_authority.data,
                                   cluster.name).apply(lambda a: _kubeconfig(*a, plan.region))
    provider = k8s.Provider(c.name(plan, "k8s"), kubeconfig=kubeconfig,
                            opts=pulumi.ResourceOptions(depends_on=[system, *addons]))
    account = aws.get_caller_identity().account_id
    ca_role, _ = _role(aws, pulumi, plan, "autoscaler-role", "pods.eks.amazonaws.com", [], tags)
    aws.iam.RolePolicy(c.name(plan, "autoscaler-policy", max_len=128, auto=True), role=ca_role.id,
                       policy=_autoscaler_policy(plan, account))
    aws.eks.PodIdentityAssociation(c.name(plan, "autoscaler-pia"), cluster_name=cluster.name,
                                   namespace="kube-system", service_account="cluster-autoscaler",
                                   role_arn=ca_role.arn, tags=tags)
    priorities = {}
    for pool in (p for p in pools if p.role == "gpu"):
        priorities.setdefault(str(pool.priority), []).append(f".*{pool.cloud_name}.*")
    installed = c.install_addons(k8s, pulumi, plan, provider, depends_on=[system], values={
        "cluster-autoscaler": {"autoDiscovery": {"clusterName": c.name(plan)},
                               "awsRegion": plan.region, "expanderPriorities": priorities,
                               "extraArgs": {"max-node-provision-time": provision_time()},
                               "rbac": {"serviceAccount": {"name": "cluster-autoscaler"}}}},
        facts=lambda a: versions.pinned_facts(a, k8s_version))

    if interruption.wanted(plan):   # spot: drain on the 2-minute warning (interruption.py)
        nth_role, _ = _role(aws, pulumi, plan, "nth-role", "pods.eks.amazonaws.com", [], tags)
        installed["aws-node-termination-handler"] = interruption.install(
            aws, pulumi, k8s, plan, tags=tags, cluster=cluster, groups=groups,
            provider=provider, role=nth_role, depends_on=[system], account=account)
    ns = c.JobNamespace(k8s, pulumi, plan, provider)
    storage_id = storage(aws, pulumi, k8s, plan, tags, vpc, gpu_subnet, private, cluster,
                          kms, provider, list(installed.values()), ns)
    if identity.grants(plan):   # checkpoints in S3: the job's own Pod Identity (bucket.py)
        trainer_role, _ = _role(aws, pulumi, plan, "trainer-role", "pods.eks.amazonaws.com", [],
                                tags)
        storage_id = s3bucket.bucket_and_identity(
            aws, pulumi, k8s, plan, tags=tags, kms=kms, cluster=cluster, provider=provider,
            namespace=ns, role=trainer_role, depends_on=[system]) or storage_id
    pulumi.export("kubeconfig", pulumi.Output.secret(kubeconfig))
    pulumi.export("cluster_name", cluster.name)
    pulumi.export("node_pools", [p.cloud_name for p in pools if p.role == "gpu"])
    pulumi.export("system_pool", system.node_group_name)
    pulumi.export("storage_id", storage_id)
    pulumi.export("addons", sorted(installed))


def _kubeconfig(endpoint: str, ca: str, cluster_name: str, region: str) -> str:
    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": cluster_name,
        "clusters": [{"name": cluster_name, "cluster": {
            "server": endpoint, "certificate-authority-data": ca}}],
        "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name,
                                                         "user": cluster_name}}],
        "users": [{"name": cluster_name, "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1", "command": "aws",
            "args": ["eks", "get-token", "--cluster-name", cluster_name,
                     "--region", region]}}}]})
