import pytest


@pytest.fixture(scope="session")
def minilm():
    """all-MiniLM-L6-v2 loaded once per session. The model is a declared dependency, so a
    missing install fails these tests instead of skipping them."""
    from membench.retrieval.embedding import DEFAULT_MODEL_ID, load_model

    return load_model(DEFAULT_MODEL_ID)
