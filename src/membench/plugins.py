"""The one list of built-in plugin modules, by the registry kind they fill, and the loader
that imports them and every module an installed package names under the entry-point group
`membench.plugins`.

Importing a plugin module registers its entries, so adding a policy, store, retriever,
extractor, importer, backend or memory system is one module plus its line below. A command
loads only the kinds it reads (a stage that never opens a database does not import the
backends, so its DVC deps do not name them); the registries iterate by each entry's declared
order, never by import order, so which kinds were loaded first changes no row.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from importlib.metadata import entry_points

ENTRY_POINT_GROUP = "membench.plugins"

BUILT_IN: dict[str, tuple[str, ...]] = {
    "policies": (
        "membench.memory.policies",
        "membench.memory.recency",
        "membench.memory_tool.policy",  # writes real files, through the memory-tool handler
    ),
    "stores": ("membench.memory.stores",),
    "retrievers": ("membench.retrieval.retrievers",),
    "extractors": (
        "membench.extraction.extractors",
        "membench.extraction.consolidation",
        "membench.extraction.noisy",
    ),
    "importers": (
        "membench.importers.locomo",
        "membench.importers.longmemeval",
        "membench.importers.letta",
    ),
    "backends": (
        "membench.backends.sqlite_fts",
        "membench.backends.sqlite_vec_store",
        "membench.backends.langgraph_stores",
        "membench.backends.lancedb_store",
        "membench.backends.postgres_store",
    ),
    # Real memory systems, driven through their own write path.
    "systems": ("membench.systems.mem0_system", "membench.systems.langgraph_system",
                "membench.systems.langmem_system"),
}
# What reading params.yaml and building its policies needs: params name an extractor, the
# policies their stores and retrievers.
CORE_KINDS = ("policies", "stores", "retrievers", "extractors")


def load_plugins(*kinds: str, modules: Iterable[str] = ()) -> None:
    """Imports the built-in plugins of `kinds` (every kind when none is named), then
    `modules` and the entry points' modules. Python imports each module once, so calling
    this again is harmless."""
    unknown = [kind for kind in kinds if kind not in BUILT_IN]
    if unknown:
        raise ValueError(f"unknown plugin kind {', '.join(unknown)}; known: {', '.join(BUILT_IN)}")
    for kind in kinds or BUILT_IN:
        for module in BUILT_IN[kind]:
            importlib.import_module(module)
            _loaded[module] = None
    for module in modules:
        importlib.import_module(module)
        _loaded[module] = None
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        entry_point.load()


_loaded: dict[str, None] = {}  # the modules load_plugins imported here, in order


def loaded_plugins() -> tuple[str, ...]:
    """What load_plugins imported in this process: a worker imports the same before it runs
    a unit, so its registries hold what the stage's do (membench.execution)."""
    return tuple(_loaded)
