"""Shared by the backend tests: grid vectors made from each text's hash (no model), and a
scan of a backend's files that returns {(form, place)}."""

from __future__ import annotations

import hashlib

import numpy as np

from membench.backends.at_rest import scan_backend
from membench.backends.base import Embed
from membench.backends.scanner import value_needles, vector_needle
from membench.io.at_rest import backend_files
from membench.retrieval.dense import snap_to_grid

DIMS = 384
SECRET_VALUE = "+44 7700 900123"
SECRET = f"user: my phone number is {SECRET_VALUE}, call me there"


def _vector(text: str) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).normal(size=DIMS)
    return snap_to_grid(v / np.linalg.norm(v))


EMBED = Embed(_vector, DIMS)


def filler(i: int) -> str:
    return f"user: note {i} about the build of module_{i}; " + "padding " * 60


def where(backend) -> set[tuple[str, str]]:
    """(form, place) of every hit of the secret (value, token sequence, its vector)."""
    backend.settle()
    needles = value_needles("phone", SECRET_VALUE) + [vector_needle("phone", EMBED(SECRET))]
    found = scan_backend(backend, backend_files(backend.files_root()), needles,
                         backend.documents(), EMBED)
    return {(form, place) for (_, form), (places, _) in found.items() for place in places}


def remember_and_forget(backend, rows: int = 12) -> None:
    for i in range(rows):
        backend.upsert(i, filler(i))
    backend.upsert(100, SECRET)
    assert 100 in [d.source for d in backend.documents()]
    backend.delete(100)
    assert 100 not in [d.source for d in backend.documents()]
