"""The response cache on disk: JSON Lines, one response per line, sorted by key, so the
same cache is the same bytes and a diff shows exactly the answers a rerun added. A team
commits it beside its results (dvc.yaml declares it `cache: false`, `persist: true`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from membench.model.cache import CachedResponse, ResponseCache
from membench.model.requests import canonical, request_key

FIELDS = ("key", "model", "kind", "request", "response")


def read_cache(path: Path) -> ResponseCache:
    """The cache at `path`, or an empty one where there is no file yet. A line that is not
    a cached response, or whose key is not its request's, is an error naming the line."""
    cache = ResponseCache()
    if not path.exists():
        return cache
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            where = f"{path}:{number}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{where}: not JSON ({error.msg})") from None
            if not isinstance(row, dict) or sorted(row) != sorted(FIELDS) or not all(
                    isinstance(row[f], str) for f in FIELDS if f != "request") or not \
                    isinstance(row["request"], dict):
                raise ValueError(f"{where}: a cached response has exactly the string fields "
                                 f"key, model, kind, response and the object request")
            if request_key(row["model"], row["kind"], row["request"]) != row["key"]:
                raise ValueError(f"{where}: the key is not the SHA-256 of its model, kind "
                                 f"and request (edited by hand?)")
            cache.add(CachedResponse(**row))
    return cache


def cache_text(cache: ResponseCache) -> str:
    return "".join(canonical({f: getattr(entry, f) for f in FIELDS}) + "\n"
                   for entry in cache.entries())


def keep_cache(cache: ResponseCache, path: Path) -> None:
    """Writes the cache in one rename: a reader sees the old file or the new one, whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    staged = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        staged.write_text(cache_text(cache), encoding="utf-8")
        os.replace(staged, path)
    finally:
        staged.unlink(missing_ok=True)
