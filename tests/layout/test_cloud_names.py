"""Outside a cloud's own files (reclaunch/providers/<cloud>/, stacks/<cloud>/) and the registry
(reclaunch/clouds.py), no module names a cloud (issue 40): what differs between clouds is read
from the registry, so a new cloud is its own files plus one registration.

"Names a cloud", over the code of every other module in reclaunch/ and stacks/ (comments and
docstrings are prose and may cite a vendor's docs):
- imports a cloud's package (reclaunch.providers.<cloud>, stacks.<cloud>), also lazily or as a
  "module:attr" string;
- holds a target's name as a string (`cloud == "aws"`, {"azure": ...}, ("gcp", ...)); the
  module-name argument of an importer (require("kubernetes", ...): the Python client) is not one;
- for a cloud with a stack (its Pulumi provider shares its name): a string whose head is the
  cloud (Pulumi type tokens and config keys, "aws:eks/cluster:Cluster", "azure-native:..."), or
  an identifier with the cloud's name as a word (aws_quota, BROAD_GCP_ROLES).
ALLOWED lists the few strings that are the same word for something else, each with the reason;
an entry that no longer occurs fails, so the list cannot go stale.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from reclaunch import clouds

ROOT = Path(__file__).resolve().parents[2]
IMPORTERS = {"require", "import_module", "find_spec"}
ALLOWED = {
    ("reclaunch/fabric/nccl_logs.py", "aws"):
        "NCCL's own name of the aws-ofi-nccl net plugin in its logs (`Using network AWS`)",
    ("stacks/versions.py", "kubernetes"): "k8s/addons.yaml's `kubernetes:` version range of an add-on",
    ("reclaunch/spec/rules.py", "kubernetes"): "the spec's `kubernetes:` block, as a field path",
    ("reclaunch/spec/kubernetes.py", "kubernetes"): "the spec's `kubernetes:` block, as a field path",
}


def scope() -> list[Path]:
    own = set(clouds.BUILTIN)
    out = []
    for top in ("reclaunch", "stacks"):
        for p in sorted((ROOT / top).rglob("*.py")):
            rel = p.relative_to(ROOT).parts
            if rel == ("reclaunch", "clouds.py") \
                    or (rel[:2] == ("reclaunch", "providers") and len(rel) > 3 and rel[2] in own) \
                    or (rel[0] == "stacks" and len(rel) > 2 and rel[1] in own):
                continue
            out.append(p)
    return out


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.body:
            first = n.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                out.add(id(first.value))
    return out


def _module_names(tree: ast.AST) -> set[int]:
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and n.args and isinstance(n.args[0], ast.Constant):
            f = n.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if name in IMPORTERS:
                out.add(id(n.args[0]))
    return out


def _words(identifier: str) -> set[str]:
    return {w.lower() for w in re.split(r"_|(?<=[a-z0-9])(?=[A-Z])", identifier) if w}


def _cloud_module(dotted: str, names: set[str]) -> bool:
    parts = dotted.partition(":")[0].split(".")
    return (parts[:2] == ["reclaunch", "providers"] and len(parts) > 2 and parts[2] in names) \
        or (parts[0] == "stacks" and len(parts) > 1 and parts[1] in names)


def findings(text: str, names: set[str], stacked: set[str]) -> list[tuple[int, str, str]]:
    """(line, what, the name) for every place the source names a cloud."""
    tree = ast.parse(text)
    skip = _docstrings(tree) | _module_names(tree)
    out = []
    for n in ast.walk(tree):
        line = getattr(n, "lineno", 0)
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in n.names] if isinstance(n, ast.Import) else \
                [n.module or ""] + [f"{n.module}.{a.name}" for a in n.names]
            out += [(line, f"imports {m}", m) for m in mods if _cloud_module(m, names)]
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip:
            v = n.value
            head = v.split(":", 1)[0] if ":" in v and not re.search(r"\s", v) else ""
            if v in names:
                out.append((line, f"the string {v!r}", v))
            elif head and (head in stacked or head.split("-")[0] in stacked):
                out.append((line, f"the type or key {v!r}", head.split("-")[0]))
            elif _cloud_module(v, names):
                out.append((line, f"the module string {v!r}", v))
        else:
            ident = (n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute)
                     else n.name if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     else n.arg if isinstance(n, (ast.arg, ast.keyword)) else None)
            if ident and _words(ident) & stacked:
                out.append((line, f"the identifier {ident}", ident))
    return out


def _names() -> tuple[set[str], set[str]]:
    stacked = {c for c in clouds.BUILTIN if clouds.get(c).kind == "kube"}
    return set(clouds.BUILTIN), stacked


def test_no_module_outside_a_cloud_names_one():
    names, stacked = _names()
    seen: set[tuple[str, str]] = set()
    wrong = []
    for p in scope():
        rel = str(p.relative_to(ROOT))
        for line, what, name in findings(p.read_text(), names, stacked):
            if (rel, name) in ALLOWED:
                seen.add((rel, name))
            else:
                wrong.append(f"{rel}:{line}: {what}")
    assert not wrong, "read it from the registry (reclaunch/clouds.py):\n" + "\n".join(wrong)
    assert seen == set(ALLOWED), f"no longer needed, remove from ALLOWED: {set(ALLOWED) - seen}"


def test_the_check_can_fail():
    names, stacked = _names()
    text = ('def f(plan):\n'
            '    """aws docs are fine here"""\n'
            '    from stacks.gcp import pools\n'
            '    if plan.cloud == "azure":\n'
            '        return {"type": "aws:eks/cluster:Cluster", "p": "azure-native:storage:Account"}\n'
            '    aws_quota = REG["reclaunch.providers.gcp.provider:CLOUD"]\n'
            '    return require("kubernetes", "k8s"), "local" in plan.spec.name\n')
    got = [what for _, what, _ in findings(text, names, stacked)]
    assert got and all("docs" not in w and "'kubernetes'" not in w for w in got), got
    for needle in ("imports stacks.gcp", "the string 'azure'", "aws:eks/cluster:Cluster",
                   "azure-native:storage:Account", "identifier aws_quota",
                   "reclaunch.providers.gcp.provider:CLOUD", "the string 'local'"):
        assert any(needle in w for w in got), (needle, got)
