"""The client for an OpenAI-compatible chat endpoint (`POST {base_url}/chat/completions`):
bounded retries with backoff, a concurrency limit, timeouts and a progress bar with an ETA.

The key comes only from an environment variable, whose name params give; it is sent in the
Authorization header and never written to a log, an error or an output. Nothing here runs
unless params name a base URL (docs/model.md)."""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

# Answers worth asking again: the server is busy, restarting or briefly unreachable.
RETRIED_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class ModelError(RuntimeError):
    """The endpoint failed for good: unreachable after every retry, or it refused the
    request. Names the address and the cause, never the key."""


@dataclass(frozen=True)
class Endpoint:
    base_url: str  # e.g. http://127.0.0.1:8080/v1
    key_env: str  # the environment variable holding the key ("" or unset: no key)
    concurrency: int = 2
    timeout_seconds: float = 120.0
    retries: int = 3
    backoff_seconds: float = 1.0  # before the first retry, doubling after each

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"


def _key(endpoint: Endpoint) -> str | None:
    return os.environ.get(endpoint.key_env) if endpoint.key_env else None


def _post(endpoint: Endpoint, body: dict[str, Any]) -> str:
    """One request, retried; the answer's text."""
    data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    headers = {"Content-Type": "application/json"}
    key = _key(endpoint)
    if key:
        headers["Authorization"] = f"Bearer {key}"
    # No proxy: the endpoint is what params name, reached directly.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    for attempt in range(endpoint.retries + 1):
        try:
            request = urllib.request.Request(endpoint.url, data=data, headers=headers,
                                             method="POST")
            with opener.open(request, timeout=endpoint.timeout_seconds) as response:
                return _answer(endpoint, json.loads(response.read().decode("utf-8")))
        except urllib.error.HTTPError as error:
            detail = error.read().decode("utf-8", "replace")[:300].strip()
            if error.code not in RETRIED_STATUSES or attempt == endpoint.retries:
                hint = " (check the key in $" + endpoint.key_env + ")" if error.code in (
                    401, 403) else ""
                raise ModelError(f"model endpoint {endpoint.url} answered HTTP {error.code}"
                                 f"{hint}: {detail}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
            if attempt == endpoint.retries:
                reason = getattr(error, "reason", error)
                raise ModelError(f"model endpoint {endpoint.url} unreachable after "
                                 f"{endpoint.retries + 1} attempts: {reason}") from None
        except json.JSONDecodeError as error:
            raise ModelError(f"model endpoint {endpoint.url} answered with something "
                             f"other than JSON: {error}") from None
        time.sleep(endpoint.backoff_seconds * 2 ** attempt)
    raise AssertionError("unreachable")


def _answer(endpoint: Endpoint, reply: Any) -> str:
    try:
        content = reply["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise ModelError(f"model endpoint {endpoint.url} answered without "
                         f"choices[0].message.content: {str(reply)[:300]}") from None
    return content if isinstance(content, str) else ""


def completer(endpoint: Endpoint, label: str,
              progress: Callable[[int], Any] | None = None
              ) -> Callable[[Sequence[dict[str, Any]]], list[str]]:
    """A `complete` for membench.model.cache.answers: sends the bodies, at most
    `concurrency` at a time, with a progress bar (count, rate, ETA) on stderr."""

    def complete(bodies: Sequence[dict[str, Any]],
                 keep: Callable[[int, str], None] = lambda i, text: None) -> list[str]:
        from tqdm.auto import tqdm

        kept = threading.Lock()
        with tqdm(total=len(bodies), desc=label, unit="request", leave=False,
                  disable=None) as bar, ThreadPoolExecutor(endpoint.concurrency) as pool:
            def one(i: int, body: dict[str, Any]) -> str:
                text = _post(endpoint, body)
                with kept:
                    keep(i, text)
                bar.update(1)
                if progress is not None:
                    progress(1)
                return text

            return list(pool.map(one, range(len(bodies)), bodies))

    return complete
