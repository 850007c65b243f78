import gzip

import pytest
from tiktoken_ext import openai_public

from membench.core.tokenizer import (
    O200K_PAT_STR,
    O200K_SPECIAL_TOKENS,
    TokenCounter,
    VocabularyError,
    build_encoding,
)
from membench.vocabulary import load_token_counter, packaged_vocabulary_path, read_vocabulary


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    return load_token_counter()


def test_pattern_and_specials_match_tiktoken_ext(monkeypatch):
    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda *a, **k: {})
    definition = openai_public.o200k_base()
    assert definition["pat_str"] == O200K_PAT_STR
    assert definition["special_tokens"] == O200K_SPECIAL_TOKENS


def test_known_counts(counter):
    assert counter.count("") == 0
    assert counter.count("Hello world") == 2
    assert counter.encoding.encode_ordinary("Services run on Node 20.") == \
        counter.encoding.encode_ordinary("Services run on Node 20.")


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
