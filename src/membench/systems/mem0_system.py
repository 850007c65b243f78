"""mem0 (the `mem0ai` package's OSS `Memory`), offline, through its own write path.

Every turn goes to `Memory.add` with `infer=False` (no model: each message stored raw, so
its retrieval, its user partitioning and its deletion are mem0's own); membench's MiniLM
vectors reach it as a LangChain `Embeddings` (mem0's `langchain` embedder provider), and its
vector store and history database are written under the system's directory. mem0's
telemetry is off; its home directory (MEM0_DIR: a config.json holding a random id, read at
import, so one per process) is a private temporary directory removed at the run's end.

mem0 makes ids (uuid4) and timestamps (the clock): only memory texts are recorded, ordered
by mem0's score, then by text.

`mem0_qdrant_infer` runs `infer=True`: mem0's own extraction, one model call per exchange,
answered through membench's model client and response cache (docs/model.md). mem0 writes
today's date into its prompts; the story's date replaces it (day 1 is STORY_EPOCH), so the
same story asks the same requests on any day.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import re
import sys
from datetime import date, timedelta
from pathlib import Path
from typing import Any, ClassVar

from membench.cleanup.private_temp import private_dir
from membench.model.requests import ChatRequest
from membench.scenario.text import has
from membench.systems.base import (
    Forget,
    MemorySystem,
    SystemUnavailable,
    Turn,
    WritesExchanges,
    register_system,
)

INSTALL = "pip install -e '.[systems]'  (or scripts/install)"
LIST_LIMIT = 1_000_000  # get_all's top_k: every memory of the user
SCORE_DIGITS = 6  # scores rounded before ordering: ties then go by text, on any machine
STORY_EPOCH = date(2026, 1, 1)  # the story's day 1, in the dates mem0 writes into prompts
MODEL_MAX_TOKENS = 512  # of one reply to mem0's extraction prompt
# Where mem0's prompts hold today's date (mem0 2.2.1's additive extraction prompt and its
# older fact-extraction prompts).
_TODAY = re.compile(r"(## Observation Date\n|## Current Date\n|Today's date is )"
                    r"\d{4}-\d{2}-\d{2}")


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


class StoryDatedChat:
    """mem0's LLM (the one method it calls), answered by membench's model: each prompt
    with the story's date for today's, sent at temperature 0 through the response cache."""

    def __init__(self, ask, seed: int) -> None:
        self.ask, self.seed, self.day = ask, seed, 1

    def generate_response(self, messages, response_format=None, tools=None,
                          tool_choice="auto", **_: Any) -> str:
        if tools:
            raise ValueError("mem0 asked for tool calls, which membench's model client "
                             "does not send")
        today = (STORY_EPOCH + timedelta(days=self.day - 1)).isoformat()
        turns = tuple((m["role"], _TODAY.sub(lambda found: found.group(1) + today,
                                             str(m["content"]))) for m in messages)
        wants_json = (response_format or {}).get("type") == "json_object"
        [reply] = self.ask([ChatRequest(turns, MODEL_MAX_TOKENS, self.seed,
                                        json_reply=wants_json)])
        return reply


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


@register_system(order=25)
class Mem0QdrantInfer(WritesExchanges, Mem0Qdrant):
    """mem0 as its users run it: every exchange through `Memory.add(..., infer=True)`, its
    model extracting the memories (mem0 2.2.1: added, never updated in place)."""
    id, label = "mem0_qdrant_infer", "mem0, infer=True (its own extraction, the model), local Qdrant"
    asks_model = True

    def __init__(self, directory: Path, embed) -> None:
        super().__init__(directory, embed)
        self.memory.llm = StoryDatedChat(self.model(), self.model_seed)

    def write_exchange(self, turns: list[Turn]) -> None:
        self.memory.llm.day = turns[-1].day
        self.memory.add([{"role": t.role, "content": t.text} for t in turns],
                        user_id=turns[0].user_id, infer=True, metadata={"day": turns[0].day})
