"""membench's model as a LangChain chat model (membench.systems.chat_model): random ids
hidden from the cache key and restored in replies, tool calls asked in the prompt and read
back; LangChain's own message types, no model (the real one: tests/test_model_server.py)."""

from __future__ import annotations

import json
import uuid

from membench.systems.chat_model import Aliases, chat_model, parse_tool_calls, tool_schema

TOOL = {"type": "function", "function": {"name": "Memory", "description": "Store a memory.",
        "parameters": {"type": "object", "properties": {"content": {"type": "string"}},
                       "required": ["content"]}}}


def test_random_ids_become_stable_aliases_and_come_back():
    first, second = str(uuid.uuid4()), uuid.uuid4().hex
    aliases = Aliases()
    text = f"<session_{first}> memory {second} again {first}"
    assert aliases.hide(text) == "<session_id1> memory id2 again id1"
    assert aliases.restore("patch id2, not id3 or grid2") == f"patch {second}, not id3 or grid2"
    # another run's ids, the same text: the same request
    assert Aliases().hide(text.replace(first, str(uuid.uuid4()))) == aliases.hide(text)


def test_a_reply_becomes_tool_calls_and_a_bad_one_none():
    aliases = Aliases()
    aliases.hide("doc 0123456789abcdef0123456789abcdef")
    reply = json.dumps({"tool_calls": [{"name": "PatchDoc", "args": {"json_doc_id": "id1"}},
                                       {"name": "Memory"}, {"args": {}}]})
    assert parse_tool_calls(reply, aliases, 3) == [
        {"name": "PatchDoc", "args": {"json_doc_id": "0123456789abcdef0123456789abcdef"},
         "id": "call_3_0", "type": "tool_call"},
        {"name": "Memory", "args": {}, "id": "call_3_1", "type": "tool_call"}]
    assert parse_tool_calls("not json", aliases, 0) == []


def test_the_reply_schema_is_one_of_the_tools():
    schema = tool_schema([TOOL, {**TOOL, "function": {**TOOL["function"], "name": "Other"}}])
    items = schema["properties"]["tool_calls"]["items"]["anyOf"]
    assert [i["properties"]["name"]["const"] for i in items] == ["Memory", "Other"]
    assert tool_schema([TOOL])["properties"]["tool_calls"]["items"]["properties"]["args"] == \
        TOOL["function"]["parameters"]


def test_the_chat_model_sends_one_request_and_returns_langchain_tool_calls():
    from langchain_core.messages import HumanMessage, SystemMessage

    asked = []

    def ask(requests):
        asked.extend(requests)
        return ['{"tool_calls": [{"name": "Memory", "args": {"content": "likes tea"}}]}']

    model = chat_model(ask, seed=0, max_tokens=64).bind_tools([TOOL])
    answer = model.invoke([SystemMessage("You keep memories."),
                           HumanMessage(f"I like tea. {uuid.uuid4()}")])
    assert answer.tool_calls[0]["name"] == "Memory"
    assert answer.tool_calls[0]["args"] == {"content": "likes tea"}
    [request] = asked
    assert request.json_schema and request.messages[-1] == ("user", "I like tea. id1")
    assert request.body("m")["response_format"]["schema"]["required"] == ["tool_calls"]
