"""IMPORTERS: every public benchmark format `membench import` reads, by name. A plugin adds
one with IMPORTERS.add("name", Importer(...)) (membench.plugins)."""

from __future__ import annotations

from membench.importers.letta import LETTA
from membench.importers.locomo import LOCOMO
from membench.importers.longmemeval import LONGMEMEVAL
from membench.importers.model import Importer
from membench.registry import Registry

IMPORTERS: Registry[Importer] = Registry("importer")
IMPORTERS.add("locomo", LOCOMO, order=1)
IMPORTERS.add("longmemeval", LONGMEMEVAL, order=2)
IMPORTERS.add("letta", LETTA, order=3)
