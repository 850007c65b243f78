"""mem0 (the `mem0ai` package's OSS `Memory`), offline, through its own write path.

Every turn goes to `Memory.add` with `infer=False` (no model: each message stored raw, so
its retrieval, its user partitioning and its deletion are mem0's own); membench's MiniLM
vectors reach it as a LangChain `Embeddings` (mem0's `langchain` embedder provider), and its
vector store and history database are written under the system's directory. mem0's
telemetry is off; its home directory (MEM0_DIR: a config.json holding a random id, read at
import, so one per process) is a private temporary directory removed at the run's end.

mem0 makes ids (uuid4) and timestamps (the clock): only memory texts are recorded, ordered
by mem0's score, then by text.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import sys
from pathlib import Path
from typing import Any, ClassVar

from membench.cleanup.private_temp import private_dir
from membench.scenario.text import has
from membench.systems.base import (
    Forget,
    MemorySystem,
    SystemUnavailable,
    Turn,
    register_system,
)

INSTALL = "pip install -e '.[systems]'  (or scripts/install)"
LIST_LIMIT = 1_000_000  # get_all's top_k: every memory of the user
SCORE_DIGITS = 6  # scores rounded before ordering: ties then go by text, on any machine


def _mem0() -> Any:
    """Imports mem0 with its telemetry as MEM0_TELEMETRY says (off when unset) and its home
    private. mem0 reads both at import: if something imported it first, its module flags
    are set to the same effect (its `mem0_dir` is then used only with telemetry on)."""
    os.environ.setdefault("MEM0_TELEMETRY", "False")
    if "mem0.memory.setup" not in sys.modules:
        os.environ["MEM0_DIR"] = str(private_dir("mem0-home"))
    try:
        main = importlib.import_module("mem0.memory.main")
        telemetry = importlib.import_module("mem0.memory.telemetry")
        importlib.import_module("langchain.embeddings.base")
    except ImportError as error:
        raise SystemUnavailable(f"{error.name or error} is not installed: {INSTALL}") from None
    enabled = os.environ["MEM0_TELEMETRY"].lower() in ("true", "1", "yes")
    main.MEM0_TELEMETRY = telemetry.MEM0_TELEMETRY = enabled
    for name in ("mem0", "httpx", "qdrant_client"):  # a warning per reset, delete, ...
        logging.getLogger(name).setLevel(logging.ERROR)
    return main


def _embeddings(embed):
    """membench's encoder as the LangChain Embeddings mem0's `langchain` provider takes."""
    from langchain_core.embeddings import Embeddings

    class MembenchEmbeddings(Embeddings):
        def embed_documents(self, texts):
            return [row.tolist() for row in embed(list(texts))]

        def embed_query(self, text):
            return embed([text])[0].tolist()

    return MembenchEmbeddings()


class _Mem0(MemorySystem):
    install = INSTALL
    remedies = ("delete_all", "reset")
    vector_store: ClassVar[str]
    DIMENSIONS = 384  # all-MiniLM-L6-v2

    @classmethod
    def check_installed(cls) -> None:
        for module in ("mem0", "langchain", cls.vector_store_module):
            if importlib.util.find_spec(module) is None:
                raise SystemUnavailable(f"{module} is not installed: {INSTALL}")

    vector_store_module: ClassVar[str]

    def __init__(self, directory: Path, embed) -> None:
        super().__init__(directory, embed)
        main = _mem0()
        self.memory = main.Memory.from_config({
            "embedder": {"provider": "langchain",
                         "config": {"model": _embeddings(embed),
                                    "embedding_dims": self.DIMENSIONS}},
            "vector_store": {"provider": self.vector_store,
                             "config": self.store_config(directory / "vectors")},
            # never called with infer=False; the key is a placeholder, not a secret
            "llm": {"provider": "openai", "config": {"api_key": "unused", "model": "none"}},
            "history_db_path": str(directory / "history.db"),
        })

    def store_config(self, path: Path) -> dict:
        raise NotImplementedError

    def observe(self, turn: Turn) -> None:
        self.memory.add([{"role": turn.role, "content": turn.text}], user_id=turn.user_id,
                        infer=False, metadata={"day": turn.day})

    def context(self, user_id: str, question: str, k: int) -> list[str]:
        found = self.memory.search(question, filters={"user_id": user_id}, top_k=k)
        ranked = sorted(found["results"],
                        key=lambda m: (-round(float(m.get("score") or 0.0), SCORE_DIGITS),
                                       m["memory"]))
        return [m["memory"] for m in ranked[:k]]

    def _memories(self, user_id: str) -> list[dict]:
        return self.memory.get_all(filters={"user_id": user_id}, top_k=LIST_LIMIT)["results"]

    def forget(self, request: Forget) -> None:
        """Every memory of the user that states one of the fact's values, by `delete`."""
        for memory in self._memories(request.user_id):
            if any(has(memory["memory"], value) for value in request.values):
                self.memory.delete(memory["id"])

    def apply_remedy(self, remedy: str, user_id: str) -> None:
        if remedy == "delete_all":
            self.memory.delete_all(user_id=user_id)
        elif remedy == "reset":
            self.memory.reset()
        else:
            super().apply_remedy(remedy, user_id)

    def place(self, relative: str) -> str:
        if relative.startswith("history.db"):
            return "history database"
        if relative.startswith("vectors/"):
            return "vector store"
        return super().place(relative)

    def close(self) -> None:
        client = getattr(self.memory.vector_store, "client", None)
        if client is not None and hasattr(client, "close"):
            client.close()
        db = getattr(self.memory, "db", None)
        if db is not None:
            db.close()


@register_system(order=10)
class Mem0Qdrant(_Mem0):
    id, label = "mem0_qdrant", "mem0, infer=False, local Qdrant"
    vector_store, vector_store_module = "qdrant", "qdrant_client"

    def store_config(self, path: Path) -> dict:
        return {"path": str(path), "collection_name": "membench", "on_disk": True,
                "embedding_model_dims": self.DIMENSIONS}


@register_system(order=20)
class Mem0Faiss(_Mem0):
    id, label = "mem0_faiss", "mem0, infer=False, FAISS"
    vector_store, vector_store_module = "faiss", "faiss"

    def store_config(self, path: Path) -> dict:
        return {"path": str(path), "collection_name": "membench", "distance_strategy": "cosine",
                "embedding_model_dims": self.DIMENSIONS}
