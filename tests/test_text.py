from hypothesis import given
from hypothesis import strategies as st

from membench.scenario.text import has, tokens


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
    assert has(text, value) == _sublist(tokens(value), tokens(text))
