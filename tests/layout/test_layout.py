"""The package's shape: imports run one way, no cycles, small modules (design.md, issue 11).

Every import counts, lazy ones and TYPE_CHECKING ones included: a lazy import is still a
dependency at run time, and a type-only one still couples the two modules' meaning.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "reclaunch"
# Both trees are ours and both are checked: stacks/ (the Pulumi programs and their pure facts)
# imports the planner's Plan and the fabric profiles, and the manifests read its node pools.
TOPS = ("reclaunch", "stacks")

# Lowest first. A module may import its own layer and any layer below it, never above.
# catalog is the bottom: pure dated data the spec rules check against (an instance exists,
# a region sells it); it imports nothing of ours but errors. stacks sits between the planner
# (whose Plan it builds from) and the manifests (which read its declared StackFacts).
# facts is below it: the cloud registry (reclaunch/clouds.py) and each cloud's plain-data
# reclaunch/providers/<cloud>/facts.py. A cloud package shows its layers: facts.py (here),
# provider.py (providers) and an empty __init__.py, so importing the facts runs no provider
# (tests/extend/test_registry.py checks what importing the registry loads).
LAYERS = ["facts", "catalog", "spec", "fabric", "planner", "stacks", "manifests", "ui", "runtime",
          "providers", "cli"]
# Leaf utilities every layer may use.
SHARED = {"reclaunch.errors", "reclaunch.tags", "reclaunch.home", "reclaunch.host", "reclaunch"}
MAX_LINES = 400


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for top in TOPS for p in (ROOT / top).rglob("*.py")}


def imports(path: Path, mods: dict[str, Path]) -> set[str]:
    return imports_of_source(path.read_text(), module_name(path), mods,
                             is_pkg=path.name == "__init__.py")


def imports_of_source(text: str, me: str, mods: dict[str, Path], is_pkg: bool = False) -> set[str]:
    """Our modules that the source of module `me` imports, anywhere in the file (strings naming
    modules, as in "module:attr" registries, count too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = me.split(".")[: len(me.split(".")) - node.level + is_pkg]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            names = [mod] + [f"{mod}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value.startswith(tuple(f"{t}." for t in TOPS)) and " " not in node.value:
            names = [node.value.partition(":")[0]]
        for name in names:
            while name and name not in mods:
                name = name.rpartition(".")[0]
            if name and name != me and not me.startswith(name + "."):
                found.add(name)
    return found


def is_facts(mod: str) -> bool:
    """The registry and every cloud's facts.py (a cloud package's data part)."""
    parts = mod.split(".")
    return mod == "reclaunch.clouds" or (parts[:2] == ["reclaunch", "providers"] and parts[-1] == "facts")


def layer(mod: str) -> int | None:
    if mod in SHARED or mod == "reclaunch.__main__":
        return None
    if mod.split(".")[0] == "stacks":
        return LAYERS.index("stacks")
    if is_facts(mod):
        return LAYERS.index("facts")
    part = mod.split(".")[1]
    return LAYERS.index(part) if part in LAYERS else None


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {m: imports(p, mods) for m, p in mods.items()}


def test_every_module_has_a_layer():
    unplaced = [m for m in modules() if layer(m) is None and m not in SHARED and m != "reclaunch.__main__"]
    assert not unplaced, f"modules outside the layers {LAYERS}: {unplaced}"


def direction_problems(g: dict[str, set[str]]) -> list[str]:
    wrong = []
    for mod, deps in g.items():
        lm = layer(mod)
        for dep in deps:
            ld = layer(dep)
            if lm is not None and ld is not None and ld > lm:
                wrong.append(f"{mod} ({LAYERS[lm]}) imports {dep} ({LAYERS[ld]})")
            if lm is None and mod in SHARED and dep not in SHARED:
                wrong.append(f"shared {mod} imports {dep}")
    return sorted(wrong)


def find_cycles(g: dict[str, set[str]]) -> list[list[str]]:
    cycles, state = [], {}

    def visit(node, stack):
        state[node] = 1
        stack.append(node)
        for dep in sorted(g.get(node, ())):
            if state.get(dep) == 1:
                cycles.append(stack[stack.index(dep):] + [dep])
            elif dep not in state:
                visit(dep, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(g):
        if node not in state:
            visit(node, [])
    return cycles


def test_imports_run_one_way():
    wrong = direction_problems(graph())
    assert not wrong, "imports against " + " -> ".join(reversed(LAYERS)) + ":\n" + "\n".join(wrong)


def test_no_import_cycles():
    cycles = find_cycles(graph())
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_checks_can_fail():
    # A low module importing a high one, lazily inside a function, and through a string
    # registry: all are seen, and the two-module loop is a cycle.
    text = "def f():\n    from reclaunch.cli import main\nREG = {'x': 'reclaunch.runtime.lifecycle:up'}\n"
    found = imports_of_source(text, "reclaunch.spec.rules", modules())
    assert {"reclaunch.cli", "reclaunch.runtime.lifecycle"} <= found
    g = {"reclaunch.spec.rules": found, "reclaunch.cli": {"reclaunch.spec.rules"}}
    assert "reclaunch.spec.rules (spec) imports reclaunch.cli (cli)" in direction_problems(g)
    assert find_cycles(g)


def test_a_bad_import_in_stacks_is_seen():
    # stacks/ is scanned like reclaunch/: a stack module reaching up into the CLI (directly
    # or through a "module:attr" string) is an import against the direction.
    mods = modules()
    assert "stacks.aws.pools" in mods and "stacks.common" in mods
    text = "from reclaunch.cli import main\nPROGRAM = 'reclaunch.runtime.lifecycle:up'\n"
    found = imports_of_source(text, "stacks.aws.pools", mods)
    assert {"reclaunch.cli", "reclaunch.runtime.lifecycle"} <= found
    g = {"stacks.aws.pools": found}
    assert "stacks.aws.pools (stacks) imports reclaunch.cli (cli)" in direction_problems(g)


def test_modules_are_small():
    big = {m: n for m, p in modules().items() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not big, f"modules over {MAX_LINES} lines (split by responsibility): {big}"


def test_every_package_directory_ships():
    # setuptools ships only the packages pyproject lists; a new folder left out of the list
    # works from the repo and is missing from the wheel (as reclaunch.runtime once was).
    import tomllib
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    dirs = {".".join(p.parent.relative_to(ROOT).parts) for top in ("reclaunch", "stacks")
            for p in (ROOT / top).rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert dirs - listed == set(), f"add to [tool.setuptools] packages: {sorted(dirs - listed)}"
