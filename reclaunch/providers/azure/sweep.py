"""Azure orphan sweeper (azure-mgmt-compute): VM scale sets, VMs and managed disks tagged
reclaunch-managed=true, deleted through their long-running operations.

The SDK is imported lazily. `base_url`, `credential` and `authentication_policy` let tests
point the real client at a recorded-response server on 127.0.0.1 (plain http, fake token).
"""

from __future__ import annotations

import re
from typing import Any

from reclaunch.errors import ProviderError, require
from reclaunch.runtime.sweep import (CLUSTER_TAG, Orphan, TransientError, UnreachableError,
                                     endpoint, instance_hourly, is_ours, sdk_limits, storage_hourly,
                                     within)

RANK = {"vm-scale-set": 0, "virtual-machine": 1, "disk": 2}

# prices.md lists no Azure managed-disk price, so disk cost is shown as unknown ("?").
AZURE_DISK_USD_PER_GB_MONTH: float | None = None

TRANSIENT_STATUS = {408, 409, 429, 500, 502, 503, 504}  # 409: still attached / in use
_RG = re.compile(r"/resourceGroups/([^/]+)/", re.IGNORECASE)

# kind -> (client operation group, name of the resource-name parameter)
_GROUPS = {
    "vm-scale-set": "virtual_machine_scale_sets",
    "virtual-machine": "virtual_machines",
    "disk": "disks",
}


def _norm(location: str | None) -> str:
    return (location or "").replace(" ", "").lower()


