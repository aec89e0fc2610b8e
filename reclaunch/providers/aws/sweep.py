"""AWS orphan sweeper (boto3): finds resources tagged reclaunch-managed=true and deletes them.

boto3 is imported lazily. The endpoint is never set here: boto3 itself honours
AWS_ENDPOINT_URL / AWS_ENDPOINT_URL_<SERVICE> (moto server in tests, VPC endpoints in prod).
"""

from __future__ import annotations

from typing import Any, Callable

from reclaunch.errors import ProviderError, require
from reclaunch.providers.aws.sweep_billing import (EBS_USD_PER_GB_MONTH, EKS_USD_PER_HOUR,
                                                   RANK as BILLING_RANK, BillingKinds)
from reclaunch.providers.aws.sdk import (LIVE_FLEET_STATES, LIVE_INSTANCE_STATES,  # noqa: F401
                                         TRANSIENT_CODES, _not_found, _tags)
from reclaunch.runtime.sweep import (CLUSTER_TAG, MANAGED_TAG, Orphan, TransientError,  # noqa: F401
                                     UnreachableError, endpoint, instance_hourly, is_ours,
                                     sdk_limits, storage_hourly, within)

RANK = {   # deletion order: what owns or uses others first (sweep_billing.RANK fits between)
    "eks-nodegroup": 0, "eks-cluster": 1, "autoscaling-group": 2, "spot-fleet-request": 3,
    "ec2-fleet": 3, "instance": 4, "launch-template": 6, "placement-group": 7,
    "network-interface": 8, "volume": 9, "security-group": 10, **BILLING_RANK,
}

