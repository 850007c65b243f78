"""Each DVC stage depends on the package code its command imports, no less, and dvc.yaml
stays the pipeline's table of contents.

A stage's module is the one defining the `membench` subcommand its cmd runs; its imports
are followed (with `ast`, so nothing is executed) through the `membench` package, package
`__init__` files and the built-in plugins a `load_plugins(...)` call loads by name included.
Every file reached must be covered by a `deps` entry of that stage (a subpackage directory
or a single top-level file): otherwise an edit to it would not rerun the stage and the
outputs would go stale. And every package entry in `deps` must cover a file reached, so
deps do not rerun a stage for a subpackage it does not use. `cli.py`, which only dispatches
to the stage modules, is left out.
"""

from __future__ import annotations

import ast
import shlex
from pathlib import Path

import pytest
import yaml

from membench import plugins
from membench.cli import app

ROOT = Path(__file__).resolve().parents[1]
# Where each part of the package lives (pyproject's package-dir): the domain under src/, the
# stage commands in the top-level stages/ directory, installed as membench.stages.
SOURCE_DIRS = {"membench.stages": ROOT / "stages", "membench": ROOT / "src" / "membench"}
PACKAGE_DIRS = ("src/membench", "stages")
DVC_YAML = (ROOT / "dvc.yaml").read_text(encoding="utf-8")
STAGES = yaml.safe_load(DVC_YAML)["stages"]


def module_file(name: str) -> Path | None:
    """The source file of a membench module or package, None for anything else."""
    for prefix, directory in SOURCE_DIRS.items():
        if name == prefix or name.startswith(prefix + "."):
            path = directory.joinpath(*name[len(prefix):].split(".")[1:])
            break
    else:
        return None
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    return path.with_suffix(".py") if path.with_suffix(".py").is_file() else None


def plugin_kinds(call: ast.Call, where: str) -> tuple[str, ...]:
    """The kinds a `load_plugins(...)` call loads: its string arguments, a `*NAME` of a tuple
    in membench.plugins (`*CORE_KINDS`), or every kind when it names none."""
    kinds: list[str] = []
    for arg in call.args:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            kinds.append(arg.value)
        elif isinstance(arg, ast.Starred) and isinstance(arg.value, ast.Name) \
                and isinstance(getattr(plugins, arg.value.id, None), tuple):
            kinds.extend(getattr(plugins, arg.value.id))
        else:
            raise AssertionError(f"{where}: load_plugins() takes kinds as strings or "
                                 f"*CORE_KINDS, so this test can tell which modules it loads")
    return tuple(kinds) or tuple(plugins.BUILT_IN)


def imported_names(name: str) -> set[str]:
    """Every module name an import statement anywhere in the module may load (names
    imported from a module are tried as submodules too: `from membench.scoring import metrics`),
    and the built-in plugins its load_plugins() calls load."""
    path = module_file(name)
    assert path is not None, name
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(
                node.func, "attr", None)) == "load_plugins":
            for kind in plugin_kinds(node, f"{path}:{node.lineno}"):
                names.update(plugins.BUILT_IN[kind])
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return {n for n in names if module_file(n) is not None}


def closure(module: str) -> set[str]:
    """The files of every membench module that importing `module` loads, as repo paths."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        parts = name.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # parent packages
        todo.extend(imported_names(name))
    return {module_file(name).relative_to(ROOT).as_posix() for name in seen}


def stage_module(cmd: str) -> str:
    words = shlex.split(cmd)
    assert words[0] == "membench", cmd
    for command in app.registered_commands:
        if (command.name or command.callback.__name__) == words[1]:
            return command.callback.__module__
    raise AssertionError(f"no membench command {words[1]!r}")


def package_deps(stage: dict) -> list[str]:
    return [d.rstrip("/") for d in stage.get("deps", []) if d.startswith(PACKAGE_DIRS)]


def covered(path: str, deps: list[str]) -> bool:
    return any(path == dep or path.startswith(dep + "/") for dep in deps)


@pytest.mark.parametrize("name", sorted(STAGES))
def test_stage_deps_cover_every_module_it_imports(name):
    files = closure(stage_module(STAGES[name]["cmd"]))
    deps = package_deps(STAGES[name])
    missing = sorted(path for path in files if not covered(path, deps))
    assert not missing, f"dvc.yaml stage {name!r} imports these but does not depend on them"


@pytest.mark.parametrize("name", sorted(STAGES))
def test_stage_deps_name_whole_subpackages_and_top_level_files(name):
    """The granularity a reader follows: `src/membench/scoring`, `src/membench/params.py`,
    `stages/policies.py`; never a file inside a subpackage."""
    odd = [dep for dep in package_deps(STAGES[name])
           if not ((ROOT / dep).is_dir() and dep.count("/") == 2)
           and not ((ROOT / dep).is_file() and dep.count("/") == (1 if dep.startswith("stages/")
                                                                  else 2))]
    assert not odd, f"dvc.yaml stage {name!r}: name the subpackage, not its files: {odd}"


@pytest.mark.parametrize("name", sorted(STAGES))
def test_stage_deps_name_no_module_it_does_not_import(name):
    files = closure(stage_module(STAGES[name]["cmd"]))
    unused = [dep for dep in package_deps(STAGES[name])
              if not any(covered(path, [dep]) for path in files)]
    assert not unused, f"dvc.yaml stage {name!r} depends on modules it does not import"


def test_no_stage_module_imports_another():
    """Stage modules share code through the package (membench.commands.common and the
    domain), so a stage's deps never pull in another stage's command."""
    modules = {stage_module(stage["cmd"]) for stage in STAGES.values()}
    for module in modules:
        others = {module_file(m).relative_to(ROOT).as_posix() for m in modules - {module}}
        assert not closure(module) & others, module


def test_the_walk_follows_imports_through_the_domain():
    """Guards the walker itself: a stage reaches domain modules only through other modules."""
    files = closure(stage_module(STAGES["index"]["cmd"]))
    assert "stages/index.py" in files and "stages/__init__.py" in files
    assert "src/membench/scenario/__init__.py" in files
    assert "src/membench/memory_tool/policy.py" in files  # by name, via load_plugins()
    assert "src/membench/registry.py" in files  # only imported by other domain modules
    assert "src/membench/cli.py" not in files
    assert "src/membench/backends/sqlite_fts.py" not in files  # a kind the stage never loads
    backends = closure(stage_module(STAGES["backends"]["cmd"]))
    assert "src/membench/backends/postgres_store.py" in backends  # load_plugins("backends")


def test_dvc_yaml_reads_as_a_table_of_contents():
    """At most 300 lines, and each stage opens with a comment saying what it makes."""
    lines = DVC_YAML.splitlines()
    assert len(lines) <= 300, f"dvc.yaml has {len(lines)} lines"
    for name in STAGES:
        after = lines[lines.index(f"  {name}:") + 1]
        assert after.startswith("    # "), f"dvc.yaml stage {name!r} has no comment first"
