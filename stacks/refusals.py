"""What a cloud's API (or its Pulumi provider's own check) refuses in a resource's inputs,
which the mocks `reclaunch preview` runs under let through.

Each cloud's rules are its stack's (stacks/<cloud>/api_rules.py, named by that cloud's
StackFacts.api_refusals); preview adds what they find to a resource's `engine` list, and any of
them makes preview (and `up`, before anything exists) refuse. What they cover is what those
modules list, no more:

- physical names: the given name, or the one Pulumi would make (the logical name plus
  stacks.common.AUTONAME_SUFFIX random characters), against the service's length and
  character rules (NameRule, each with its source);
- values of fields that take one of a fixed set (`allowed`), where the installed Pulumi SDK
  types them as plain strings (azure-native's SDK enums are checked by runtime/sdk_enums.py);
- the few rules across fields a cloud documents (a stack's own `rules`).
"""

from __future__ import annotations

import re
from typing import Any, Iterator, NamedTuple

from stacks.common import AUTONAME_SUFFIX


class NameRule(NamedTuple):
    """The physical name of a resource type: which input holds it, its length and characters."""

    field: str                 # the input holding the physical name (camelCase, as recorded)
    max_len: int
    pattern: str | None        # the whole name must match (None: no character rule)
    source: str                # where the limit is written down
    min_len: int = 1
    auto: bool = True          # Pulumi names it (logical name + suffix) when the input is absent


def values_at(inputs: Any, path: str) -> Iterator[tuple[str, Any]]:
    """(concrete path, value) for a dotted path with `[]` for every list item:
    "taints[].effect" -> ("taints[0].effect", "NO_SCHEDULE"), ..."""
    head, _, rest = path.partition(".")
    key, many = (head[:-2], True) if head.endswith("[]") else (head, False)
    if not isinstance(inputs, dict) or key not in inputs:
        return
    items = list(enumerate(inputs[key])) if many and isinstance(inputs[key], list) else \
        ([] if many else [(None, inputs[key])])
    for i, v in items:
        where = key if i is None else f"{key}[{i}]"
        if rest:
            yield from ((f"{where}.{p}", x) for p, x in values_at(v, rest))
        else:
            yield where, v


def name_refusals(rule: NameRule, name: str, inputs: dict[str, Any]) -> list[str]:
    given = inputs.get(rule.field)
    if given is None and not rule.auto:
        return []
    if given is not None and not isinstance(given, str):
        return []        # an output of another resource: known only at deploy time
    made = given if given is not None else f"{name}{'x' * AUTONAME_SUFFIX}"
    what = (f"{rule.field} {given!r}" if given is not None else
            f"{rule.field} made by auto-naming from {name!r} (+{AUTONAME_SUFFIX} characters)")
    out = []
    if not rule.min_len <= len(made) <= rule.max_len:
        out.append(f"{what} is {len(made)} characters; the limit is {rule.min_len}-"
                   f"{rule.max_len} ({rule.source})")
    # An auto-named suffix is hex: only the part we chose is matched against the characters.
    if rule.pattern and not re.fullmatch(rule.pattern, given if given is not None else
                                         name + "0" * AUTONAME_SUFFIX):
        out.append(f"{what} does not match {rule.pattern} ({rule.source})")
    return out


def enum_refusals(allowed: dict[str, tuple[tuple[str, ...], str]],
                  inputs: dict[str, Any]) -> list[str]:
    """{path: (allowed values, source)} -> one line per string value outside its set."""
    out = []
    for path, (values, source) in allowed.items():
        for where, v in values_at(inputs, path):
            if isinstance(v, str) and v not in values:
                out.append(f"{where}: {v!r} is not one of {', '.join(values)} ({source})")
    return out
