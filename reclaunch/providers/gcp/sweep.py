"""GCP orphan sweeper (google-cloud-compute, REST transport): managed instance groups,
instances, instance templates and disks labelled reclaunch-managed=true.

google.cloud.compute_v1 costs ~2.6 s to import, so it is only imported when a sweeper is
built. Managed instance groups carry no labels in the Compute API; one is ours when its
instance template's instance labels are (reclaunch labels both the template and its VMs).
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable

from reclaunch.errors import ProviderError, require
from reclaunch.runtime.sweep import (CLUSTER_TAG, Orphan, TransientError, UnreachableError,
                                     endpoint, instance_hourly, is_ours, sdk_limits, storage_hourly,
                                     within)

RANK = {"instance-group-manager": 0, "instance": 1, "instance-template": 2, "disk": 3}

# prices.md "Other line items": GCP pd-balanced 0.10, pd-ssd 0.17 USD per GB-month.
# Other disk types fall back to the pd-balanced price.
DISK_USD_PER_GB_MONTH = {"pd-balanced": 0.10, "pd-ssd": 0.17}
DEFAULT_DISK_USD_PER_GB_MONTH = DISK_USD_PER_GB_MONTH["pd-balanced"]

# Operation error codes worth retrying (the resource is still in use by one going away).
TRANSIENT_OP_ERRORS = {"RESOURCE_IN_USE_BY_ANOTHER_RESOURCE", "RESOURCE_NOT_READY",
                       "RATE_LIMIT_EXCEEDED", "QUOTA_EXCEEDED"}
GONE_STATUSES = {"STOPPING", "TERMINATED", "DELETING", "SUSPENDING"}  # for instances only


def _last(url: str | None) -> str:
    return (url or "").rstrip("/").rsplit("/", 1)[-1]


def _status(value: Any) -> str:
    return str(getattr(value, "name", value) or "")


class GcpSweeper:
    cloud = "gcp"

    def __init__(self, region: str, *, project: str | None = None, credentials: Any = None,
                 api_endpoint: str | None = None, poll_interval: float = 2.0,
                 op_timeout: float = 900.0, sleep: Callable[[float], None] = time.sleep,
                 catalog: Any = None):
        self.region = region
        self._catalog = catalog
        self._poll_interval, self._op_timeout, self._sleep = poll_interval, op_timeout, sleep
        self._cv1 = require("google.cloud.compute_v1", "gcp")
        if credentials is None:
            auth = require("google.auth", "gcp")
            try:
                credentials, default_project = auth.default(
                    scopes=["https://www.googleapis.com/auth/cloud-platform"])
            except auth.exceptions.DefaultCredentialsError:
                raise ProviderError("GCP credentials not found",
                                    hint="run `gcloud auth application-default login` or set "
                                         "GOOGLE_APPLICATION_CREDENTIALS") from None
            project = project or default_project
        self.project = project or os.environ.get("GOOGLE_CLOUD_PROJECT") or \
            os.environ.get("CLOUDSDK_CORE_PROJECT")
        if not self.project:
            raise ProviderError("no GCP project selected",
                                hint="set GOOGLE_CLOUD_PROJECT (or `gcloud config set project`)")
        self._kw: dict[str, Any] = {"credentials": credentials, "transport": "rest"}
        if api_endpoint:
            self._kw["client_options"] = {"api_endpoint": api_endpoint}
        self._clients: dict[str, Any] = {}

    # ---- plumbing ------------------------------------------------------------------------
    def _client(self, name: str):
        if name not in self._clients:
            client = getattr(self._cv1, name)(**self._kw)
            _bound_session(client)
            self._clients[name] = client
        return self._clients[name]

    def _call(self, fn: Callable[[], Any]) -> Any:
        from google.api_core import exceptions as gx

        try:
            return fn()
        except gx.NotFound:
            raise
        except (gx.Unauthenticated, gx.PermissionDenied) as exc:
            raise ProviderError(f"GCP refused the request: {_msg(exc)}",
                                hint="check `gcloud auth application-default login` and the "
                                     "project's IAM roles") from None
        except (gx.TooManyRequests, gx.ServiceUnavailable, gx.InternalServerError,
                gx.Conflict, gx.DeadlineExceeded) as exc:
            raise TransientError(f"GCP: {_msg(exc)}") from None
        except gx.GoogleAPICallError as exc:
            raise ProviderError(f"GCP: {_msg(exc)}") from None
        except OSError as exc:  # requests' ConnectionError and Timeout are OSErrors
            raise UnreachableError(f"cannot reach the GCP Compute API: {_msg(exc)}",
                                   hint="check the network (and api_endpoint, if set)") from None

    def _in_region(self, zone: str) -> bool:
        return not self.region or zone.startswith(self.region + "-")

    def _orphan(self, kind: str, res: Any, zone: str, labels: dict, hourly: float | None,
                **details) -> Orphan:
        return Orphan("gcp", zone or "global", kind, str(res.id or res.name), res.name,
                      labels.get(CLUSTER_TAG, ""), hourly, RANK[kind],
                      {"zone": zone, **details}, labels)

    def _price(self, machine_type: str, spot: bool) -> float | None:
        if not machine_type:
            return None
        return instance_hourly("gcp", machine_type, self.region, spot=spot,
                               catalog=self._catalog)

    def _aggregated(self, client: str, attr: str):
        """(zone, item) over every page of an aggregatedList."""
        pager = self._call(lambda: self._client(client).aggregated_list(project=self.project))
        for scope, scoped in self._call(lambda: list(pager)):
            zone = scope.split("/", 1)[-1] if scope.startswith("zones/") else ""
            if not zone or not self._in_region(zone):
                continue
            for item in getattr(scoped, attr, []):
                yield zone, item

    def _templates(self) -> dict[str, Any]:
        pager = self._call(lambda: self._client("InstanceTemplatesClient").list(
            project=self.project))
        return {t.name: t for t in self._call(lambda: list(pager))}

    # ---- list --------------------------------------------------------------------------
    def list(self, cluster: str | None = None) -> list[Orphan]:
        out: list[Orphan] = []
        templates = self._templates()
        for t in templates.values():
            labels = dict(t.properties.labels)
            if is_ours(labels, cluster):
                out.append(self._orphan("instance-template", t, "", labels, 0.0))
        for zone, m in self._aggregated("InstanceGroupManagersClient", "instance_group_managers"):
            t = templates.get(_last(m.instance_template))
            labels = dict(t.properties.labels) if t else {}
            if is_ours(labels, cluster):
                # Its instances are listed (and priced) on their own.
                out.append(self._orphan("instance-group-manager", m, zone, labels, 0.0,
                                        target_size=m.target_size,
                                        template=_last(m.instance_template)))
        for zone, i in self._aggregated("InstancesClient", "instances"):
            labels = dict(i.labels)
            if not is_ours(labels, cluster) or i.status in GONE_STATUSES:
                continue
            sched = i.scheduling
            spot = bool(sched and (sched.provisioning_model == "SPOT" or sched.preemptible))
            mt = _last(i.machine_type)
            out.append(self._orphan("instance", i, zone, labels, self._price(mt, spot),
                                    machine_type=mt, spot=spot))
        for zone, d in self._aggregated("DisksClient", "disks"):
            labels = dict(d.labels)
            if not is_ours(labels, cluster):
                continue
            dtype = _last(d.type_)
            rate = DISK_USD_PER_GB_MONTH.get(dtype, DEFAULT_DISK_USD_PER_GB_MONTH)
            out.append(self._orphan("disk", d, zone, labels, storage_hourly(d.size_gb, rate),
                                    size_gb=d.size_gb, disk_type=dtype))
        return out

    # ---- per-kind get / delete -----------------------------------------------------------
    def _get(self, o: Orphan) -> tuple[dict[str, str], bool] | None:
        """(labels, live) now, or None when gone."""
        from google.api_core.exceptions import NotFound

        p, z = self.project, o.details["zone"]
        try:
            if o.kind == "instance-template":
                t = self._call(lambda: self._client("InstanceTemplatesClient").get(
                    project=p, instance_template=o.name))
                return dict(t.properties.labels), True
            if o.kind == "instance-group-manager":
                m = self._call(lambda: self._client("InstanceGroupManagersClient").get(
                    project=p, zone=z, instance_group_manager=o.name))
                t = self._call(lambda: self._client("InstanceTemplatesClient").get(
                    project=p, instance_template=_last(m.instance_template)))
                return dict(t.properties.labels), True
            if o.kind == "instance":
                i = self._call(lambda: self._client("InstancesClient").get(
                    project=p, zone=z, instance=o.name))
                return dict(i.labels), i.status not in GONE_STATUSES
            d = self._call(lambda: self._client("DisksClient").get(project=p, zone=z, disk=o.name))
            return dict(d.labels), True
        except NotFound:
            return None

    def tags(self, o: Orphan) -> dict[str, str] | None:
        got = self._get(o)
        return got[0] if got and got[1] else None

    def exists(self, o: Orphan) -> bool:
        got = self._get(o)
        return bool(got and got[1])

    def delete(self, o: Orphan) -> None:
        from google.api_core.exceptions import NotFound

        p, z = self.project, o.details["zone"]
        calls = {
            "instance-group-manager": lambda: self._client(
                "InstanceGroupManagersClient").delete_unary(
                project=p, zone=z, instance_group_manager=o.name),
            "instance": lambda: self._client("InstancesClient").delete_unary(
                project=p, zone=z, instance=o.name),
            "instance-template": lambda: self._client("InstanceTemplatesClient").delete_unary(
                project=p, instance_template=o.name),
            "disk": lambda: self._client("DisksClient").delete_unary(
                project=p, zone=z, disk=o.name),
        }
        try:
            op = self._call(calls[o.kind])
        except NotFound:
            return  # gone already
        self._wait(op, z)

    def _wait(self, op: Any, zone: str) -> None:
        """Poll a zonal (or global) operation until DONE; raise on an operation error."""
        deadline = time.monotonic() + self._op_timeout
        while _status(op.status) != "DONE":
            if time.monotonic() > deadline:
                return  # still running server-side; verification will tell
            self._sleep(self._poll_interval)
            if zone:
                op = self._call(lambda: self._client("ZoneOperationsClient").get(
                    project=self.project, zone=zone, operation=op.name))
            else:
                op = self._call(lambda: self._client("GlobalOperationsClient").get(
                    project=self.project, operation=op.name))
        errors = list(op.error.errors) if op.error else []
        if errors:
            code, msg = errors[0].code, errors[0].message
            cls = TransientError if code in TRANSIENT_OP_ERRORS else ProviderError
            raise cls(f"GCP operation {op.name}: {code}: {msg}")


def _bound_session(client: Any) -> None:
    """compute_v1's REST transport sends through a google-auth AuthorizedSession whose default
    timeout is 120 s per request; every call gets sdk_limits()' (connect, read) instead."""
    session = getattr(getattr(client, "_transport", None), "_session", None)
    if session is None or getattr(session, "_reclaunch_bounded", False):
        return
    connect, read, _ = sdk_limits()
    send = session.request

    def request(method, url, *args, **kw):   # the read timeout is per read: a total deadline too
        kw["timeout"] = (connect, read)
        return within(lambda: send(method, url, *args, **kw), f"GCP {method} {url.split('?')[0][:200]}",
                      key=endpoint(url))
    session.request = request
    session._reclaunch_bounded = True


def _msg(exc: Exception) -> str:
    text = getattr(exc, "message", None) or str(exc)
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__
