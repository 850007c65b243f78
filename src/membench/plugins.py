"""Loads every plugin before anything reads a registry (policies, stores, retrievers,
extractors): the built-in ones outside the pure core, then every module an installed
package names under the entry-point group `membench.plugins`.

Loading is explicit so that every stage and command sees the same policies: before,
`memory_tool_profile` ran wherever some unrelated import happened to pull it in.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from importlib.metadata import entry_points

ENTRY_POINT_GROUP = "membench.plugins"
# Plugins shipped with membench that do I/O, so they stay out of the pure core.
BUILT_IN = ("membench.memory_tool.policy",)


def load_plugins(modules: Iterable[str] = ()) -> None:
    """Imports the built-in plugins, the entry points' and `modules`; importing a plugin
    module registers its entries, and Python imports each module once, so calling this
    again is harmless."""
    for module in (*BUILT_IN, *modules):
        importlib.import_module(module)
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        entry_point.load()
