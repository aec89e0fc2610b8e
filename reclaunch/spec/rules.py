"""cluster.yaml rules that span fields or need the catalog. Pure and offline.

Returns (field path, message) problems; `reclaunch.spec` turns them into file:line errors.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.spec.models import Spec

from reclaunch import clouds
from reclaunch.spec import buckets, job_rules
from reclaunch.spec.facts import (  # noqa: F401
    LOCAL_MAX_PROCESSES, MAX_STORAGE_BYTES, NAME_RULES, STORAGE_BY_CLOUD, own_cluster, runs_here)
from reclaunch.spec.sharders import pin_problems

# Reserved-capacity kinds each cloud sells (its facts: name, id pattern, example).
RESERVATION_KINDS = clouds.PerCloud(lambda f: tuple(r.name for r in f.reservation_kinds))


def encryption_at_host_clouds() -> tuple[str, ...]:
    """Where `security.encryption_at_host` means something (the others always encrypt at the host)."""
    return tuple(f.name for f in clouds.all_facts() if f.encryption_at_host)


Problem = tuple[tuple[str | int, ...], str]


def _close(word: str, choices: list[str], n: int, cutoff: float) -> list[str]:
    import difflib   # here, not at the top: only a spec with a typo needs it (issue 25)

    return difflib.get_close_matches(word, choices, n=n, cutoff=cutoff)


def gpu_family(gpu: str) -> str:
    """'H100-80GB' -> 'H100', 'H100-NVL-94GB' -> 'H100-NVL': the name without its memory, which
    is how people and the vendors name the product ("an H100"; "H100 NVL" is another one)."""
    return re.sub(r"-\d+GB$", "", gpu)


def normalize_gpu(name: str, known: list[str]) -> str | list[str]:
    """'h100' -> 'H100-80GB'; an ambiguous or unknown name returns the candidates.

    A bare product name is taken when one catalog GPU is that product ('H100', 'H100 NVL');
    one that several memory sizes share ('A100': 40 and 80 GB) returns them, to be asked."""
    key = re.sub(r"[\s_]+", "-", name.strip().upper()).replace("GIB", "GB")
    if key in known:
        return key
    family = [k for k in known if gpu_family(k) == key]
    if family:
        return family[0] if len(family) == 1 else sorted(family)
    hits = [k for k in known if k.startswith(key + "-") or k.replace("-", "") == key.replace("-", "")]
    return hits[0] if len(hits) == 1 else (hits or _close(key, known, n=3, cutoff=0.4))


def cross_check(spec: "Spec", catalog=None) -> list[Problem]:
    """Rules spanning fields or needing the catalog. Returns (path, message) problems."""
    from reclaunch.catalog import load_catalog

    cat = catalog or load_catalog()
    out: list[Problem] = []
    s = spec
    if s.autoscaling:
        a = s.autoscaling
        if a.min_nodes > a.max_nodes:
            out.append((("autoscaling", "min_nodes"), f"min_nodes {a.min_nodes} > max_nodes {a.max_nodes}"))
        elif not a.min_nodes <= s.nodes <= a.max_nodes:
            out.append((("nodes",), f"nodes {s.nodes} must be within autoscaling "
                        f"min_nodes..max_nodes ({a.min_nodes}..{a.max_nodes})"))
    kinds = STORAGE_BY_CLOUD[s.cloud]
    kind = clouds.storage_kind(s.storage.kind)   # the kind's one record (its cloud's facts)
    # Largest size the kind is sold at without a support request (its steps' maximum).
    most = kind.steps.maximum_gib if kind.steps else None
    if s.storage.kind not in kinds:
        out.append((("storage", "kind"), f"{s.storage.kind!r} is not available on {s.cloud}; "
                    f"choose one of {', '.join(kinds)}"))
    elif kind.sized and not s.storage.size:
        out.append((("storage", "size"), f"required for storage kind {s.storage.kind} (e.g. 1.2TiB)"))
    elif s.storage.size and most and s.storage.size > most * 2**30:
        out.append((("storage", "size"), f"{s.storage.size / 2**40:g} TiB is over the {most / 1024:g} "
                    f"TiB {s.storage.kind} is sold at without a support request"))
    elif kind.existing and kind.existing.pattern and \
            not re.fullmatch(kind.existing.pattern, s.storage.existing or ""):
        # A file system the stack mounts but cannot create (CephFS through ceph-csi).
        out.append((("storage", "existing"), f"required for storage kind {s.storage.kind}: "
                    f"'{kind.existing.form}' of the existing file system"))
    out += _bucket_rules(s)
    out += _capacity_rules(s)
    out += job_rules.table_names(s) + job_rules.din_sequence(s)
    out += pin_problems(s.model)          # a sharding the table's TorchRec module cannot take
    pattern, rule = NAME_RULES[s.cloud]
    if not re.fullmatch(pattern, s.name):
        out.append((("name",), f"{s.name!r} {rule} on {s.cloud}"))
    if s.storage.size is not None and s.storage.size > MAX_STORAGE_BYTES:
        from reclaunch.spec.units import human_bytes
        out.append((("storage", "size"), f"{human_bytes(s.storage.size)} is larger than any file "
                    f"system reclaunch provisions (at most {MAX_STORAGE_BYTES // 2**50} PiB)"))
    if s.kubernetes is not None and not own_cluster(s.cloud):
        out.append((("kubernetes",), f"only for cloud: {', '.join(clouds.own_names())}; remove it"))
    if runs_here(s.cloud) and s.max_nodes * s.gpus_per_node > LOCAL_MAX_PROCESSES:
        out.append((("nodes",), f"cloud: local would run {s.max_nodes * s.gpus_per_node} "
                    f"training processes on this machine; at most {LOCAL_MAX_PROCESSES}"))
    if runs_here(s.cloud):
        for field in ("region", "instance_type", "gpu"):
            if getattr(s, field):
                out.append(((field,), "cloud: local runs on this machine and takes no "
                            f"{field}; remove it"))
        if s.interconnect.inter_node not in ("auto", "ethernet"):
            out.append((("interconnect", "inter_node"), "cloud: local uses gloo over loopback; "
                        "use auto or ethernet"))
        return out
    if own_cluster(s.cloud):   # the cluster's nodes are checked at plan time, not here
        from reclaunch.spec.kubernetes import rules as own_cluster_rules
        return out + own_cluster_rules(s)
    if s.spot.enabled:
        out += _spot_checkpoints(s, kinds)
    if not s.region:
        out.append((("region",), f"required for cloud: {s.cloud} (e.g. {', '.join(cat.regions(s.cloud)[:3])})"))
    elif s.region not in (known := cat.regions(s.cloud)):
        # A region no catalog row sells in cannot be planned or priced; say which ones can.
        close = _close(s.region, known, n=3, cutoff=0.8)
        # A transposed pair (us-esat-1) scores no better than a different word (us-west-1).
        close.sort(key=lambda r: sorted(r) != sorted(s.region))
        out.append((("region",), f"{s.region!r}: no {s.cloud} GPU offer in the catalog is in that region"
                    + (f" — did you mean {close[0]}?" if close else "")
                    + f" ({s.cloud} regions: {', '.join(known)})"))
    else:
        out += _zones(s, cat)
    if not s.job.image:
        out.append((("job", "image"), "required for cloud clusters: the training image to pull"))
    gpus = sorted(cat.gpus)
    gpu = None
    if s.gpu:
        got = normalize_gpu(s.gpu, gpus)
        if isinstance(got, str):
            gpu = got
        elif len(got) > 1 and {gpu_family(g) for g in got} == {gpu_family(got[0])}:
            out.append((("gpu",), f"{s.gpu!r} names {len(got)} GPUs: {' or '.join(got)}; "
                        "write which (they differ in memory, so in what fits)"))
        else:
            hint = f" — did you mean {' or '.join(got)}?" if got else f"; known: {', '.join(gpus)}"
            out.append((("gpu",), f"unknown GPU {s.gpu!r}{hint}"))
    fabric = s.interconnect.inter_node
    out += job_rules.offer_in_region(s, cat, gpu)
    if s.instance_type:
        inst = cat.instance(s.cloud, s.instance_type)
        if inst is None:
            names = cat.instance_types(s.cloud)
            close = _close(s.instance_type, names, n=1, cutoff=0.5)
            elsewhere = [o.cloud for o in cat.offers if o.instance_type == s.instance_type]
            hint = (f" — did you mean {close[0]}?" if close else
                    f"; it is a {elsewhere[0]} instance" if elsewhere else
                    f"; known: {', '.join(names)}")
            out.append((("instance_type",), f"{s.instance_type!r} is not a known {s.cloud} GPU "
                        f"instance{hint}"))
        else:
            if gpu and gpu != inst.gpu:
                out.append((("gpu",), f"{s.instance_type} has {inst.gpu}, not {gpu}"))
            if s.gpus_per_node != inst.gpu_count:
                out.append((("gpus_per_node",), f"{s.instance_type} has {inst.gpu_count} GPUs "
                            f"per node, not {s.gpus_per_node}"))
            if fabric not in ("auto", "ethernet", inst.fabric):
                out.append((("interconnect", "inter_node"), f"{s.instance_type} has {inst.fabric}, "
                            f"not {fabric}; use auto, {inst.fabric} or ethernet"))
            if s.interconnect.intra_node == "nvlink" and inst.intra_node != "nvlink":
                out.append((("interconnect", "intra_node"), f"{s.instance_type} has no NVLink (PCIe only)"))
            elif s.interconnect.intra_node == "pcie" and inst.intra_node == "nvlink" and inst.gpu_count > 1:
                out.append((("interconnect", "intra_node"), f"{s.instance_type} has {inst.nvlink or 'NVLink'}; "
                            "pcie would plan a machine it is not (leave intra_node out)"))
    else:
        cands = [o for o in cat.offers if o.cloud == s.cloud and (gpu is None or o.gpu == gpu)]
        if not s.gpu:
            out.append((("gpu",), "give gpu (e.g. H100-80GB) or instance_type"))
        elif gpu and not cands:
            have = sorted({o.gpu for o in cat.offers if o.cloud == s.cloud})
            out.append((("gpu",), f"no {s.cloud} instance offers {gpu}; {s.cloud} has {', '.join(have)}"))
        elif gpu and "gpus_per_node" in s.model_fields_set and s.gpus_per_node not in {o.gpu_count for o in cands}:
            counts = sorted({o.gpu_count for o in cands})
            out.append((("gpus_per_node",), f"{s.cloud} instances with {gpu} have "
                        f"{' or '.join(map(str, counts))} GPUs, not {s.gpus_per_node}"))
        if cands and fabric not in ("auto", "ethernet") and fabric not in {o.fabric for o in cands}:
            have = sorted({o.fabric for o in cat.offers if o.cloud == s.cloud})
            out.append((("interconnect", "inter_node"), f"{fabric} is not available on {s.cloud}"
                        + (f" with {gpu}" if gpu else "") + f"; {s.cloud} has {', '.join(have)} or ethernet"))
        link = s.interconnect.intra_node
        if cands and link is not None:
            sized = [o for o in cands if "gpus_per_node" not in s.model_fields_set
                     or o.gpu_count == s.gpus_per_node]
            if sized and not [o for o in sized if o.intra_node == link or o.gpu_count == 1]:
                out.append((("interconnect", "intra_node"), f"no {s.cloud} instance with "
                            f"{gpu or 'this GPU'} has {link}; they have "
                            f"{' and '.join(sorted({o.intra_node for o in sized}))}"))
    return out




def _zones(s: "Spec", cat) -> list[Problem]:
    """Every zone must be one of the region's, by the cloud's naming of the catalog's zone data
    (CloudFacts.zone_names), refused like an unknown region; a region without zone data keeps
    the naming rule (its zones start with the region's name, or are numbered)."""
    found = {z for o in cat.offers if o.cloud == s.cloud and o.region == s.region
             for z in o.zones.split()}
    rule = clouds.get(s.cloud).zone_names
    known = list(rule(s.region, tuple(sorted(found))) if rule else sorted(found))
    out: list[Problem] = []
    for i, zone in enumerate(s.zones):
        if known and zone not in known:
            close = _close(zone, known, n=1, cutoff=0.8)
            out.append((("zones", i), f"{zone!r} is not a zone of region {s.region}"
                        + (f" — did you mean {close[0]}?" if close else "")
                        + f" ({s.region} zones: {', '.join(known)})"))
        elif not known and not (zone.isdigit() or zone.startswith(s.region)):
            out.append((("zones", i), f"{zone!r} is not a zone of region {s.region}"))
    return out


def _capacity_rules(s: "Spec") -> list[Problem]:
    out: list[Problem] = []
    where = encryption_at_host_clouds()
    if s.security.encryption_at_host is True and s.cloud not in where:
        out.append((("security", "encryption_at_host"), f"only for cloud: "
                    f"{', '.join(where)}; {s.cloud} encrypts host disks already"))
    cap = s.capacity
    if cap is None:
        return out
    kinds = RESERVATION_KINDS.get(s.cloud, ())
    if cap.kind not in kinds:
        out.append((("capacity", "kind"), f"{cap.kind!r} is not sold on {s.cloud}" +
                    (f"; use {' or '.join(kinds)}" if kinds else "; remove capacity")))
        return out
    kind = clouds.reservation_kinds()[cap.kind]
    if not re.fullmatch(kind.pattern, cap.reservation):
        out.append((("capacity", "reservation"), f"{cap.reservation!r} is not a {cap.kind} "
                    f"reservation (e.g. {kind.example})"))
    if s.spot.enabled:
        out.append((("spot", "enabled"), "a capacity reservation is on-demand capacity bought "
                    "ahead; set spot.enabled: false or remove capacity"))
    if kind.fixed_count and s.autoscaling and s.autoscaling.max_nodes > s.nodes:
        out.append((("autoscaling", "max_nodes"), f"{kind.fixed_count}; max_nodes cannot "
                    "exceed nodes"))
    return out


def _bucket_rules(s: "Spec") -> list[Problem]:
    """job.checkpoint.path / job.dataset.path as object-store URLs (spec/buckets.py)."""
    out: list[Problem] = []
    example = _bucket_example(s.cloud)
    created = s.storage.kind == "bucket"
    ckpt, data = s.job.checkpoint.path, s.job.dataset.path
    for where, path, want_prefix in ((("job", "checkpoint", "path"), ckpt, True),
                                     (("job", "dataset", "path"), data, False)):
        if buckets.is_url(path):
            out += [(where, m) for m in buckets.problems(
                path, s.cloud, created=created and where[1] == "checkpoint",
                want_prefix=want_prefix, existing=s.storage.existing,
                manual=s.security.bucket_grants == "manual")]
    if created and not buckets.is_url(ckpt):
        out.append((("storage", "kind"), "bucket stores checkpoints in object storage: set "
                    f"job.checkpoint.path to a URL such as {example}"))
    if s.job.checkpoint.expire_days and not created:
        out.append((("job", "checkpoint", "expire_days"), "sets the lifecycle rule of the bucket "
                    "`up` creates (storage.kind: bucket); a bucket or file system of your own "
                    "keeps its own rules"))
    if created and s.job.dataset.path and not buckets.is_url(data):
        out.append((("job", "dataset", "path"), "storage.kind bucket mounts no file system: "
                    f"give the dataset as a URL ({example}) or use a file system kind"))
    return out


def _bucket_example(cloud: str) -> str:
    """A URL of the first object store the cloud reaches (its facts), for a message."""
    schemes = list(buckets.reachable(cloud)) or ["s3"]
    return f"{schemes[0]}://BUCKET/PREFIX"


def _spot_checkpoints(s: "Spec", kinds: tuple[str, ...]) -> list[Problem]:
    """A reclaim deletes the node with the container's filesystem: spot checkpoints must be
    on storage every node mounts, or in a bucket, or each reclaim restarts training from step 0."""
    ckpt, mount = s.job.checkpoint.path, s.storage.mount_path.rstrip("/")
    if buckets.is_url(ckpt):
        return []   # object storage outlives every node (the bucket rules above checked it)
    if not clouds.storage_kind(s.storage.kind).mounted:   # none, or a bucket
        shared = ", ".join(k for k in kinds if clouds.storage_kind(k).mounted)
        # Reported at spot.enabled (the line the user wrote; `storage` may be absent).
        return [(("spot", "enabled"), "needs storage for checkpoints every node mounts (a "
                 f"reclaimed node takes the container's files with it): storage.kind is {s.storage.kind}; "
                 f"set storage.kind ({shared}), job.checkpoint.path to a bucket URL "
                 f"({_bucket_example(s.cloud)}), or spot.enabled: false")]
    if ckpt.startswith("/") and ckpt != mount and not ckpt.startswith(mount + "/"):
        return [(("job", "checkpoint", "path"), f"{ckpt} is outside the storage mount {mount}: "
                 "with spot.enabled a reclaim would lose it; use a path under it or a relative one")]
    return []
