"""LangMem's memory manager over a LangGraph store (`langmem_sqlite`): the model decides
what to insert, update and delete, LangMem writes it into a `SqliteStore` under the
system's directory (one namespace per user). It asks the model (membench's, through the
systems stage's response cache: membench.systems.chat_model), so it runs only with one.

Each exchange (the user's turn with the assistant's reply) goes to the manager's `invoke`,
which searches the user's namespace for related memories (membench's vectors), asks the
model through LangMem's tool calls, and puts or deletes items. `context` searches the
namespace; `forget` deletes every memory that states one of the fact's values; the remedy
is VACUUM, as for the plain LangGraph store.
"""

from __future__ import annotations

import json
from pathlib import Path

from membench.systems.base import Turn, WritesExchanges, register_system
from membench.systems.chat_model import chat_model
from membench.systems.langgraph_system import LangGraphSqliteMemory

INSTALL = "pip install -e '.[systems]'  (or scripts/install)"
MODEL_MAX_TOKENS = 160  # of one reply (a list of tool calls)
# LangMem's items: {"kind": "Memory", "content": {"content": text}}
MEMORY_FIELD = "content.content"


def memory_text(value: dict) -> str:
    content = value.get("content")
    if isinstance(content, dict) and isinstance(content.get("content"), str):
        return content["content"]
    return json.dumps(content, sort_keys=True)


@register_system(order=40)
class LangMemSqlite(WritesExchanges, LangGraphSqliteMemory):
    id, label = "langmem_sqlite", "LangMem memory manager (the model) on a LangGraph SqliteStore"
    install = INSTALL
    asks_model = True
    index_fields = (MEMORY_FIELD,)
    required_modules = (*LangGraphSqliteMemory.required_modules, "langmem")

    def __init__(self, directory: Path, embed) -> None:
        super().__init__(directory, embed)
        from langmem import create_memory_store_manager

        self.manager = create_memory_store_manager(
            chat_model(self.model(), self.model_seed, MODEL_MAX_TOKENS),
            namespace=("memories", "{langgraph_user_id}"), store=self.store,
            enable_deletes=True)

    def write_exchange(self, turns: list[Turn]) -> None:
        self.manager.invoke(
            {"messages": [{"role": t.role, "content": t.text} for t in turns]},
            config={"configurable": {"langgraph_user_id": turns[0].user_id}})

    def text_of(self, value: dict) -> str:
        return memory_text(value)
