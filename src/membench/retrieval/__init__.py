"""Retrievers over a store's documents: BM25, stemmed BM25, dense MiniLM, fusion."""
