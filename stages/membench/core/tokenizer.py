"""o200k_base token counts through real tiktoken, from a vocabulary given as bytes.

The vocabulary bytes are verified against the SHA-256 the article used before any
encoding is built, so a tampered or truncated file can never produce numbers.
"""

from __future__ import annotations

import base64
import hashlib
from functools import lru_cache

import tiktoken

O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"

# The o200k_base pre-tokenizer pattern and special tokens, as tiktoken_ext defines them
# (a test checks equality); tiktoken_ext itself would download the vocabulary.
O200K_PAT_STR = r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
O200K_SPECIAL_TOKENS = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}


class VocabularyError(ValueError):
    """The vocabulary bytes are not the o200k_base file the bench is defined on."""


def parse_ranks(vocabulary: bytes) -> dict[bytes, int]:
    ranks: dict[bytes, int] = {}
    for number, line in enumerate(vocabulary.splitlines(), start=1):
        if not line:
            continue
        try:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
        except ValueError as error:
            raise VocabularyError(f"vocabulary line {number} is malformed: {line[:60]!r}") from error
    return ranks


def build_encoding(vocabulary: bytes) -> tiktoken.Encoding:
    digest = hashlib.sha256(vocabulary).hexdigest()
    if digest != O200K_SHA256:
        raise VocabularyError(
            f"o200k_base vocabulary has SHA-256 {digest}, expected {O200K_SHA256}: "
            "the file is tampered, truncated or a different vocabulary"
        )
    return tiktoken.Encoding(
        name="o200k_base",
        pat_str=O200K_PAT_STR,
        mergeable_ranks=parse_ranks(vocabulary),
        special_tokens=O200K_SPECIAL_TOKENS,
    )


class TokenCounter:
    """Exact o200k_base token counts of whole texts.

    Counts are memoized by the text itself, so a cached count is the count of the
    identical string and can never drift from an uncached one.
    """

    def __init__(self, encoding: tiktoken.Encoding) -> None:
        self.encoding = encoding
        self.count = lru_cache(maxsize=65536)(self._count)

    def _count(self, text: str) -> int:
        return len(self.encoding.encode_ordinary(text))
