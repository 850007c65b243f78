"""`memory_tool_profile`: the article's profile kept as real files under /memories.

Fact records are written only through the handler's commands (create or str_replace as
upsert, delete as delete), one file per fact key, and the injection is what `view`
returns for each file. Outcomes must equal `profile`'s; the token cost is its own.
This policy does file I/O, so it lives beside the store rather than in the pure core.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from weakref import WeakKeyDictionary

from membench.cleanup.private_temp import private_dir, remove
from membench.extraction.extractors import FactRecord, RecordAction
from membench.memory.policies import Injection, Policy, register_policy
from membench.memory.stores import Memory, register_store
from membench.retrieval.retrievers import Document

from .handler import MemoryToolHandler

PROFILE_DIR = "/memories/profile"


@dataclass(frozen=True)
class MemoryFiles:
    contents: tuple[tuple[str, str, int], ...]  # (path, text, source exchange), by path
    views: tuple[str, ...]  # `view` result of each file, by path


def key_path(key: str) -> str:
    return f"{PROFILE_DIR}/{key}.md"


class _Replay:
    """A memory root the records were applied to, kept so later records (a later day's
    memory holds the earlier day's records, then more) are applied on top. Its directory
    is a private one (membench.cleanup.private_temp): removed on close, else when the
    process ends, a forked worker included (a TemporaryDirectory's finalizer does not run
    there). Its writes are atomic but not fsynced (durable=False): the files are a scratch
    copy this process reads back and then removes, and a write's two syncs doubled its
    time on these machines' disks (0.9 ms against 0.4 ms a file)."""

    def __init__(self) -> None:
        self._directory = private_dir("memories")
        self.handler = MemoryToolHandler(str(self._directory), durable=False)
        self.records: tuple[FactRecord, ...] = ()
        self.lines: dict[str, tuple[str, int]] = {}

    def apply(self, records: Sequence[FactRecord]) -> None:
        handler, lines = self.handler, self.lines
        for record in records:
            path = key_path(record.key)
            if record.action is RecordAction.DELETE:
                if path in lines:
                    handler.execute({"command": "delete", "path": path})
                    del lines[path]
            elif path in lines:
                handler.execute({"command": "str_replace", "path": path,
                                 "old_str": lines[path][0], "new_str": record.line()})
                lines[path] = (record.line(), record.exchange_index)
            else:
                handler.execute({"command": "create", "path": path,
                                 "file_text": record.line() + "\n"})
                lines[path] = (record.line(), record.exchange_index)

    def close(self) -> None:
        remove(self._directory)


_LIVE_REPLAYS = 2  # one user's memories and the shared ones, each growing day by day
_live: list[_Replay] = []


@lru_cache(maxsize=64)
def replay(records: tuple[FactRecord, ...]) -> MemoryFiles:
    """Applies the records as memory tool commands, then reads the files back: in a fresh
    root, or in the root of an earlier call whose records these continue."""
    live = next((r for r in _live if records[:len(r.records)] == r.records), None)
    if live is None:
        live = _Replay()
        if len(_live) == _LIVE_REPLAYS:
            _live.pop(0).close()
    else:
        _live.remove(live)
    _live.append(live)
    live.apply(records[len(live.records):])
    live.records = records
    handler, lines = live.handler, live.lines
    paths = sorted(lines)
    views = tuple(handler.execute({"command": "view", "path": p}) for p in paths)
    contents = tuple((p, _read(handler, p), lines[p][1]) for p in paths)
    return MemoryFiles(contents, views)


def _read(handler: MemoryToolHandler, path: str) -> str:
    """A file's text, recovered from `view` (the only read command the tool has)."""
    view = handler.execute({"command": "view", "path": path})
    numbered = view.split("\n")[1:]
    return "\n".join(line.split("\t", 1)[1] for line in numbered if "\t" in line)


_replayed: WeakKeyDictionary[Memory, MemoryFiles] = WeakKeyDictionary()


def _files(memory: Memory) -> MemoryFiles:
    """The day's files, replayed once per memory (not per probe: the records tuple of a
    large deployment is slow to even hash)."""
    if memory not in _replayed:
        _replayed[memory] = replay(tuple(memory.records))
    return _replayed[memory]


@register_store("memory_tool_files")
def _memory_tool_files(memory: Memory) -> list[Document]:
    return [Document(source, text) for _, text, source in _files(memory).contents]


@register_policy(order=170)  # after the core policies
class MemoryToolProfile(Policy):
    id, label = "memory_tool_profile", "memory-tool profile files, view injected"
    stores = ("memory_tool_files",)

    def inject(self, memory: Memory, question: str) -> Injection:
        return Injection(_files(memory).views)


def file_texts(records: Sequence[FactRecord]) -> dict[str, str]:
    """Path -> text of every memory file after the records, for inspection and tests."""
    return {path: text for path, text, _ in replay(tuple(records)).contents}
