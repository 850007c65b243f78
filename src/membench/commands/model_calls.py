"""How a stage gets a model's answers: from the response cache, and for what it lacks from
the endpoint params name (`model.base_url`), a local server this run starts (`local`), or
nobody (`""`: a missing answer stops the stage)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from membench.io.model_cache import keep_cache
from membench.io.model_client import Endpoint, completer
from membench.io.model_server import LOCAL, LocalModelServer
from membench.model.cache import Keep, ResponseCache, answers
from membench.model.requests import ChatRequest
from membench.params import ModelParams


@contextmanager
def model_answers(params: ModelParams, cache: ResponseCache, cache_file: Path, label: str
                  ) -> Iterator[Callable[[Sequence[ChatRequest]], list[str]]]:
    """Yields `answer_all(requests)`; answers the model gives join `cache` (the stage writes
    it with its outputs; a run that fails or is interrupted writes it here, so no answer
    received is asked twice). A local server starts only when a request is missing from
    the cache, and stops on leaving."""
    server: list[LocalModelServer] = []

    def endpoint() -> Endpoint:
        if params.base_url != LOCAL:
            return Endpoint(params.base_url, params.key_env, params.concurrency,
                            params.timeout_seconds, params.retries)
        if not server:
            server.append(LocalModelServer(params.name, params.key_env,
                                           concurrency=params.concurrency,
                                           timeout_seconds=params.timeout_seconds,
                                           retries=params.retries))
        return server[0].endpoint

    def complete(bodies: Sequence[dict], keep: Keep) -> list[str]:
        return completer(endpoint(), label)(bodies, keep)

    def answer_all(requests: Sequence[ChatRequest]) -> list[str]:
        return answers(requests, params.name, cache, complete if params.base_url else None,
                       str(cache_file))

    known = len(cache)
    try:
        yield answer_all
    except BaseException:
        if len(cache) > known:  # an interrupted or failed run keeps what the model answered
            keep_cache(cache, cache_file)
        raise
    finally:
        for running in server:
            running.close()
