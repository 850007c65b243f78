"""durable=False (the memory-tool policy's scratch roots): the same commands give the same
results and files, every write still atomic, with no fsync at all."""

from __future__ import annotations

import os

import pytest
from conftest import snapshot_tree

from membench.memory_tool import MemoryToolHandler

COMMANDS = [
    {"command": "create", "path": "/memories/a/notes.md", "file_text": "one\ntwo\n"},
    {"command": "str_replace", "path": "/memories/a/notes.md", "old_str": "two",
     "new_str": "three"},
    {"command": "insert", "path": "/memories/a/notes.md", "insert_line": 1,
     "insert_text": "between"},
    {"command": "create", "path": "/memories/b.md", "file_text": "gone soon\n"},
    {"command": "rename", "old_path": "/memories/a/notes.md", "new_path": "/memories/c.md"},
    {"command": "delete", "path": "/memories/b.md"},
    {"command": "view", "path": "/memories"},
    {"command": "view", "path": "/memories/c.md"},
]


@pytest.mark.parametrize("durable", [True, False])
def test_the_same_files_and_results_with_or_without_syncs(tmp_path, monkeypatch, durable):
    synced: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    reference = MemoryToolHandler(str(tmp_path / "reference"))
    handler = MemoryToolHandler(str(tmp_path / "root"), durable=durable)
    reference_results = [reference.execute(command) for command in COMMANDS]
    synced_by_reference = len(synced)
    results = [handler.execute(command) for command in COMMANDS]
    assert results == [r.replace("reference", "root") for r in reference_results]
    assert snapshot_tree(tmp_path / "root") == snapshot_tree(tmp_path / "reference")
    assert synced_by_reference >= 10  # every write, rename and delete, and its directory
    assert len(synced) - synced_by_reference == (synced_by_reference if durable else 0)