class AwsSweeper(BillingKinds):
    cloud = "aws"

    def __init__(self, region: str, *, session: Any = None, catalog: Any = None):
        self.region = region
        self._catalog = catalog
        boto3 = require("boto3", "aws")
        from reclaunch.providers.aws.pages import check_endpoint_env
        check_endpoint_env()   # one clear line, not botocore's ValueError at the first call
        self._session = session or boto3.session.Session(region_name=region)
        self._clients: dict[str, Any] = {}
        self.progress: Callable[[str], None] | None = None   # set by runtime.sweep

    # ---- plumbing ------------------------------------------------------------------------
    def _client(self, service: str):
        if service not in self._clients:
            from botocore.config import Config

            # Bounded retries (standard mode backs off exponentially) and short timeouts: a
            # hung or unreachable endpoint must fail in seconds (runtime/sweep.sdk_limits).
            connect, read, attempts = sdk_limits()
            cfg = Config(retries={"total_max_attempts": attempts, "mode": "standard"},
                         connect_timeout=connect, read_timeout=read)
            self._clients[service] = self._session.client(service, region_name=self.region,
                                                          config=cfg)
        return self._clients[service]

    def _call(self, service: str, op: str, **kw) -> dict:
        """One API call with errors translated: ProviderError/TransientError, never raw SDK."""
        import botocore.exceptions as bx
        from botocore.parsers import ResponseParserError

        client = self._client(service)
        try:   # botocore's read_timeout is per socket read: the deadline bounds the whole call
            return within(lambda: getattr(client, op)(**kw), f"AWS {service}.{op} in {self.region}",
                          key=endpoint(client.meta.endpoint_url))
        except bx.NoCredentialsError:
            raise ProviderError("AWS credentials not found",
                                hint="run `aws configure`, or set AWS_PROFILE or "
                                     "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY") from None
        except (bx.EndpointConnectionError, bx.ConnectTimeoutError, bx.ReadTimeoutError,
                bx.ConnectionClosedError, bx.HTTPClientError) as exc:
            raise UnreachableError(f"cannot reach AWS {service} in {self.region}: "
                                   f"{' '.join(str(exc).split())[:200]}",
                                   hint="check the network, the region and AWS_ENDPOINT_URL"
                                   ) from None
        except ResponseParserError as exc:
            # An endpoint that answers with something that is not the API (a 500 page, an
            # emulator lacking the operation): a failure of this call, not of the sweep.
            err = ProviderError(f"{service}.{op}: unreadable answer: {str(exc).splitlines()[0]}")
            err.code = "ResponseParserError"
            raise err from None
        except bx.ClientError as exc:
            err = exc.response.get("Error", {})
            code, msg = err.get("Code", ""), err.get("Message", str(exc))
            if code in ("AuthFailure", "UnrecognizedClientException", "InvalidClientTokenId",
                        "ExpiredToken", "ExpiredTokenException"):
                raise ProviderError(f"AWS rejected the credentials ({code})",
                                    hint="refresh them: `aws sso login` or `aws configure`"
                                    ) from None
            cls = TransientError if code in TRANSIENT_CODES else ProviderError
            err = cls(f"{service}.{op}: {code}: {msg}")
            err.code = code
            raise err from None

    def _pages(self, service: str, op: str, key: str, **kw) -> list[dict]:
        from reclaunch.providers.aws.pages import pages   # a repeated token ends, loudly
        tok = "nextToken" if service == "eks" else "NextToken"
        return [item for resp in pages(lambda **k: self._call(service, op, **k), kw, token_in=tok,
                                       token_out=tok, what=f"{service}.{op}")
                for item in resp.get(key, [])]

    def _tag_filters(self, cluster: str | None) -> list[dict]:
        f = [{"Name": f"tag:{MANAGED_TAG}", "Values": ["true"]}]
        if cluster:
            f.append({"Name": f"tag:{CLUSTER_TAG}", "Values": [cluster]})
        return f

    def _orphan(self, kind: str, id: str, name: str, tags: dict, hourly: float | None,
                **details) -> Orphan:
        return Orphan("aws", self.region, kind, id, name, tags.get(CLUSTER_TAG, ""), hourly,
                      RANK[kind], details, tags)

    def _price(self, instance_type: str | None, spot: bool) -> float | None:
        if not instance_type:
            return None
        return instance_hourly("aws", instance_type, self.region, spot=spot,
                               catalog=self._catalog)

    # ---- list --------------------------------------------------------------------------
    def list(self, cluster: str | None = None) -> list[Orphan]:
        out: list[Orphan] = []
        self.list_errors = []
        for lister in (self._eks, self._asgs, self._spot_fleets, self._ec2_fleets,
                       self._instances, self._launch_templates, self._placement_groups,
                       self._enis, self._volumes, self._security_groups,
                       *(getattr(self, n) for n in self.BILLING_LISTERS)):
            if self.progress:
                self.progress(f"  listing {lister.__name__.strip('_').replace('_', ' ')}")
            try:
                out += [o for o in lister(cluster) if is_ours(o.tags, cluster)]
            except ProviderError as exc:
                # One kind the API refuses (a permission, an endpoint that lacks it) must not
                # hide the others: report it and keep sweeping. Credential errors still stop.
                if not getattr(exc, "code", None):
                    raise
                self.list_errors.append(f"{lister.__name__.strip('_')}: {exc.message}")
        return out

    def _instances(self, cluster):
        filters = self._tag_filters(cluster) + [
            {"Name": "instance-state-name", "Values": LIVE_INSTANCE_STATES}]
        out = []
        for res in self._pages("ec2", "describe_instances", "Reservations", Filters=filters):
            for i in res.get("Instances", []):
                tags = _tags(i.get("Tags"))
                spot = i.get("InstanceLifecycle") == "spot"
                fleet = tags.get("aws:ec2spot:fleet-request-id") or tags.get("aws:ec2:fleet-id")
                # A fleet's instances are priced in the fleet (target capacity x price).
                price = 0.0 if fleet else self._price(i.get("InstanceType"), spot)
                out.append(self._orphan("instance", i["InstanceId"], tags.get("Name", ""), tags,
                                        price, fleet=fleet,
                                        instance_type=i.get("InstanceType"), spot=spot,
                                        state=i.get("State", {}).get("Name")))
        return out

    def _spot_fleets(self, cluster):
        out = []
        for r in self._pages("ec2", "describe_spot_fleet_requests", "SpotFleetRequestConfigs"):
            if r.get("SpotFleetRequestState") not in LIVE_FLEET_STATES:
                continue
            cfg = r.get("SpotFleetRequestConfig", {})
            tags = _tags(r.get("Tags")) or _tags(
                t for ts in cfg.get("TagSpecifications", []) for t in ts.get("Tags", []))
            itype = next((s.get("InstanceType") for s in cfg.get("LaunchSpecifications", [])
                          if s.get("InstanceType")), None) or next(
                (ov.get("InstanceType") for c in cfg.get("LaunchTemplateConfigs", [])
                 for ov in c.get("Overrides", []) if ov.get("InstanceType")), None)
            capacity = int(cfg.get("TargetCapacity") or 0)
            unit = self._price(itype, spot=True)
            out.append(self._orphan("spot-fleet-request", r["SpotFleetRequestId"], "", tags,
                                    None if unit is None else unit * capacity,
                                    instance_type=itype, target_capacity=capacity))
        return out

    def _ec2_fleets(self, cluster):
        out = []
        for f in self._pages("ec2", "describe_fleets", "Fleets"):
            if f.get("FleetState") not in LIVE_FLEET_STATES:
                continue
            tags = _tags(f.get("Tags"))
            spec = f.get("TargetCapacitySpecification", {})
            capacity = int(spec.get("TotalTargetCapacity") or 0)
            spot = spec.get("DefaultTargetCapacityType") == "spot"
            itype = next((ov.get("InstanceType") for c in f.get("LaunchTemplateConfigs", [])
                          for ov in c.get("Overrides", []) if ov.get("InstanceType")), None)
            unit = self._price(itype, spot)
            out.append(self._orphan("ec2-fleet", f["FleetId"], "", tags,
                                    None if unit is None else unit * capacity,
                                    instance_type=itype, target_capacity=capacity))
        return out

    def _asgs(self, cluster):
        out = []
        for g in self._pages("autoscaling", "describe_auto_scaling_groups",
                             "AutoScalingGroups"):
            if g.get("Status"):  # "Delete in progress"
                continue
            tags = _tags(g.get("Tags"))
            name = g["AutoScalingGroupName"]
            # Instances of the ASG are listed (and priced) on their own; the ASG costs nothing.
            out.append(self._orphan("autoscaling-group", name, name, tags, 0.0,
                                    desired=g.get("DesiredCapacity")))
        return out

    def _launch_templates(self, cluster):
        return [self._orphan("launch-template", t["LaunchTemplateId"],
                             t.get("LaunchTemplateName", ""), _tags(t.get("Tags")), 0.0)
                for t in self._pages("ec2", "describe_launch_templates", "LaunchTemplates",
                                     Filters=self._tag_filters(cluster))]

    def _placement_groups(self, cluster):
        resp = self._call("ec2", "describe_placement_groups",
                          Filters=self._tag_filters(cluster))
        return [self._orphan("placement-group", g.get("GroupId") or g["GroupName"],
                             g["GroupName"], _tags(g.get("Tags")), 0.0,
                             group_name=g["GroupName"])
                for g in resp.get("PlacementGroups", []) if g.get("State") != "deleted"]

    def _enis(self, cluster):
        filters = self._tag_filters(cluster) + [{"Name": "status", "Values": ["available"]}]
        return [self._orphan("network-interface", n["NetworkInterfaceId"], "",
                             _tags(n.get("TagSet")), 0.0)
                for n in self._pages("ec2", "describe_network_interfaces", "NetworkInterfaces",
                                     Filters=filters)]

    def _volumes(self, cluster):
        out = []
        for v in self._pages("ec2", "describe_volumes", "Volumes",
                             Filters=self._tag_filters(cluster)):
            if v.get("State") in ("deleting", "deleted"):
                continue
            tags = _tags(v.get("Tags"))
            out.append(self._orphan("volume", v["VolumeId"], tags.get("Name", ""), tags,
                                    storage_hourly(v.get("Size"), EBS_USD_PER_GB_MONTH),
                                    size_gb=v.get("Size"), volume_type=v.get("VolumeType")))
        return out

    def _security_groups(self, cluster):
        return [self._orphan("security-group", g["GroupId"], g.get("GroupName", ""),
                             _tags(g.get("Tags")), 0.0, vpc_id=g.get("VpcId"))
                for g in self._pages("ec2", "describe_security_groups", "SecurityGroups",
                                     Filters=self._tag_filters(cluster))
                if g.get("GroupName") != "default"]

    def _eks(self, cluster):
        out = []
        for name in self._pages("eks", "list_clusters", "clusters"):
            try:
                c = self._call("eks", "describe_cluster", name=name)["cluster"]
            except ProviderError:
                continue  # deleted between list and describe
            if c.get("status") == "DELETING":
                continue
            tags = c.get("tags") or {}
            if not is_ours(tags, cluster):
                continue
            for ng in self._pages("eks", "list_nodegroups", "nodegroups", clusterName=name):
                try:
                    n = self._call("eks", "describe_nodegroup", clusterName=name,
                                   nodegroupName=ng)["nodegroup"]
                except ProviderError:
                    continue
                if n.get("status") == "DELETING":
                    continue
                # Node instances are listed (and priced) on their own.
                out.append(self._orphan("eks-nodegroup", f"{name}/{ng}", ng,
                                        n.get("tags") or {}, 0.0, eks_cluster=name))
            out.append(self._orphan("eks-cluster", c.get("arn", name), name, tags,
                                    EKS_USD_PER_HOUR))
        return out

    # ---- per-kind get / delete -----------------------------------------------------------
    def _describe(self, o: Orphan) -> tuple[dict[str, str], bool] | None:
        """(tags, live) for the resource now, or None when it is gone."""
        try:
            fn = self._DESCRIBE.get(o.kind) or getattr(type(self), self.BILLING_DESCRIBE[o.kind])
            return fn(self, o)
        except ProviderError as exc:
            if _not_found(exc):
                return None
            raise

    def _d_instance(self, o):
        res = self._call("ec2", "describe_instances", InstanceIds=[o.id])["Reservations"]
        i = res[0]["Instances"][0] if res and res[0].get("Instances") else None
        if i is None:
            return None
        return _tags(i.get("Tags")), i["State"]["Name"] in LIVE_INSTANCE_STATES

    def _d_spot_fleet(self, o):
        rs = self._call("ec2", "describe_spot_fleet_requests",
                        SpotFleetRequestIds=[o.id]).get("SpotFleetRequestConfigs", [])
        if not rs:
            return None
        return _tags(rs[0].get("Tags")) or o.tags, rs[0].get("SpotFleetRequestState") in \
            LIVE_FLEET_STATES

    def _d_ec2_fleet(self, o):
        fs = self._call("ec2", "describe_fleets", FleetIds=[o.id]).get("Fleets", [])
        if not fs:
            return None
        return _tags(fs[0].get("Tags")), fs[0].get("FleetState") in LIVE_FLEET_STATES

    def _d_asg(self, o):
        gs = self._call("autoscaling", "describe_auto_scaling_groups",
                        AutoScalingGroupNames=[o.id]).get("AutoScalingGroups", [])
        if not gs:
            return None
        return _tags(gs[0].get("Tags")), not gs[0].get("Status")

    def _d_launch_template(self, o):
        ts = self._call("ec2", "describe_launch_templates",
                        LaunchTemplateIds=[o.id]).get("LaunchTemplates", [])
        return (_tags(ts[0].get("Tags")), True) if ts else None

    def _d_placement_group(self, o):
        gs = self._call("ec2", "describe_placement_groups",
                        GroupNames=[o.details["group_name"]]).get("PlacementGroups", [])
        gs = [g for g in gs if g.get("State") != "deleted"]
        return (_tags(gs[0].get("Tags")), gs[0].get("State") != "deleting") if gs else None

    def _d_eni(self, o):
        ns = self._call("ec2", "describe_network_interfaces",
                        NetworkInterfaceIds=[o.id]).get("NetworkInterfaces", [])
        return (_tags(ns[0].get("TagSet")), True) if ns else None

    def _d_volume(self, o):
        vs = self._call("ec2", "describe_volumes", VolumeIds=[o.id]).get("Volumes", [])
        if not vs:
            return None
        return _tags(vs[0].get("Tags")), vs[0].get("State") not in ("deleting", "deleted")

    def _d_security_group(self, o):
        gs = self._call("ec2", "describe_security_groups",
                        GroupIds=[o.id]).get("SecurityGroups", [])
        return (_tags(gs[0].get("Tags")), True) if gs else None

    def _d_eks_cluster(self, o):
        c = self._call("eks", "describe_cluster", name=o.name)["cluster"]
        return c.get("tags") or {}, c.get("status") != "DELETING"

    def _d_eks_nodegroup(self, o):
        n = self._call("eks", "describe_nodegroup", clusterName=o.details["eks_cluster"],
                       nodegroupName=o.name)["nodegroup"]
        return n.get("tags") or {}, n.get("status") != "DELETING"

    _DESCRIBE: dict[str, Callable] = {
        "instance": _d_instance, "spot-fleet-request": _d_spot_fleet,
        "ec2-fleet": _d_ec2_fleet, "autoscaling-group": _d_asg,
        "launch-template": _d_launch_template, "placement-group": _d_placement_group,
        "network-interface": _d_eni, "volume": _d_volume,
        "security-group": _d_security_group, "eks-cluster": _d_eks_cluster,
        "eks-nodegroup": _d_eks_nodegroup,
    }

    _DELETE: dict[str, Callable[[AwsSweeper, Orphan], tuple[str, str, dict]]] = {
        "instance": lambda s, o: ("ec2", "terminate_instances", {"InstanceIds": [o.id]}),
        "spot-fleet-request": lambda s, o: ("ec2", "cancel_spot_fleet_requests", {
            "SpotFleetRequestIds": [o.id], "TerminateInstances": True}),
        "ec2-fleet": lambda s, o: ("ec2", "delete_fleets", {
            "FleetIds": [o.id], "TerminateInstances": True}),
        "autoscaling-group": lambda s, o: ("autoscaling", "delete_auto_scaling_group", {
            "AutoScalingGroupName": o.id, "ForceDelete": True}),
        "launch-template": lambda s, o: ("ec2", "delete_launch_template", {
            "LaunchTemplateId": o.id}),
        "placement-group": lambda s, o: ("ec2", "delete_placement_group", {
            "GroupName": o.details["group_name"]}),
        "network-interface": lambda s, o: ("ec2", "delete_network_interface", {
            "NetworkInterfaceId": o.id}),
        "volume": lambda s, o: ("ec2", "delete_volume", {"VolumeId": o.id}),
        "security-group": lambda s, o: ("ec2", "delete_security_group", {"GroupId": o.id}),
        "eks-cluster": lambda s, o: ("eks", "delete_cluster", {"name": o.name}),
        "eks-nodegroup": lambda s, o: ("eks", "delete_nodegroup", {
            "clusterName": o.details["eks_cluster"], "nodegroupName": o.name}),
    }

    # ---- Sweeper protocol ----------------------------------------------------------------
    def tags(self, o: Orphan) -> dict[str, str] | None:
        got = self._describe(o)
        return got[0] if got and got[1] else None

    def exists(self, o: Orphan) -> bool:
        got = self._describe(o)
        return bool(got and got[1])

    def delete(self, o: Orphan) -> None:
        steps = self.BILLING_DELETE_FN.get(o.kind)
        try:
            if steps:   # kinds deleted in more than one call
                return getattr(self, steps)(o)
            service, op, kw = (self._DELETE[o.kind](self, o) if o.kind in self._DELETE
                               else self.BILLING_DELETE[o.kind](o))
            resp = self._call(service, op, **kw)
        except ProviderError as exc:
            if _not_found(exc):
                return  # gone already
            raise
        # Batch APIs report per-item failures in the body rather than as errors.
        bad = resp.get("UnsuccessfulFleetRequests") or resp.get("UnsuccessfulFleetDeletions")
        if bad:
            err = bad[0].get("Error", {})
            code = err.get("Code", "")
            if "NotFound" not in code:
                raise TransientError(f"{op}: {code}: {err.get('Message', '')}")
