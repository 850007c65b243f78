"""A chat request as membench sends it to an OpenAI-compatible endpoint, and the key it is
cached under. Temperature 0 and a fixed seed: the same request asks for the same answer, and
the cache keeps the one the model gave."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

# The endpoint kind a cached response came from (OpenAI's chat completions).
CHAT = "chat"


@dataclass(frozen=True)
class ChatRequest:
    messages: tuple[tuple[str, str], ...]  # (role, content), in order
    max_tokens: int
    seed: int
    temperature: float = 0.0
    json_reply: bool = False  # asks for a JSON object (OpenAI's response_format)
    json_schema: str | None = None  # ... that follows this JSON Schema (canonical JSON)

    def body(self, model: str) -> dict[str, Any]:
        """The JSON body of a POST to `{base_url}/chat/completions`."""
        body = {"model": model, "messages": [{"role": role, "content": content}
                                             for role, content in self.messages],
                "temperature": self.temperature, "seed": self.seed,
                "max_tokens": self.max_tokens}
        if self.json_reply or self.json_schema:
            body["response_format"] = {"type": "json_object"}
        if self.json_schema:
            body["response_format"]["schema"] = json.loads(self.json_schema)
        return body


def canonical(data: Any) -> str:
    """One spelling per value: sorted keys, no spaces, UTF-8 kept as is."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_key(model: str, kind: str, body: dict[str, Any]) -> str:
    """The cache key: the model, the endpoint kind and the SHA-256 of the full request. The
    endpoint's address is not part of it, so a run without the model finds the response."""
    return hashlib.sha256(canonical({"model": model, "kind": kind, "request": body})
                          .encode("utf-8")).hexdigest()
