"""The house's layering (docs/architecture.md): which package may import which, and no import cycle between modules.

Every import counts, a function-local one too: a cycle hidden behind an import inside a function is still a cycle.
An import of a package's submodule (`from scenarios.session import store`) is an edge to that submodule only.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"builder": ROOT / "builder", "evaluate": ROOT / "evaluate", "core": ROOT / "core",
            "scenarios": ROOT / "scenarios", "cards": ROOT / "cards", "stateeval": ROOT / "src" / "stateeval"}
# What each package may import of the others: scripts -> builder -> evaluate -> core -> scenarios, and the inspect_ai
# task (stateeval) beside builder, above evaluate.
ALLOWED = {
    "scenarios": set(),
    "cards": set(),
    "core": {"scenarios"},
    "evaluate": {"core", "scenarios", "cards"},
    "builder": {"evaluate", "core", "scenarios", "cards"},
    "stateeval": {"evaluate", "core", "scenarios"},
}
# Cycles the house still has, each to be broken (docs/architecture.md): none now. A new one fails this test, and so
# would a listed one once it is gone, so that the list only shrinks.
KNOWN_CYCLES: list[set[str]] = []


def modules() -> dict[str, Path]:
    found = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = [package, *path.relative_to(folder).with_suffix("").parts]
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The project's modules that `name` imports, anywhere in its text."""
    out = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            wanted = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known]
            wanted = subs + ([base] if len(subs) < len(node.names) else [])
        else:
            continue
        for target in wanted:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def test_no_package_imports_against_the_layering():
    wrong = sorted(f"{name} imports {target}" for name, targets in graph().items() for target in targets
                   if target.split(".")[0] != name.split(".")[0]
                   and target.split(".")[0] not in ALLOWED[name.split(".")[0]])
    assert wrong == []


def test_no_new_import_cycle_and_none_left_that_is_gone():
    found = cycles(graph())
    assert [c for c in found if c not in KNOWN_CYCLES] == [], "a new import cycle"
    assert [c for c in KNOWN_CYCLES if c not in found] == [], "a cycle is gone: take it off KNOWN_CYCLES"


def test_the_checks_see_a_cycle_and_a_wrong_import(tmp_path):
    """The graph code itself: a cycle made of function-local imports is found, and so is a package imported
    against the layering."""
    edges = {"a.x": {"a.y"}, "a.y": {"a.x"}, "a.z": set()}
    assert cycles(edges) == [{"a.x", "a.y"}]
    known = {"evaluate.m": ROOT / "evaluate" / "run.py", "builder.pipeline": ROOT / "builder" / "pipeline.py"}
    path = tmp_path / "m.py"
    path.write_text("def f():\n    from builder.pipeline import build\n")
    assert imports("evaluate.m", path, known) == {"builder.pipeline"}
