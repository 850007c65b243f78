"""Word tokens shared by BM25 indexing and probe scoring.

One definition of a word keeps retrieval and scoring consistent: a word is a
maximal run of Unicode letters or digits, lowercased. No stemming, no stopwords.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

_WORD = re.compile(r"[^\W_]+")
_SEPARATOR = r"[\W_]+"
_LEFT_EDGE_AFTER = r"(?<![^\W_][\s\S]{{{width}}})"  # no word character before the match
_RIGHT_EDGE = r"(?![^\W_])"


def tokens(text: str) -> list[str]:
    """Lowercase runs of letters and digits, in order."""
    return _WORD.findall(text.lower())


@lru_cache(maxsize=4096)
def _sequence_pattern(value: str) -> re.Pattern[str]:
    words = tokens(value)
    if not words:
        raise ValueError(f"value {value!r} has no letters or digits to match")
    # The pattern starts with the first word as a literal so the regex engine can skip to
    # its occurrences (a leading lookbehind made every search scan position by position,
    # 50x slower on a full transcript); the left edge is checked behind that word instead.
    # LoweredLines.narrow relies on the pattern reading a character only as a literal of
    # the words or through the word / non-word / any-character classes below.
    first, rest = words[0], "".join(_SEPARATOR + re.escape(word) for word in words[1:])
    left_edge = _LEFT_EDGE_AFTER.format(width=len(first))
    return re.compile(re.escape(first) + left_edge + rest + _RIGHT_EDGE)


LOWER_CHUNK = 1 << 20  # characters lowercased at once in a long text


def lowered(text: str, chunk: int = LOWER_CHUNK) -> str:
    """text.lower(), a chunk at a time: CPython lowercases a text that is not ASCII
    through a buffer of 12 bytes per character (a 200-million-character transcript: 2.4 GB
    at once). The text is cut only after a newline, where lowercasing's one rule that
    reads context (Greek final sigma: the letters around a capital sigma, skipping
    case-ignorable ones) stops looking, so the result is the same string."""
    if len(text) <= chunk or text.isascii():
        return text.lower()
    parts, start = [], 0
    while start < len(text):
        cut = text.find("\n", start + chunk)
        end = len(text) if cut < 0 else cut + 1
        parts.append(text[start:end].lower())
        start = end
    return "".join(parts)


# Contexts are classified against several values each; lowercase each text once. A few
# entries are enough (a text's values are checked one after another); more kept every
# probe day's lowercased transcript alive (a 10,000-session bench peaked 0.5 GB higher).
_lowercase = lru_cache(maxsize=4)(lowered)


def has(text: str, value: str) -> bool:
    """True when value's words occur in text as a consecutive whole-word sequence.

    "Node 20" matches "on Node 20." but not "Node 204" or "Node 2.0".
    """
    return has_lowered(_lowercase(text), value)


def has_words(text: str, value: str) -> bool:
    """`has`, for a value checked once against a short text (a scenario file's
    statements): value's words as a run of the text's words, with no pattern compiled
    (a generated 10-user story's 15,000 values took about 3 s to compile)."""
    words = tokens(value)
    if not words:
        raise ValueError(f"value {value!r} has no letters or digits to match")
    found, count = tokens(text), len(words)
    return any(found[i:i + count] == words
               for i, word in enumerate(found[:len(found) - count + 1]) if word == words[0])


def has_lowered(lowered_text: str, value: str) -> bool:
    """`has` on a text already lowercased (`lowered`)."""
    return _sequence_pattern(value).search(lowered_text) is not None


# What a character above U+00FF becomes in LoweredLines.narrow: a word character that no
# value may hold, or a character that is not a word character.
_NARROW_WORD, _NARROW_OTHER = 0xAA, 0x00  # "ª", NUL
_WORD_CHARACTER = re.compile(r"[^\W_]")


class _Narrowing(dict):
    def __missing__(self, code: int) -> int:
        # Latin-1 maps to itself, stored like the rest: str.translate then finds every
        # character it has seen in the dict, with no Python call per character.
        self[code] = code if code <= 0xFF else (
            _NARROW_WORD if _WORD_CHARACTER.match(chr(code)) else _NARROW_OTHER)
        return self[code]


_NARROWING = _Narrowing()


@lru_cache(maxsize=4096)
def _narrow_safe(value: str) -> bool:
    """Can `value` be looked for in a narrowed text: its words are Latin-1, without "ª"."""
    words = "".join(tokens(value))
    return max(words, default="\0") <= "\xff" and chr(_NARROW_WORD) not in words


class LoweredLines:
    """A text given as its lines, lowercased once for `has`, at one byte per character.

    A transcript with a single character above U+00FF joins into a string of two bytes per
    character (a 30,000-session transcript: 1.3 GB lowercased). `has`'s pattern reads a
    character only as a literal of the value's words or through its word, non-word and
    any-character classes: in `narrow`, each character above U+00FF is replaced, one for
    one, by a Latin-1 character of the same kind that no value this text is searched for
    holds, which finds exactly the same matches. A value whose words are not
    Latin-1 (or hold the stand-in "ª") is looked for in the exact lowercased text, built
    then. Lines are lowercased one by one: lowercasing reads no context across a newline."""

    def __init__(self, lines: Sequence[str]) -> None:
        self._lines = lines
        parts, self._replaced = [], False
        for line in lines:
            low = lowered(line)
            if not low.isascii() and max(low) > "\xff":
                low, self._replaced = low.translate(_NARROWING), True
            parts.append(low)
        self.narrow = "\n".join(parts)
        self._exact: str | None = None

    def has(self, value: str) -> bool:
        if not self._replaced or _narrow_safe(value):
            return has_lowered(self.narrow, value)
        if self._exact is None:
            self._exact = "\n".join(map(lowered, self._lines))
        return has_lowered(self._exact, value)


class ValueFinder:
    """Which of many values a text holds, with `has`'s matching in one pass over the text.

    `has` runs one regex per value; a deployment of many users holds thousands of values
    and every filler window and injected line is checked against all of them. A value
    occurs in a text exactly when its word tokens occur there consecutively (what `has`'s
    pattern matches), so the text is tokenized once and, at each word, the runs of words
    starting there are looked up, one per length some value starting with that word has
    (not one per value: thousands of values may start with "Node").
    """

    def __init__(self, values) -> None:
        self.values: tuple[str, ...] = tuple(values)
        self._numbers: dict[tuple[str, ...], list[int]] = {}  # words -> values with them
        lengths: dict[str, set[int]] = {}
        for number, value in enumerate(self.values):
            words = tuple(tokens(value))
            if not words:
                raise ValueError(f"value {value!r} has no letters or digits to match")
            self._numbers.setdefault(words, []).append(number)
            lengths.setdefault(words[0], set()).add(len(words))
        self._lengths = {first: sorted(found) for first, found in lengths.items()}

    def found(self, text: str) -> set[int]:
        """Positions in `values` of every value the text holds."""
        words = tokens(text)
        hits: set[int] = set()
        for i, word in enumerate(words):
            for length in self._lengths.get(word, ()):
                numbers = self._numbers.get(tuple(words[i:i + length]))
                if numbers is not None:
                    hits.update(numbers)
        return hits

    def holds_any(self, text: str) -> bool:
        return bool(self.found(text))
