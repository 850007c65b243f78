"""LanceDB, an embedded vector database: one Lance table (key, text, vector) in a
directory of versioned fragments. Chosen over Chroma by measured install cost on this
machine: lancedb==0.40.0 installs in 47 s to 472 MB with 21 packages, sharing membench's
pinned pyarrow and numpy; chromadb==1.5.9 takes 78 s, 517 MB, 88 packages (onnxruntime,
grpc, kubernetes) and downloads its default embedding model unless given vectors.

Every write makes a new version: a delete writes a deletion file and keeps the row in
its fragment, so old versions hold the bytes (as time travel needs). Vector search is
LanceDB's brute-force kNN (float32 cosine; no ANN index at this size). Remedies, from
LanceDB's documentation: Table.optimize() (compaction: fragments rewritten without
deleted rows; old versions younger than its default 7 days kept), and optimize() with
cleanup_older_than=0 (old versions' files deleted too). A cleanup without compaction
(cleanup_old_versions) needs the pylance package, which this extra does not install.
"""

from __future__ import annotations

import shutil
import warnings
from datetime import timedelta
from pathlib import Path

import numpy as np

from membench.backends.base import (
    BACKENDS,
    INDEX,
    LIVE,
    NO_REMEDY,
    OLD,
    Embed,
    Located,
    StoreBackend,
)
from membench.retrieval.retrievers import Document

COMPACT, BOTH = "optimize", "optimize+cleanup_old_versions"
TABLE = "memory"


class LanceBackend(StoreBackend):
    semantic = "LanceDB kNN (float32 cosine, brute force)"
    remedies = (COMPACT, BOTH)
    relative_cost = 55.0
    reads_write = False  # reads and searches open versions; only writes make files
    forks = True

    def __init__(self, directory: Path, embed: Embed, remedy: str = NO_REMEDY, *,
                 existing: bool = False) -> None:
        super().__init__(directory, embed, remedy)
        import lancedb  # the `stores` extra
        import pyarrow as pa

        self.dims = embed.dims
        self.schema = pa.schema([
            pa.field("key", pa.int64(), nullable=False),
            pa.field("text", pa.string(), nullable=False),
            pa.field("vector", pa.list_(pa.float32(), self.dims), nullable=False),
        ])
        self.database = lancedb.connect(directory)
        self.table = (self.database.open_table(TABLE) if existing else
                      self.database.create_table(TABLE, schema=self.schema))

    def fork(self, directory, remedy):
        shutil.copytree(self.directory, directory, dirs_exist_ok=True)
        return type(self)(directory, self.embed, remedy, existing=True)

    def upsert(self, key, text):
        import pyarrow as pa

        row = pa.table({"key": [key], "text": [text],
                        "vector": [np.asarray(self.embed(text), dtype=np.float32)]},
                       schema=self.schema)
        (self.table.merge_insert("key").when_matched_update_all()
         .when_not_matched_insert_all().execute(row))

    def delete(self, key):
        self.table.delete(f"key = {int(key)}")

    def documents(self):
        rows = self.table.to_arrow().select(["key", "text"]).to_pylist()
        return sorted((Document(r["key"], r["text"]) for r in rows), key=lambda d: d.source)

    def vector_search(self, question, k):
        if self.table.count_rows() == 0:
            return []
        query = np.asarray(self.embed(question), dtype=np.float32)
        found = self.table.search(query).distance_type("cosine").limit(k).to_list()
        return [int(row["key"]) for row in
                sorted(found, key=lambda row: (row["_distance"], row["key"]))]

    def apply_remedy(self):
        if self.remedy == COMPACT:  # old versions younger than 7 days (the default) stay
            self.table.optimize()
        if self.remedy == BOTH:
            with warnings.catch_warnings():  # "removes every version except the latest"
                warnings.simplefilter("ignore", UserWarning)
                self.table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)

    def locate(self, relative, blob, offset, live) -> Located:
        """A fragment holds live rows while the value is live; after its delete, the row
        stays in the fragment for earlier versions (old versions). Index files: index."""
        name = relative.split("/")[-2] if "/" in relative else relative
        if "/_indices/" in f"/{relative}":
            return Located(INDEX, name)
        return Located(LIVE if live else OLD, name)


BACKENDS.add("lancedb", LanceBackend, order=40)
