"""EKS storage for the job: FSx for Lustre or EFS in the cluster's VPC (encrypted with the
stack's key) bound as the job's static volume, or a CephFS storage class."""

from __future__ import annotations

from stacks import common as c
from stacks.aws.network import VPC_CIDR


def storage(aws, pulumi, k8s, plan, tags, vpc, gpu_subnet, private, cluster, kms,
            provider, addons, ns):
    kind = plan.spec.storage.kind
    if kind == "cephfs":
        return c.cephfs_storage_class(k8s, pulumi, plan, provider).metadata["name"]
    ports = {"fsx-lustre": [(988, 988), (1018, 1023)], "efs": [(2049, 2049)]}.get(kind)
    if not ports:
        return None
    # Clients by the VPC's range, not the cluster's security group: a file system that
    # references the cluster keeps it (and all it needs) alive under `down --keep-storage`
    # (reclaunch/runtime/infra.py storage_keep_set). The VPC holds only our nodes. Ports and
    # sources as docs.aws.amazon.com/fsx/latest/LustreGuide/limit-access-security-groups.html
    # (988, 1018-1023 from the clients' addresses and the group itself; EFS: 2049).
    sg = aws.ec2.SecurityGroup(
        c.name(plan, kind), vpc_id=vpc.id, description=f"{kind} from cluster nodes", tags=tags,
        ingress=[{"protocol": "tcp", "from_port": a, "to_port": b,
                  "cidr_blocks": [VPC_CIDR], "self": True} for a, b in ports],
        egress=[{"protocol": "-1", "from_port": 0, "to_port": 0, "self": True,
                 "cidr_blocks": [VPC_CIDR]}])
    from reclaunch.planner.storage_size import billed_gib   # the plan prices the same sizes

    if kind == "fsx-lustre":
        # PERSISTENT_2 sells 1200 GiB then 2400 GiB steps; encrypted at rest with our key.
        gib = int(billed_gib("fsx-lustre", plan.spec.storage.size))
        fs = aws.fsx.LustreFileSystem(
            c.name(plan, "fsx"), storage_capacity=gib, subnet_ids=gpu_subnet.id,
            security_group_ids=[sg.id], deployment_type="PERSISTENT_2",
            per_unit_storage_throughput=250, data_compression_type="LZ4",
            file_system_type_version="2.15", kms_key_id=kms.arn, tags=tags)
        c.data_volume(k8s, pulumi, plan, provider, namespace=ns, driver="fsx.csi.aws.com", handle=fs.id,
                      capacity_gib=gib, depends_on=addons,
                      attributes={"dnsname": fs.dns_name, "mountname": fs.mount_name})
        return fs.id
    fs = aws.efs.FileSystem(c.name(plan, "efs"), encrypted=True, kms_key_id=kms.arn,
                            throughput_mode="elastic", performance_mode="generalPurpose",
                            tags=tags)
    for sn, zone in zip(private, ("a", "b", "c")):
        aws.efs.MountTarget(c.name(plan, "efs-mt", zone), file_system_id=fs.id,
                            subnet_id=sn.id, security_groups=[sg.id])
    efs_csi = aws.eks.Addon(c.name(plan, "efs-csi"), cluster_name=cluster.name,
                            addon_name="aws-efs-csi-driver", tags=tags)
    c.data_volume(k8s, pulumi, plan, provider, namespace=ns, driver="efs.csi.aws.com", handle=fs.id,
                  # elastic: the PV's capacity is a label, at least 1 TiB
                  capacity_gib=max(1024, int(billed_gib("efs", plan.spec.storage.size))),
                  depends_on=[efs_csi])
    return fs.id

