"""The store backend interface: what membench asks of a real database keeping one store.

A backend holds one store's documents under one directory (every file it writes is
there, so the at-rest audit can scan them all). Documents are keyed by the exchange they
came from (Document.source); vectors are membench's own embeddings, on the 2^-20 grid.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from membench.registry import Registry
from membench.retrieval.retrievers import Document

# Where a deleted value is held at rest (the audit's places).
LIVE = "live rows"
FREE = "free space"  # free pages, unused space in a page, dead tuples
LOG = "log"  # WAL or rollback journal
OLD = "old versions"
INDEX = "index"
PLACES = (LIVE, FREE, LOG, OLD, INDEX)
NO_REMEDY = "none"
# The default story's exchanges and probes, on which the backends' relative_cost was measured.
COSTED_EXCHANGES, COSTED_PROBES = 360, 80


@dataclass(frozen=True)
class Embed:
    """text -> membench's vector for it (looked up, never computed), and its length."""

    vector: Callable[[str], np.ndarray]
    dims: int

    def __call__(self, text: str) -> np.ndarray:
        return np.asarray(self.vector(text), dtype=np.float32)


class BackendUnavailableError(RuntimeError):
    """A backend cannot run here (missing extra, server that does not start)."""


def store_failed(backend: type[StoreBackend], error: BaseException) -> bool:
    """Whether `error` is the backend's store failing (see StoreBackend.failing_packages),
    not a defect of membench's own code."""
    return type(error).__module__.partition(".")[0] in backend.failing_packages


@dataclass(frozen=True, order=True)
class Located:
    """What a file is to the backend: its place, or a function of the hit's page."""

    place: str
    name: str  # the file's stable name in the report (no machine paths, no OIDs)


class StoreBackend(ABC):
    """One store in one database. `remedy` names the documented remedy this instance
    runs: options a remedy needs from the start (SQLite secure_delete) are set at open,
    the rest run in apply_remedy() after the replay."""

    lexical: ClassVar[str | None] = None  # native lexical ranking, described
    semantic: ClassVar[str | None] = None  # native vector ranking, described
    remedies: ClassVar[tuple[str, ...]] = ()
    # Whether listing, searching or settle() can change the files (SQLite's checkpoints,
    # PostgreSQL's hint bits and page pruning). If not, the audited replay ends in the
    # state a replay without reads reaches, and the remedies start from copies of it.
    reads_write: ClassVar[bool] = True
    forks: ClassVar[bool] = False  # fork() makes a copy; else each remedy replays afresh
    # Top-level packages whose errors mean the store itself failed mid-run (its server
    # gone, its connection lost): the stage names the backend in one line, no traceback.
    failing_packages: ClassVar[tuple[str, ...]] = ()
    # What a replay with its remedies costs beside the others': seconds on the default
    # story (docs/backends.md's table). Scheduling only, never a result: the stage starts
    # the costliest first, and the automatic placement times the cheapest in its own process.
    relative_cost: ClassVar[float] = 10.0
    # The share of relative_cost spent in native searches that read every stored document
    # (a scan in Python): on a larger story it grows with the documents times the
    # searches, the rest with the documents alone (expected_cost).
    scanning_search_share: ClassVar[float] = 0.0
    _owners: dict[int, str] = {}  # SQLite: page -> table, read by settle()
    _relations: dict[str, tuple[str, str]] = {}  # PostgreSQL: file -> relation, by settle()

    @classmethod
    def expected_cost(cls, exchanges: int, probes: int) -> float:
        """relative_cost grown to a story of this many exchanges and probes (the default
        story's give relative_cost itself). At a thousand sessions LangGraph's in-memory
        store, the cheapest on the default story, was the longest unit: started last, it
        ran alone at the end."""
        documents, searches = exchanges / COSTED_EXCHANGES, probes / COSTED_PROBES
        share = cls.scanning_search_share
        return cls.relative_cost * documents * ((1 - share) + share * searches)

    def __init__(self, directory: Path, embed: Embed, remedy: str = NO_REMEDY) -> None:
        if remedy != NO_REMEDY and remedy not in self.remedies:
            raise ValueError(f"{type(self).__name__} has no remedy {remedy!r}; "
                             f"known: {', '.join(self.remedies)}")
        self.directory = directory
        self.embed = embed
        self.remedy = remedy

    @abstractmethod
    def upsert(self, key: int, text: str) -> None: ...

    @abstractmethod
    def delete(self, key: int) -> None: ...

    @abstractmethod
    def documents(self) -> list[Document]:
        """Every live document, by key."""

    def lexical_search(self, question: str, k: int) -> list[int]:
        raise NotImplementedError(f"{type(self).__name__} has no lexical search")

    def vector_search(self, question: str, k: int) -> list[int]:
        raise NotImplementedError(f"{type(self).__name__} has no vector search")

    @classmethod
    def opening(cls, remedy: str) -> object:
        """What `remedy` needs set when the database is opened (SQLite's secure_delete):
        remedies with the same opening can start from copies of one replay (fork)."""
        return None

    def fork(self, directory: Path, remedy: str) -> StoreBackend:
        """A backend for `remedy` over a byte copy of this one's files, in `directory`,
        opened as they are (nothing created or written on opening), so it continues from
        exactly this one's state. Only where `forks`: a server's copied files are not its
        state (shutdown and recovery write), so each of its remedies replays afresh."""
        raise NotImplementedError(f"{type(self).__name__} cannot fork")

    def settle(self) -> None:
        """Brings the disk to a defined state before a scan (a server's CHECKPOINT)."""

    def apply_remedy(self) -> None:
        """Runs the remedy's after-the-fact steps (none by default)."""

    def files_root(self) -> Path | None:
        """The directory holding every file the backend wrote; None: it writes none."""
        return self.directory

    @abstractmethod
    def locate(self, relative: str, blob: bytes, offset: int, live: bool) -> Located:
        """The place of a hit at `offset` in the file `relative` (to files_root), given
        whether the found needle is still in the store's live documents."""

    def close(self) -> None:
        """Releases connections and servers; the directory stays for a last scan."""

    def __enter__(self) -> StoreBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


BACKENDS: Registry[type[StoreBackend]] = Registry("backend")