class AzureSweeper:
    cloud = "azure"

    def __init__(self, region: str, *, subscription_id: str | None = None,
                 credential: Any = None, base_url: str | None = None,
                 authentication_policy: Any = None, polling_interval: float = 10.0,
                 catalog: Any = None, **client_kwargs: Any):
        self.region = region
        self._catalog = catalog
        self._polling_interval = polling_interval
        mgmt = require("azure.mgmt.compute", "azure")
        from reclaunch.providers.azure.account import env_subscription

        subscription_id = subscription_id or env_subscription()
        if not subscription_id:
            raise ProviderError("no Azure subscription selected",
                                hint="set AZURE_SUBSCRIPTION_ID (see `az account show`)")
        if credential is None:
            identity = require("azure.identity", "azure")
            # Its failure is logged as a multi-line WARNING on stderr; _call reports it as one line.
            import logging
            logging.getLogger("azure.identity").setLevel(logging.ERROR)
            credential = identity.DefaultAzureCredential()
        connect, read, attempts = sdk_limits()   # a hung ARM endpoint fails in seconds
        kwargs = {"connection_timeout": connect, "read_timeout": read,
                  "retry_total": attempts - 1, "retry_backoff_factor": 0.8, **client_kwargs}
        kwargs.setdefault("transport", _transport())
        if authentication_policy is not None:
            kwargs["authentication_policy"] = authentication_policy
        if base_url:
            kwargs["base_url"] = base_url
        self.subscription_id = subscription_id
        self._client = mgmt.ComputeManagementClient(credential, subscription_id, **kwargs)

    # ---- plumbing ------------------------------------------------------------------------
    def _call(self, fn, *args, **kw):
        """Run an SDK call, translating azure-core errors into ours."""
        from azure.core import exceptions as ax

        try:
            return fn(*args, **kw)
        except ax.ClientAuthenticationError as exc:
            raise ProviderError(f"Azure authentication failed: {_first_line(exc)}",
                                hint="run `az login` or set AZURE_CLIENT_ID/AZURE_TENANT_ID/"
                                     "AZURE_CLIENT_SECRET") from None
        except ax.ResourceNotFoundError:
            raise
        except (ax.ServiceRequestError, ax.ServiceResponseError) as exc:
            raise UnreachableError(f"cannot reach Azure Resource Manager: {_first_line(exc)}",
                                   hint="check the network (and base_url, if set)") from None
        except ax.HttpResponseError as exc:
            cls = TransientError if exc.status_code in TRANSIENT_STATUS else ProviderError
            raise cls(f"Azure {exc.status_code}: {_first_line(exc)}") from None

    def _orphan(self, kind: str, res: Any, hourly: float | None, **details) -> Orphan:
        tags = dict(res.tags or {})
        m = _RG.search(res.id or "")
        return Orphan("azure", _norm(res.location) or self.region, kind, res.id, res.name,
                      tags.get(CLUSTER_TAG, ""), hourly, RANK[kind],
                      {"resource_group": m.group(1) if m else "", **details}, tags)

    def _in_region(self, res: Any) -> bool:
        return not self.region or _norm(res.location) == _norm(self.region)

    def _price(self, size: str | None, spot: bool) -> float | None:
        if not size:
            return None
        return instance_hourly("azure", size, _norm(self.region), spot=spot,
                               catalog=self._catalog)

    # ---- list --------------------------------------------------------------------------
    def list(self, cluster: str | None = None) -> list[Orphan]:
        c = self._client
        out: list[Orphan] = []
        for ss in self._call(lambda: list(c.virtual_machine_scale_sets.list_all())):
            if not (self._in_region(ss) and is_ours(ss.tags, cluster)):
                continue
            sku = ss.sku
            capacity = int(sku.capacity or 0) if sku else 0
            prof = ss.virtual_machine_profile
            spot = bool(prof and str(prof.priority or "").lower() == "spot")
            unit = self._price(sku.name if sku else None, spot)
            out.append(self._orphan("vm-scale-set", ss, None if unit is None else unit * capacity,
                                    size=sku.name if sku else None, capacity=capacity,
                                    spot=spot))
        for vm in self._call(lambda: list(c.virtual_machines.list_all())):
            if not (self._in_region(vm) and is_ours(vm.tags, cluster)):
                continue
            size = vm.hardware_profile.vm_size if vm.hardware_profile else None
            spot = str(vm.priority or "").lower() == "spot"
            out.append(self._orphan("virtual-machine", vm, self._price(size, spot),
                                    size=size, spot=spot))
        for d in self._call(lambda: list(c.disks.list())):
            if not (self._in_region(d) and is_ours(d.tags, cluster)):
                continue
            hourly = storage_hourly(d.disk_size_gb or 0, AZURE_DISK_USD_PER_GB_MONTH)
            out.append(self._orphan("disk", d, hourly, size_gb=d.disk_size_gb,
                                    disk_state=d.disk_state))
        return out

    # ---- Sweeper protocol ----------------------------------------------------------------
    def _get(self, o: Orphan):
        from azure.core.exceptions import ResourceNotFoundError

        group = getattr(self._client, _GROUPS[o.kind])
        try:
            res = self._call(group.get, o.details["resource_group"], o.name)
        except ResourceNotFoundError:
            return None
        if str(getattr(res, "provisioning_state", "") or "").lower() == "deleting":
            return None
        return res

    def tags(self, o: Orphan) -> dict[str, str] | None:
        res = self._get(o)
        return None if res is None else dict(res.tags or {})

    def exists(self, o: Orphan) -> bool:
        return self._get(o) is not None

    def delete(self, o: Orphan) -> None:
        from azure.core.exceptions import ResourceNotFoundError

        group = getattr(self._client, _GROUPS[o.kind])
        try:
            poller = self._call(group.begin_delete, o.details["resource_group"], o.name,
                                polling_interval=self._polling_interval)
            self._call(poller.result)  # the LRO: wait until ARM says Succeeded
        except ResourceNotFoundError:
            return  # gone already


def _transport():
    """azure-core's requests transport with a total deadline on each request: its read_timeout
    is per socket read, so a trickling endpoint would never end (runtime/deadline.py)."""
    from azure.core.pipeline.transport import RequestsTransport

    class DeadlineTransport(RequestsTransport):
        def send(self, request, **kwargs):
            what = f"Azure {request.method} {str(request.url).split('?')[0][:200]}"
            return within(lambda: super(DeadlineTransport, self).send(request, **kwargs), what,
                          key=endpoint(str(request.url)))

    return DeadlineTransport()


def _first_line(exc: Exception) -> str:
    msg = getattr(exc, "message", None) or str(exc)
    return msg.strip().splitlines()[0] if msg.strip() else type(exc).__name__
