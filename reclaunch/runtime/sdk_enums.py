"""Enum-typed inputs checked against the installed Pulumi SDK's own enum classes.

The SDKs type such an input as `Union[str, SomeEnum]`, so Python accepts any string and the
mocks echo it back; the cloud's API (for azure-native: the API version the SDK was generated
from) refuses a value its enum lacks. AKS `osSKU: Ubuntu2404` under azure-native 3.x (API
2025-09-01, whose OSSKU stops at Ubuntu2204: Azure/azure-rest-api-specs#38610) is the case that
made this check. `preview` runs it on every resource it records; it finds something only
where the SDK has enum classes, which is azure-native: pulumi_aws and pulumi_gcp type such
fields as plain strings (GKE's taint effect, EKS's capacity type), and those are checked, for
the fields listed there, by stacks/<cloud>/api_rules.py.

The types are read from each resource's `<Resource>Args` input type (what the SDK serialises
from), walked through Input/Optional/Union/Sequence/Mapping down to nested input types.
"""

from __future__ import annotations

import collections.abc as abc
import importlib
import importlib.util
import typing
from enum import Enum
from functools import lru_cache
from typing import Any, Iterator

_SEQUENCES = (list, tuple, abc.Sequence)
_MAPPINGS = (dict, abc.Mapping)


@lru_cache(maxsize=1024)
def args_class(typ: str, package: str) -> type | None:
    """The input type of a Pulumi type token: `aws:eks/cluster:Cluster` -> pulumi_aws.eks.
    ClusterArgs, `kubernetes:core/v1:Namespace` -> pulumi_kubernetes.core.v1.NamespaceInitArgs;
    None when the SDK has none."""
    parts = typ.split(":")
    if len(parts) != 3:
        return None
    path = parts[1].split("/")
    # eks/cluster -> the eks package; core/v1 -> the core.v1 package. Never the module file
    # itself (pulumi_aws.eks.cluster): importing it first leaves the package without its
    # star-imported classes (its __init__ runs while that module is half made).
    for mod in dict.fromkeys([path[0], ".".join(path)]):
        name = f"{package}.{mod}"
        try:
            if mod != path[0] and not getattr(importlib.util.find_spec(name), "submodule_search_locations", None):
                continue
            m = importlib.import_module(name)
        except ImportError:
            continue
        for suffix in ("InitArgs", "Args"):   # pulumi_kubernetes names its resource inputs InitArgs
            cls = getattr(m, parts[2] + suffix, None)
            if _is_input_type(cls):
                return cls
    return None


def _is_input_type(cls: Any) -> bool:
    from pulumi._types import is_input_type

    return isinstance(cls, type) and is_input_type(cls)


@lru_cache(maxsize=4096)
def _fields(cls: type) -> dict[str, Any]:
    """Pulumi (wire) name -> type of an input type's properties (what the SDK itself uses to
    translate them, pulumi._types.input_type_types)."""
    from pulumi._types import input_type_types

    try:
        return dict(input_type_types(cls))
    except (NameError, TypeError, AttributeError):   # an annotation the SDK cannot resolve
        return {}


def _leaves(tp: Any) -> list[Any]:
    """The alternatives of a type, with Union, Optional, Input, Output and Awaitable peeled."""
    origin = typing.get_origin(tp)
    if origin is typing.Union:
        return [leaf for a in typing.get_args(tp) for leaf in _leaves(a)]
    if origin is abc.Awaitable or getattr(origin, "__name__", "") == "Output":
        return []                      # Input[T] = Union[T, Awaitable[T], Output[T]]: T is enough
    return [tp]


def _walk(tp: Any, value: Any, path: str) -> Iterator[tuple[str, str, tuple[type, ...]]]:
    """(path, value, enum classes) for every string in `value` whose type names an enum."""
    enums, objects, items, values = [], [], [], []
    for leaf in _leaves(tp):
        origin, args = typing.get_origin(leaf), typing.get_args(leaf)
        if isinstance(leaf, type) and issubclass(leaf, Enum):
            enums.append(leaf)
        elif _is_input_type(leaf):
            objects.append(leaf)
        elif origin in _SEQUENCES and args:
            items.append(args[0])
        elif origin in _MAPPINGS and len(args) == 2:
            values.append(args[1])
    if isinstance(value, str) and enums:
        yield path, value, tuple(enums)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            for item in items:
                yield from _walk(item, v, f"{path}[{i}]")
    elif isinstance(value, dict):
        for key, v in value.items():
            field = next((_fields(c)[key] for c in objects if key in _fields(c)), None)
            if field is not None:
                yield from _walk(field, v, f"{path}.{key}" if path else key)
            for vt in values:
                yield from _walk(vt, v, f"{path}.{key}")


def enum_inputs(typ: str, package: str, inputs: dict[str, Any]) -> list[tuple[str, str, tuple]]:
    """(input path, value, enum classes) of every string passed to an enum-typed input."""
    cls = args_class(typ, package)
    return [] if cls is None else list(_walk(cls, inputs, ""))


def violations(typ: str, package: str, inputs: dict[str, Any]) -> list[str]:
    """One line per enum-typed input whose value the installed SDK's enum lacks."""
    out = []
    for path, value, enums in enum_inputs(typ, package, inputs):
        allowed = sorted({str(m.value) for e in enums for m in e})
        if value not in allowed:
            out.append(f"{path}: {value!r} is not a value of "
                       f"{'/'.join(e.__name__ for e in enums)} in the installed "
                       f"{package} (allowed: {', '.join(allowed)})")
    return out
