"""membench's model as a LangChain chat model, for memory systems built on LangChain
(LangMem's memory manager): every call goes through membench's model client and response
cache (docs/model.md), at temperature 0.

Tool calls are asked for in the prompt and constrained by a JSON Schema (the endpoint's
`response_format`), not with OpenAI's `tools` field, which a small local model's server may
not support: the reply is `{"tool_calls": [{"name": ..., "args": {...}}]}`, turned into the
AIMessage tool calls the framework reads.

The frameworks put random ids (uuid4) into their prompts; each is replaced, in order of
first appearance, by `id1`, `id2`, ... before the request is keyed and sent, and mapped back
in the reply, so the same conversation asks the same request on every run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from membench.model.requests import ChatRequest, canonical

# a uuid, with or without dashes, wherever it stands (in `session_<uuid>` too)
_UUID = re.compile(r"(?<![0-9a-f])[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?"
                   r"[0-9a-f]{12}(?![0-9a-f])")
_ALIAS = re.compile(r"(?<![0-9A-Za-z])id\d+(?![0-9A-Za-z])")
TOOLS_PROMPT = (
    "You can call these tools. Reply with one JSON object: {\"tool_calls\": [{\"name\": "
    "<a tool's name>, \"args\": {<its arguments>}}, ...]}, one entry per call.\n\nTools:\n")


class Aliases:
    """Random ids in the prompt, each as `idN`, and back."""

    def __init__(self) -> None:
        self.alias: dict[str, str] = {}
        self.real: dict[str, str] = {}

    def hide(self, text: str) -> str:
        def alias(found: re.Match) -> str:
            real = found.group(0)
            if real not in self.alias:
                self.alias[real] = f"id{len(self.alias) + 1}"
                self.real[self.alias[real]] = real
            return self.alias[real]
        return _UUID.sub(alias, text)

    def restore(self, text: str) -> str:
        return _ALIAS.sub(lambda found: self.real.get(found.group(0), found.group(0)), text)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") if isinstance(part, dict) else str(part)
                   for part in content)


def tool_schema(tools: Sequence[dict]) -> dict:
    """The reply's JSON Schema: a non-empty list of calls, each one of the tools."""
    calls = [{"type": "object", "properties": {
        "name": {"const": tool["function"]["name"]},
        "args": tool["function"].get("parameters", {"type": "object"})},
        "required": ["name", "args"]} for tool in tools]
    return {"type": "object", "required": ["tool_calls"], "properties": {"tool_calls": {
        "type": "array", "minItems": 1, "items": calls[0] if len(calls) == 1 else
        {"anyOf": calls}}}}


def tool_request(messages: Sequence[tuple[str, str]], tools: Sequence[dict], max_tokens: int,
                 seed: int) -> ChatRequest:
    listed = "\n".join(f"- {t['function']['name']}: {t['function'].get('description', '')}"
                       for t in tools)
    turns = (("system", TOOLS_PROMPT + listed), *messages)
    return ChatRequest(turns, max_tokens, seed, json_schema=canonical(tool_schema(tools)))


def parse_tool_calls(reply: str, aliases: Aliases, position: int) -> list[dict]:
    """The reply's calls; a reply that is not the asked JSON holds none."""
    try:
        data = json.loads(aliases.restore(reply))
    except json.JSONDecodeError:
        return []
    calls = data.get("tool_calls") if isinstance(data, dict) else None
    return [{"name": call["name"], "args": call.get("args") or {},
             "id": f"call_{position}_{i}", "type": "tool_call"}
            for i, call in enumerate(calls or ())
            if isinstance(call, dict) and isinstance(call.get("name"), str)
            and isinstance(call.get("args", {}), dict)]


def chat_model(ask, seed: int, max_tokens: int):
    """A LangChain BaseChatModel answered by `ask` (membench's client and cache)."""
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.utils.function_calling import convert_to_openai_tool

    roles = {"system": "system", "human": "user", "ai": "assistant", "tool": "user"}

    class MembenchChatModel(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "membench"

        def bind_tools(self, tools, *, tool_choice=None, **kwargs):
            return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            aliases = Aliases()
            turns = []
            for message in messages:
                text = _text(message.content)
                if message.type == "ai" and getattr(message, "tool_calls", None):
                    text = canonical({"tool_calls": [{"name": c["name"], "args": c["args"]}
                                                     for c in message.tool_calls]})
                elif message.type == "tool":
                    text = f"Tool result: {text}"
                turns.append((roles.get(message.type, "user"), aliases.hide(text)))
            tools = kwargs.get("tools")
            if tools:
                request = tool_request(turns, tools, max_tokens, seed)
            else:
                request = ChatRequest(tuple(turns), max_tokens, seed)
            [reply] = ask([request])
            if tools:
                answer = AIMessage(content="", tool_calls=parse_tool_calls(
                    reply, aliases, len(messages)))
            else:
                answer = AIMessage(content=aliases.restore(reply))
            return ChatResult(generations=[ChatGeneration(message=answer)])

    return MembenchChatModel()
