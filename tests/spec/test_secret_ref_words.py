"""Issue 41 item 14: a bad `{secret: NAME, key: KEY}` in job.env is told the rule it broke
(the Kubernetes Secret name rule, the data key rule), not the variable-name rule."""

from __future__ import annotations

import pytest

from reclaunch.errors import SpecError
from reclaunch.spec import parse_spec
from tests.spec.test_env_secrets import spec_with


@pytest.mark.parametrize("ref, field, words", [
    ({"secret": "HF_Token", "key": "token"}, "secret", "must be a Kubernetes Secret name: lowercase letters"),
    ({"secret": "hf", "key": "tok en"}, "key", "must be a Secret data key: letters, digits, '-', '_' and '.'"),
])
def test_a_secret_reference_is_told_the_kubernetes_rule(ref, field, words):
    with pytest.raises(SpecError) as e:
        parse_spec(spec_with({"HF_TOKEN": ref}), "c.yaml")
    line = next(p for p in e.value.problems if f"job.env.HF_TOKEN.{field}:" in p)
    assert words in line and "variable name" not in line, line


def test_a_bad_variable_name_keeps_its_own_words():
    with pytest.raises(SpecError) as e:
        parse_spec(spec_with({"1BAD": "x"}), "c.yaml")
    assert any("must be a variable name" in p for p in e.value.problems), e.value.problems
