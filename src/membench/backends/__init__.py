"""Real memory stores: each backend module keeps one membench store in a real database
(SQLite, sqlite-vec, LangGraph's stores, PostgreSQL, LanceDB) behind StoreBackend.

The backends need the optional extra `pip install -e '.[stores]'`; importing this package
does not import any of them (membench.backends.catalog does, one module at a time).
"""
