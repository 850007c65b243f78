"""Extractors: fact records (upserts and deletes) made from the conversation."""
