"""o200k_base token counts through real tiktoken, from a vocabulary given as bytes.

The vocabulary bytes are verified against the SHA-256 the article used before any
encoding is built, so a tampered or truncated file can never produce numbers.
"""

from __future__ import annotations

import hashlib
import re
from binascii import Error as BinasciiError
from binascii import a2b_base64
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import tiktoken

O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"

# The o200k_base pre-tokenizer pattern and special tokens, as tiktoken_ext defines them
# (a test checks equality); tiktoken_ext itself would download the vocabulary.
O200K_PAT_STR = r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
O200K_SPECIAL_TOKENS = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}


COUNT_THREADS = 2

# A newline followed by a character that is neither whitespace nor "/": no o200k_base
# pre-token crosses the point right after it (a newline run ends a pre-token unless
# whitespace follows, and punctuation's trailing `[\r\n/]*` stops at any other
# character), and no pre-token before it looks past it. Pre-tokens are encoded
# independently, so a text's count is the sum of its pieces' counts when cut there (each
# piece keeping its newline). Python's \s covers every Unicode White_Space character, so
# no cut is made where the pattern's \s would continue.
CLEAN_CUT = re.compile(r"\n(?=[^\s/])")

class VocabularyError(ValueError):
    """The vocabulary bytes are not the o200k_base file the bench is defined on."""


def parse_ranks(vocabulary: bytes) -> dict[bytes, int]:
    """`token-base64 rank` per line, as tiktoken's loader reads it, in bulk: build_encoding
    verifies the file's SHA-256 first, so only a well-formed file ever gets here."""
    fields = vocabulary.split()
    if len(fields) % 2:
        raise VocabularyError("vocabulary has a line without a rank")
    try:
        return dict(zip(map(a2b_base64, fields[0::2]), map(int, fields[1::2]), strict=True))
    except (ValueError, BinasciiError) as error:
        raise VocabularyError(f"vocabulary is malformed: {error}") from error


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

    A text is cut at CLEAN_CUT points (after a newline, before a line that starts a new
    pre-token) and its count is the sum of its pieces' counts, each piece encoded once and
    memoized by its own string: a transcript joined on day 3,000 costs only its new lines.
    Counts of the identical strings, so a cached count can never drift from an uncached one.
    """

    def __init__(self, encoding: tiktoken.Encoding) -> None:
        self.encoding = encoding
        self._known: dict[str, int] = {}

    def count(self, text: str) -> int:
        return self.count_all([text])[0]

    def _encoded_lengths(self, pieces: Sequence[str]) -> list[int]:
        encode = self.encoding.encode_ordinary
        return [len(encode(piece)) for piece in pieces]

    def count_all(self, texts: Sequence[str]) -> list[int]:
        """Counts of many texts; uncached pieces are encoded in parallel threads (tiktoken
        releases the GIL), then remembered; only lengths are kept, never token lists.
        Texts are cut one at a time, so only one text's pieces exist at once."""
        known = self._known
        totals: dict[str, int] = {}
        with ThreadPoolExecutor(COUNT_THREADS) as pool:
            for text in dict.fromkeys(texts):
                pieces = _pieces(text)
                todo = list(dict.fromkeys(p for p in pieces if p not in known))
                # One task per thread, each encoding its share in turn: pieces are short,
                # and a task per piece would cost more in the executor than in tiktoken.
                share = max(1, -(-len(todo) // COUNT_THREADS))
                parts = [todo[i:i + share] for i in range(0, len(todo), share)]
                for part, counts in zip(parts, pool.map(self._encoded_lengths, parts),
                                        strict=True):
                    known.update(zip(part, counts, strict=True))
                totals[text] = sum(known[p] for p in pieces)
        return [totals[t] for t in texts]


def _pieces(text: str) -> list[str]:
    """The text cut after each CLEAN_CUT newline, every piece keeping its own newline."""
    pieces = CLEAN_CUT.split(text)
    return [piece + "\n" for piece in pieces[:-1]] + pieces[-1:]
