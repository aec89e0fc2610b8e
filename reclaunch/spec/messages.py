"""Turn pydantic validation errors into `file:line: field.path: message` lines."""

from __future__ import annotations

import re
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel

Problem = tuple[tuple, str]


def line_for(lines: dict, loc: tuple) -> int:
    for i in range(len(loc), -1, -1):
        if loc[:i] in lines:
            return lines[loc[:i]]
    return 1


def dotted(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _unwrap(tp: Any) -> list[Any]:
    """Model classes reachable from an annotation (through Optional, list, dict, Annotated)."""
    origin = get_origin(tp)
    if origin is Annotated:
        return _unwrap(get_args(tp)[0])
    if origin in (Union, list, dict) or (origin and str(origin) == "types.UnionType"):
        return [m for a in get_args(tp) for m in _unwrap(a)]
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [tp]
    try:
        import types
        if isinstance(tp, types.UnionType):
            return [m for a in get_args(tp) for m in _unwrap(a)]
    except AttributeError:  # pragma: no cover
        pass
    return []


def _fields_at(root: type[BaseModel], loc: tuple) -> list[str]:
    models: list[type[BaseModel]] = [root]
    for part in loc:
        if isinstance(part, int):
            continue
        nxt = []
        for m in models:
            f = m.model_fields.get(part)
            if f is not None:
                nxt.extend(_unwrap(f.annotation))
        models = nxt or models
    return sorted({name for m in models for name in m.model_fields})


def message(root: type[BaseModel], err: dict) -> tuple[tuple, str]:
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
    kind = err["type"]
    import difflib   # here, not at the top: only a spec with a problem needs it

    if kind == "extra_forbidden":
        field = loc[-1] if loc else "?"
        close = difflib.get_close_matches(str(field), _fields_at(root, loc[:-1]), n=1, cutoff=0.6)
        hint = f" — did you mean {close[0]}?" if close else f" (allowed: {', '.join(_fields_at(root, loc[:-1]))})"
        return loc, f"unknown field{hint}"
    if kind == "missing":
        return loc, "required field is missing"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        got = type(err.get("input")).__name__
        got = {"list": "a list", "str": "a string", "NoneType": "nothing", "int": "a number",
               "float": "a number", "bool": "a boolean"}.get(got, got)
        return loc, f"expected a mapping of settings, got {got}"
    if kind == "literal_error":
        expected = err.get("ctx", {}).get("expected", "")
        choices = re.findall(r"'([^']*)'", expected)
        meant = err.get("ctx", {}).get("meant")   # another name for a choice (`amazon`)
        close = [meant] if meant else difflib.get_close_matches(str(err.get("input")), choices,
                                                                n=1, cutoff=0.5)
        hint = f" — did you mean {close[0]}?" if close else ""
        return loc, f"{err.get('input')!r} is not one of {', '.join(choices)}{hint}"
    if kind == "too_short":
        return loc, f"needs at least {err.get('ctx', {}).get('min_length', 1)} item(s)"
    if (own := _own_words(kind, loc, err)) is not None:
        return loc, own
    msg = err["msg"]
    msg = msg.removeprefix("Value error, ")
    if kind.endswith("_parsing") or kind.endswith("_type"):
        msg = f"{msg} (got {err.get('input')!r})"[:200]
    return loc, msg


# pydantic's own wording ("Input should be greater than 0") in the project's style.
_PATTERN_WORDS = {
    "mount_path": "must be an absolute path with no spaces, e.g. /data",
    "namespace": "must be a DNS label: a-z, 0-9 and '-', starting and ending with a letter or digit",
}
# job.env: a variable's name, or the Kubernetes names of a {secret, key} reference
# (spec/env_rules.SecretRef): each its own rule, said in its own words.
_ENV_WORDS = {
    "secret": "must be a Kubernetes Secret name: lowercase letters, digits, '-' and '.', starting "
              "and ending with a letter or digit",
    "key": "must be a Secret data key: letters, digits, '-', '_' and '.'",
    "": "must be a variable name: letters, digits and _, not starting with a digit",
}
_BOUNDS = {"greater_than": ("gt", "must be more than {}"),
           "greater_than_equal": ("ge", "must be at least {}"),
           "less_than": ("lt", "must be less than {}"),
           "less_than_equal": ("le", "must be at most {}")}


def _num(v: object) -> str:
    return f"{v:,g}" if isinstance(v, float) else f"{v:,}" if isinstance(v, int) else str(v)


def _own_words(kind: str, loc: tuple, err: dict) -> str | None:
    ctx, got = err.get("ctx") or {}, err.get("input")
    if kind in _BOUNDS:
        key, words = _BOUNDS[kind]
        return words.format(_num(ctx.get(key))) + (f", got {_num(got)}" if isinstance(got, (int, float)) else "")
    if kind == "string_pattern_mismatch":
        field = next((p for p in reversed(loc) if isinstance(p, str)), "")
        words = (_ENV_WORDS.get(field, _ENV_WORDS[""]) if "env" in loc else
                 _PATTERN_WORDS.get(field) or f"does not have the expected form ({ctx.get('pattern')})")
        return f"{str(got)[:60]!r} {words}"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "string_too_long":
        return f"at most {ctx.get('max_length')} characters"
    if kind == "too_long":
        return f"at most {ctx.get('max_length')} item(s)"
    if kind == "finite_number":
        return f"must be a finite number, got {got!r}"
    if kind in ("float_parsing", "int_parsing", "float_type", "int_type"):
        return f"expected a number, got {str(got)[:60]!r}"
    if kind == "int_from_float":
        return f"expected a whole number, got {got!r}"
    if kind in ("bool_parsing", "bool_type"):
        return f"expected true or false, got {str(got)[:60]!r}"
    if kind in ("string_type",):
        return f"expected text, got {type(got).__name__}"
    if kind == "list_type":
        return f"expected a list, got {type(got).__name__}"
    return None


def format_problems(filename: str, lines: dict, problems: list[Problem]) -> list[str]:
    out = sorted(((line_for(lines, loc), dotted(loc), msg) for loc, msg in problems))
    return [f"{filename}:{line}: {path}: {msg}" for line, path, msg in out]


