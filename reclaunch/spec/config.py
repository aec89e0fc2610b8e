"""What every spec model shares: its pydantic config and the guard of its number fields.
One home for models.py and kubernetes.py (models imports kubernetes, so not models itself)."""

from pydantic.config import ConfigDict

# Every model's config. A dict each model sets, not a shared base class: pydantic builds a
# schema and a validator for every BaseModel subclass, an empty base too (issue 25).
STRICT = ConfigDict(extra="forbid", validate_default=True, allow_inf_nan=False)
# Models validate/plan only ever validate inside Spec: pydantic builds them as part of Spec's
# validator, not once more on their own at import (defer_build: built on first direct use).
NESTED = ConfigDict(STRICT, defer_build=True)


def no_bool(v: object) -> object:
    # YAML reads `yes`/`on` as true; pydantic would take that as 1. A number field wants a number.
    if isinstance(v, bool):
        raise ValueError(f"expected a number, got {str(v).lower()}")
    return v
