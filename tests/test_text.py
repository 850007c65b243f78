import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from membench.scenario.text import LoweredLines, has, has_words, lowered, tokens


def test_tokens_are_lowercase_letter_digit_runs():
    assert tokens("We moved production to eu-central-1; Node_24!") == [
        "we", "moved", "production", "to", "eu", "central", "1", "node", "24"]


def test_node_20_does_not_match_node_204():
    assert has("Services run on Node 20.", "Node 20")
    assert not has("Services run on Node 204.", "Node 20")
    assert not has("Services run on Node 2.0", "Node 20")
    assert not has("xNode 20", "Node 20")


def test_whole_token_sequence_spans_punctuation_and_case():
    assert has("phone: +44 7700-900123", "+44 7700 900123")
    assert has("NEW_CHECKOUT = false", "NEW_CHECKOUT=false")
    assert not has("NEW_CHECKOUT=falsey", "NEW_CHECKOUT=false")
    assert has("branch RELEASE/2026.3 cut", "release/2026.3")
    assert not has("release/2026.33", "release/2026.3")


def _sublist(needle: list[str], haystack: list[str]) -> bool:
    n = len(needle)
    return any(haystack[i:i + n] == needle for i in range(len(haystack) - n + 1))


words = st.text(alphabet="ab1 -./", min_size=0, max_size=30)


@given(text=words, value=words.filter(lambda v: tokens(v)))
def test_has_equals_token_sublist(text, value):
    assert has(text, value) == _sublist(tokens(value), tokens(text)) == has_words(text, value)


def test_has_words_is_has_on_the_edge_cases():
    for text, value in [("Services run on Node 20.", "Node 20"), ("Node 204", "Node 20"),
                        ("Node 2.0", "Node 20"), ("xNode 20", "Node 20"),
                        ("NEW_CHECKOUT=falsey", "NEW_CHECKOUT=false"), ("a b a b c", "b c"),
                        ("ends with a b", "a b c"), ("ΣΑΣ σας", "σας"), ("İstanbul", "i̇stanbul")]:
        assert has_words(text, value) == has(text, value), (text, value)
    with pytest.raises(ValueError, match="no letters or digits"):
        has_words("text", "--")


# Capital sigma lowercases by its neighbours (final or not), skipping case-ignorable marks
# and apostrophes; dotted capital I grows to two characters; the rest is ordinary text.
_CASING = ["\u03a3", "\u03a3", "\u0391", "\u03b1", "\u0301", "'", ".", "\u0130", "A", "b",
           "\u00df", " ", "\n", "\n", "\n\u03a3", "\u03a3\n", "1", "\u00c9"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_CASING), max_size=80).map("".join),
       st.integers(min_value=1, max_value=8))
def test_lowercasing_a_chunk_at_a_time_is_lowercasing_the_whole(text, chunk):
    assert lowered(text, chunk) == text.lower()


# Characters above U+00FF of every kind (letters, a digit, a mark, punctuation, a space),
# the narrowed text's own stand-ins, and ordinary text around them.
_WIDE = ["\u65e5", "\u0436", "\u0416", "\u0663", "\u0301", "\u2014", "\u3000", "\u00aa", "\x00",
         "\u03a3", "\u0130", "\u00e9", "a", "b", "1", " ", "-", "_", "/"]
_VALUES = st.lists(st.sampled_from(["\u65e5", "\u0436", "\u00aa", "\u00e9", "a", "b", "1"]),
                   min_size=1, max_size=3).map("".join)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_WIDE), max_size=12).map("".join), max_size=5),
       st.lists(st.lists(_VALUES, min_size=1, max_size=2).map(" ".join), min_size=1,
                max_size=4))
def test_the_narrowed_lowercased_lines_find_what_the_whole_text_does(lines, values):
    text = LoweredLines(lines)
    assert [text.has(value) for value in values] == [
        has("\n".join(lines), value) for value in values]
