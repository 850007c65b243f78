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


# A line that starts like this begins a new pre-token after the newline that joins it to
# the line before: the same class as CLEAN_CUT's lookahead.
_STARTS_CLEAN = re.compile(r"[^\s/]")
LINES_PER_BATCH = 2_000  # new lines whose pieces are cut, encoded and summed at once


class TokenCounter:
    """Exact o200k_base token counts of whole texts.

    A text is cut at CLEAN_CUT points (after a newline, before a line that starts a new
    pre-token) and its count is the sum of its pieces' counts, each piece encoded once and
    memoized by its own string: a transcript joined on day 3,000 costs only its new lines.
    Counts of the identical strings, so a cached count can never drift from an uncached one.

    A text given as its lines (count_lines) is never joined whole: its count is summed line
    by line, each line's count with its joining newline memoized by the line itself (the
    caller's string, not a copy), so a store of 30,000 sessions costs no second copy.
    """

    def __init__(self, encoding: tiktoken.Encoding) -> None:
        self.encoding = encoding
        self._known: dict[str, int] = {}  # piece -> its count
        self._lines: dict[str, int] = {}  # line (or run of lines) -> count of it + "\n"

    def count(self, text: str) -> int:
        return self.count_all([text])[0]

    def count_all(self, texts: Sequence[str]) -> list[int]:
        """Counts of many texts."""
        return self.count_lines([(text,) for text in texts])

    def count_lines(self, texts: Sequence[Sequence[str]]) -> list[int]:
        """Counts of texts each given as its lines: the count of "\n".join(lines).

        Where the next line starts a pre-token, the joined text would be cut after the
        joining newline: the count is the sum over the runs of lines between such cuts, a
        run's count (with its newline) memoized by the run. Only the last run of a text is
        counted without the newline."""
        totals: dict[tuple[str, ...], int] = {}
        with ThreadPoolExecutor(COUNT_THREADS) as pool:
            for lines in dict.fromkeys(tuple(lines) for lines in texts):
                runs = _runs(lines)
                if not runs:
                    totals[lines] = 0
                    continue
                *joined, last = runs
                self._learn([run for run in joined if run not in self._lines], pool)
                last_pieces = _pieces(last)
                self._encode([p for p in last_pieces if p not in self._known], pool)
                totals[lines] = (sum(self._lines[run] for run in joined)
                                 + sum(self._known[p] for p in last_pieces))
        return [totals[tuple(lines)] for lines in texts]

    def _learn(self, runs: list[str], pool: ThreadPoolExecutor) -> None:
        """Memoizes the count of each run followed by its newline, a batch at a time (only
        one batch's pieces exist at once)."""
        for start in range(0, len(runs), LINES_PER_BATCH):
            batch = [(run, _pieces(run + "\n")) for run in runs[start:start + LINES_PER_BATCH]]
            self._encode([p for _, pieces in batch for p in pieces if p not in self._known],
                         pool)
            for run, pieces in batch:
                self._lines[run] = sum(self._known[p] for p in pieces)

    def _encode(self, pieces: list[str], pool: ThreadPoolExecutor) -> None:
        """Encodes the pieces in parallel threads (tiktoken releases the GIL) and remembers
        their lengths; never the token lists."""
        todo = list(dict.fromkeys(pieces))
        # One task per thread, each encoding its share in turn: pieces are short, and a
        # task per piece would cost more in the executor than in tiktoken.
        share = max(1, -(-len(todo) // COUNT_THREADS))
        parts = [todo[i:i + share] for i in range(0, len(todo), share)]
        for part, counts in zip(parts, pool.map(self._encoded_lengths, parts), strict=True):
            self._known.update(zip(part, counts, strict=True))

    def _encoded_lengths(self, pieces: Sequence[str]) -> list[int]:
        encode = self.encoding.encode_ordinary
        return [len(encode(piece)) for piece in pieces]


def _runs(lines: Sequence[str]) -> list[str]:
    """The lines grouped where joining them would not be cut: a run is one line (the
    caller's own string) unless the next line starts with whitespace, "/" or nothing."""
    runs: list[str] = []
    pending: list[str] = []
    for line in lines:
        if pending and _STARTS_CLEAN.match(line):
            runs.append(pending[0] if len(pending) == 1 else "\n".join(pending))
            pending = []
        pending.append(line)
    if pending:
        runs.append(pending[0] if len(pending) == 1 else "\n".join(pending))
    return runs


def _pieces(text: str) -> list[str]:
    """The text cut after each CLEAN_CUT newline, every piece keeping its own newline."""
    pieces = CLEAN_CUT.split(text)
    return [piece + "\n" for piece in pieces[:-1]] + pieces[-1:]
