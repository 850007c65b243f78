"""The package's layers go strictly downward, as docs/design.md draws them (its `layers`
block, top layer first): a module imports only its own layer's package and the layers below
it, never a layer above nor a neighbour on its own row, and no modules import each other in
a cycle. Every import statement counts, at module level or inside a function, and so do the
built-in plugins `membench.plugins` imports by name.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from membench.plugins import BUILT_IN

ROOT = Path(__file__).resolve().parents[1]
# Where each part of the package lives (pyproject's package-dir).
SOURCE_DIRS = {"membench.stages": ROOT / "stages", "membench": ROOT / "src" / "membench"}
DRAWING = re.compile(r"^```layers\n(.*?)^```", re.MULTILINE | re.DOTALL)


def drawn_layers() -> dict[str, int]:
    """Layer name -> height (0 at the bottom) from the drawing in docs/design.md."""
    found = DRAWING.search((ROOT / "docs" / "design.md").read_text(encoding="utf-8"))
    assert found, "docs/design.md has no ```layers block"
    rows = [line.split() for line in found.group(1).splitlines() if line.strip()]
    return {name: len(rows) - 1 - i for i, row in enumerate(rows) for name in row}


LAYERS = drawn_layers()


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the membench module it loads
    where: str  # file:line, for the message


def module_name(path: Path) -> str:
    for prefix, directory in SOURCE_DIRS.items():
        if path.is_relative_to(directory):
            parts = [*prefix.split("."), *path.relative_to(directory).with_suffix("").parts]
            return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    raise AssertionError(path)


def module_file(name: str) -> Path | None:
    for prefix, directory in SOURCE_DIRS.items():
        if name == prefix or name.startswith(prefix + "."):
            path = directory.joinpath(*name[len(prefix):].split(".")[1:])
            if (path / "__init__.py").is_file():
                return path / "__init__.py"
            return path.with_suffix(".py") if path.with_suffix(".py").is_file() else None
    return None


MODULES = {module_name(p): p for d in SOURCE_DIRS.values() for p in sorted(d.rglob("*.py"))}


def layer(module: str) -> str:
    """membench.memory.stores -> memory; membench.stages.index -> stages; membench -> membench."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def imports_of(module: str) -> list[Import]:
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    where = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
    found = [Import(module, name, f"{where} (by name, BUILT_IN)")
             for name in (BUILT_IN_MODULES if module == "membench.plugins" else ())]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            # `from package import module` loads the module; `from module import name` the module.
            submodules = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES]
            names = submodules if len(submodules) == len(node.names) else [base, *submodules]
        else:
            continue
        found.extend(Import(module, name, f"{where}:{node.lineno}")
                     for name in names if name in MODULES)
    return found


BUILT_IN_MODULES = [name for modules in BUILT_IN.values() for name in modules]
IMPORTS = [i for module in MODULES for i in imports_of(module)]


def test_the_drawing_names_every_part_of_the_package():
    unplaced = sorted({layer(m) for m in MODULES} - set(LAYERS) - {"membench"})
    assert not unplaced, f"docs/design.md's layers block does not place {unplaced}"
    missing = sorted(name for name in LAYERS if module_file(f"membench.{name}") is None)
    assert not missing, f"docs/design.md's layers block names no module {missing}"


def upward_imports(module: str) -> list[str]:
    """Each import of `module` that reaches a layer above it or beside it, as a message."""
    return [f"{i.where} imports {i.target}: layer {layer(i.target)!r} is not below "
            f"{layer(module)!r}"
            for i in imports_of(module)
            if layer(i.target) not in (layer(module), "membench")
            and LAYERS[layer(i.target)] >= LAYERS[layer(module)]]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_imports_a_layer_above_or_beside_it(module):
    wrong = upward_imports(module)
    assert not wrong, "\n".join(wrong)


def test_no_modules_import_each_other_in_a_cycle():
    graph: dict[str, set[str]] = {}
    for i in IMPORTS:
        if i.target != i.source:
            graph.setdefault(i.source, set()).add(i.target)
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            pytest.fail("modules import each other: " + " -> ".join(cycle))


def test_the_check_names_an_upward_import_made_inside_a_function(tmp_path, monkeypatch):
    """Guards the walker: a function-level import of a higher layer is found and named."""
    source = tmp_path / "layer_probe.py"
    source.write_text("import math\n\n\ndef f():\n    from membench.memory import stores\n",
                      encoding="utf-8")
    monkeypatch.setitem(MODULES, "membench.retrieval.layer_probe", source)
    assert upward_imports("membench.retrieval.layer_probe") == [
        f"{source}:5 imports membench.memory.stores: layer 'memory' is not below 'retrieval'"]
