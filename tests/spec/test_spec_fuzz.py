"""Property: whatever the input, parse_spec returns a Spec or raises SpecError — never anything else."""

from __future__ import annotations

import copy

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reclaunch.catalog import load_catalog
from reclaunch.errors import SpecError
from reclaunch.spec import Spec, parse_spec
from tests.conftest import EXAMPLES

CATALOG = load_catalog(overlay=False)
BASES = [yaml.safe_load(p.read_text()) for p in sorted(EXAMPLES.glob("*.yaml"))]

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-10**30, max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=30),
    st.sampled_from(["1e6", "1_000_000", "80GB", "100TiB", "-1", "nan", "inf", "auto", "aws", "1e999"]),
)
values = st.recursive(scalars, lambda c: st.one_of(st.lists(c, max_size=3),
                                                   st.dictionaries(st.text(max_size=8), c, max_size=3)),
                      max_leaves=8)


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, (*prefix, i))


@st.composite
def mutated(draw):
    doc = copy.deepcopy(draw(st.sampled_from(BASES)))
    for _ in range(draw(st.integers(1, 4))):
        paths = [p for p in _paths(doc) if p]
        path = draw(st.sampled_from(paths))
        parent = doc
        for part in path[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "delete", "rename"]))
        if action == "replace":
            parent[path[-1]] = draw(values)
        elif action == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=12))] = parent.pop(path[-1])
    return doc


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_specs_never_traceback(doc) -> None:
    text = yaml.safe_dump(doc, allow_unicode=True)
    try:
        assert isinstance(parse_spec(text, "fuzz.yaml", CATALOG), Spec)
    except SpecError as exc:
        assert exc.problems and all(p.startswith("fuzz.yaml:") for p in exc.problems)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=300), st.text(max_size=300)))
def test_arbitrary_text_never_traceback(data) -> None:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    try:
        parse_spec(text, "fuzz.yaml", CATALOG)
    except SpecError as exc:
        assert all(p.startswith("fuzz.yaml:") for p in exc.problems)
