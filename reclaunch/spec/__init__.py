"""cluster.yaml: load, validate, schema. The spec's public API.

    models.py     pydantic models and presets (field names are a contract, design.md)
    rules.py      cross-field rules that need the catalog (pure, offline)
    messages.py   pydantic errors -> `file:line: field: message` with "did you mean"
    yaml_lines.py YAML with line numbers, bounded and strict
    units.py      sizes and counts ("80GB", 1e6)
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic_core import ValidationError

from reclaunch.errors import SpecError
from reclaunch.spec.facts import STORAGE_BY_CLOUD, runs_here  # noqa: F401

# The models are built with pydantic's plugins off (PYDANTIC_DISABLE_PLUGINS, pydantic's own
# switch): reclaunch has no plugin, and looking for one scans the entry points of every installed
# distribution, on each `validate` and `plan`. The variable is set only while
# models.py (and the kubernetes, env_rules models it imports) build their classes and is put back
# after, so user code validating its own models, and every child process (torchrun, pulumi), see
# the environment as it was.
_plugins_before = os.environ.get("PYDANTIC_DISABLE_PLUGINS")
os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"
try:
    from reclaunch.spec.models import PRESETS, Spec  # noqa: F401
finally:
    if _plugins_before is None:
        del os.environ["PYDANTIC_DISABLE_PLUGINS"]
    else:
        os.environ["PYDANTIC_DISABLE_PLUGINS"] = _plugins_before
    del _plugins_before
from reclaunch.spec.rules import cross_check, normalize_gpu  # noqa: F401


def parse_spec(text: str, filename: str = "cluster.yaml", catalog=None) -> Spec:
    """Validate YAML text into a Spec, raising SpecError with file:line: path: message lines."""
    from reclaunch.spec.yaml_lines import load_yaml

    data, lines = load_yaml(text, filename)
    if data is None:
        raise SpecError(f"{filename}:1: empty file; a cluster.yaml needs at least name, cloud, "
                        "job and model (see `reclaunch schema`)")
    if not isinstance(data, dict):
        raise SpecError(f"{filename}:1: expected a mapping of cluster settings, got "
                        f"{type(data).__name__}")
    bad_keys = [k for k in data if not isinstance(k, str)]
    if bad_keys:
        raise SpecError(f"{filename}:1: field names must be text, got {bad_keys[0]!r}")
    try:
        spec = Spec.model_validate(data)
    except ValidationError as exc:
        from reclaunch.spec.messages import format_problems, message   # only a spec with problems

        problems = [message(Spec, e) for e in exc.errors()]
        raise SpecError(format_problems(filename, lines, problems)) from None
    except (RecursionError, OverflowError, TypeError) as exc:  # belt and braces: never a traceback
        raise SpecError(f"{filename}:1: cannot read this spec: {type(exc).__name__}") from None
    spec._source, spec._lines = filename, lines
    problems = cross_check(spec, catalog)
    if problems:
        from reclaunch.spec.messages import format_problems

        raise SpecError(format_problems(filename, lines, problems))
    return spec


def load_spec(path: str | Path, catalog=None) -> Spec:
    from reclaunch.spec.yaml_lines import read_text

    return parse_spec(read_text(path), str(path), catalog)


def json_schema() -> dict:
    from reclaunch.catalog import bundled_catalog
    from reclaunch.spec.schema_docs import finish

    # The bundled catalog's GPUs (not this machine's overlay): the committed schema is stable.
    schema = finish(Spec.model_json_schema(), list(bundled_catalog().gpus))
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "reclaunch cluster.yaml"
    return schema

