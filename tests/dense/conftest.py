import pytest


@pytest.fixture(scope="session")
def minilm():
    """all-MiniLM-L6-v2 loaded once per session; tests using it skip if not installed."""
    from membench.embedding import DEFAULT_MODEL_ID, ModelUnavailableError, load_model

    try:
        return load_model(DEFAULT_MODEL_ID)
    except ModelUnavailableError as error:
        pytest.skip(str(error))
