"""Stemmed word tokens, so BM25 matches "runs"/"run" and "services"/"service".

Stems are the English Snowball (Porter2) stemmer from PyStemmer, applied to
membench.scenario.text.tokens, so word boundaries stay the project's one definition.
Use as `Bm25Index(documents, tokenize=stemmed_tokens)`; queries are then stemmed too.
"""

from __future__ import annotations

from functools import lru_cache

import Stemmer

from membench.scenario.text import tokens


@lru_cache(maxsize=1)
def _english_stemmer() -> Stemmer.Stemmer:
    # Built on first use; PyStemmer caches stems of recent words internally.
    return Stemmer.Stemmer("english")


def stemmed_tokens(text: str) -> list[str]:
    """Snowball English stems of tokens(text), in order."""
    return _english_stemmer().stemWords(tokens(text))
