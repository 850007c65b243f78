"""The response cache: every answer the model gave, by request key. A run with the model
unset reads answers from here alone; a request the cache lacks stops the run, never a silent
fallback."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from membench.model.requests import CHAT, ChatRequest, request_key


@dataclass(frozen=True)
class CachedResponse:
    key: str
    model: str
    kind: str
    request: dict[str, Any]  # the full body sent, so a reader of the cache sees the prompt
    response: str


class MissingResponses(ValueError):
    """Requests the cache lacks while no model is configured."""

    def __init__(self, missing: int, total: int, where: str) -> None:
        super().__init__(
            f"{missing} of {total} model requests are not in the response cache {where} and "
            f"no model is configured: set model.base_url in params.yaml to an OpenAI-compatible "
            f"endpoint (docs/model.md) and rerun to fill them, or commit the cache that holds "
            f"them")
        self.missing = missing


class ResponseCache:
    def __init__(self, entries: Iterable[CachedResponse] = ()) -> None:
        self._entries: dict[str, CachedResponse] = {}
        for entry in entries:
            self.add(entry)

    def add(self, entry: CachedResponse) -> None:
        known = self._entries.get(entry.key)
        if known is not None and known.response != entry.response:
            raise ValueError(f"the response cache holds two answers for request {entry.key}")
        self._entries[entry.key] = entry

    def get(self, key: str) -> CachedResponse | None:
        return self._entries.get(key)

    def entries(self) -> list[CachedResponse]:
        """Every entry, by key: the same cache, the same file."""
        return [self._entries[key] for key in sorted(self._entries)]

    def __len__(self) -> int:
        return len(self._entries)


# What `complete` calls with each answer as it arrives: the body's position, the answer.
Keep = Callable[[int, str], None]
# Sends request bodies to the model, hands each answer to `keep` as it arrives (so an
# interrupted batch keeps what it received), and returns them in the bodies' order.
Complete = Callable[[Sequence[dict[str, Any]], Keep], list[str]]


def answers(requests: Sequence[ChatRequest], model: str, cache: ResponseCache,
            complete: Complete | None, where: str) -> list[str]:
    """The answer to each request: from the cache, else from `complete` (the model), whose
    answers join the cache as they arrive. With no model, a request the cache lacks is an
    error naming how many are missing."""
    bodies = [request.body(model) for request in requests]
    keys = [request_key(model, CHAT, body) for body in bodies]
    wanted = [i for i, key in enumerate(keys) if cache.get(key) is None]
    first: dict[str, int] = {}
    for i in wanted:
        first.setdefault(keys[i], i)
    unique = list(first.values())
    if unique:
        if complete is None:
            raise MissingResponses(len(unique), len(set(keys)), where)

        def keep(j: int, text: str) -> None:
            i = unique[j]
            cache.add(CachedResponse(keys[i], model, CHAT, bodies[i], text))

        complete([bodies[i] for i in unique], keep)
    return [cache.get(key).response for key in keys]  # type: ignore[union-attr]
