"""The at-rest scanner is exact: a value planted anywhere is found at its offset, a
vector split across storage units is found, and the page readers place hits exactly."""

from __future__ import annotations

import sqlite3
import struct

import numpy as np
import pytest
from backend_helpers import EMBED, SECRET, SECRET_VALUE, filler, where
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from membench.backends.at_rest import StatedTexts, _LiveData, needles, stated_needles
from membench.backends.base import LOG, OLD
from membench.backends.pages import (
    DEAD_TUPLE,
    LIVE_CELL,
    UNALLOCATED,
    postgres_region,
    sqlite_free_pages,
    sqlite_region,
)
from membench.backends.scanner import (
    TOKENS,
    VALUE,
    VECTOR,
    VECTOR_PIECE,
    Needle,
    scan,
    scan_many,
    scan_needle,
    value_needles,
    vector_needle,
)
from membench.scenario.model import Deletion, Fact, FactVersion


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=3000), st.binary(max_size=3000))
def test_a_value_planted_anywhere_is_found_at_its_offset(before, after):
    needle = value_needles("k", SECRET_VALUE)[0]
    hits = scan(before + needle.data + after, [needle])
    assert len(before) in [h.offset for h in hits]


@settings(max_examples=40, deadline=None)
@given(st.integers(2 * VECTOR_PIECE - 1, 1536 - 2 * VECTOR_PIECE + 1),
       st.binary(min_size=1, max_size=64))
def test_a_vector_split_across_two_storage_units_is_found(cut, header):
    """A TOAST chunk or overflow page boundary puts other bytes inside the vector."""
    needle = vector_needle("k", EMBED(SECRET))
    split = needle.data[:cut] + header + needle.data[cut:]
    assert scan(split, [needle])


def test_token_sequence_needle_is_the_lowercase_tokens():
    forms = {n.form: n.data for n in value_needles("k", "Alice.Smith@Example.com")}
    assert forms == {VALUE: b"Alice.Smith@Example.com", TOKENS: b"alice smith example com"}


def _sqlite(path, secure: bool = False):
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute(f"PRAGMA secure_delete={'ON' if secure else 'OFF'}")
    connection.execute("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)")
    for i in range(40):
        connection.execute("INSERT INTO t VALUES (?, ?)", (i, filler(i) * 3))
    connection.execute("INSERT INTO t VALUES (100, ?)", (SECRET + " " + "x" * 3000,))
    return connection


def test_planted_in_a_free_page_found_and_placed_on_the_freelist(tmp_path):
    connection = _sqlite(tmp_path / "a.db")
    connection.execute("DELETE FROM t WHERE k = 100")  # its page(s) go to the freelist
    connection.close()
    blob = (tmp_path / "a.db").read_bytes()
    hits = scan(blob, value_needles("phone", SECRET_VALUE))
    assert hits
    page_size = struct.unpack(">H", blob[16:18])[0]
    assert all(h.offset // page_size + 1 in sqlite_free_pages(blob) for h in hits)


def test_secure_delete_zeroes_the_free_page(tmp_path):
    connection = _sqlite(tmp_path / "a.db", secure=True)
    connection.execute("DELETE FROM t WHERE k = 100")
    connection.close()
    assert not scan((tmp_path / "a.db").read_bytes(), value_needles("phone", SECRET_VALUE))


def test_a_deleted_cell_in_a_live_page_is_unallocated_and_a_live_one_is_not(tmp_path):
    connection = sqlite3.connect(tmp_path / "b.db", isolation_level=None)
    connection.execute("PRAGMA secure_delete=OFF")  # some builds default to ON
    connection.execute("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)")
    connection.execute("INSERT INTO t VALUES (1, 'keep this row')")
    connection.execute("INSERT INTO t VALUES (2, ?)", (SECRET,))
    live = (tmp_path / "b.db").read_bytes()
    connection.execute("DELETE FROM t WHERE k = 2")
    connection.close()
    dead = (tmp_path / "b.db").read_bytes()
    needle = value_needles("phone", SECRET_VALUE)[:1]
    assert [sqlite_region(live, h.offset) for h in scan(live, needle)] == [LIVE_CELL]
    assert [sqlite_region(dead, h.offset) for h in scan(dead, needle)] == [UNALLOCATED]


def test_planted_in_the_wal_found_and_placed_in_the_log(tmp_path):
    from membench.backends.sqlite_fts import SqliteBackend

    backend = SqliteBackend(tmp_path / "s", EMBED)
    backend.upsert(1, SECRET)
    try:  # no checkpoint: the row's page is only in the WAL
        blob = (tmp_path / "s/store.db-wal").read_bytes()
        hit = scan(blob, value_needles("phone", SECRET_VALUE))[0]
        assert backend.locate("store.db-wal", blob, hit.offset, True).place == LOG
    finally:
        backend.close()


def test_planted_in_an_old_version_found_and_placed_there(tmp_path):
    from membench.backends.lancedb_store import LanceBackend

    backend = LanceBackend(tmp_path / "l", EMBED)
    try:
        backend.upsert(1, SECRET)
        backend.upsert(1, "user: my phone number changed, no number here")
        assert (VALUE, OLD) in where(backend)
    finally:
        backend.close()


def _heap_page(xmax: int, infomask: int = 0) -> tuple[bytes, int]:
    page = bytearray(8192)
    tuple_at, length = 8000, 120
    struct.pack_into("<HH", page, 12, 28, tuple_at)  # pd_lower, pd_upper
    struct.pack_into("<I", page, 24, tuple_at | (1 << 15) | (length << 17))  # LP_NORMAL
    struct.pack_into("<II", page, tuple_at, 700, xmax)
    struct.pack_into("<H", page, tuple_at + 20, infomask)
    page[tuple_at + 40:tuple_at + 40 + len(SECRET_VALUE)] = SECRET_VALUE.encode()
    return bytes(page), tuple_at + 40


def test_postgres_heap_tuple_live_dead_or_unallocated():
    live, at = _heap_page(xmax=0)
    assert postgres_region(live, at) == LIVE_CELL
    dead, at = _heap_page(xmax=701)
    assert postgres_region(dead, at) == DEAD_TUPLE
    locked, at = _heap_page(xmax=701, infomask=0x0080)  # a row lock is not a delete
    assert postgres_region(locked, at) == LIVE_CELL
    assert postgres_region(live, 4000) == UNALLOCATED



def _needle_strategy():
    alphabet = st.sampled_from([b"\0", b"a", b"b", b"ab", b"\0a", b"\x01\x02\x03"])
    pieces = st.lists(alphabet, min_size=1, max_size=6).map(b"".join)
    values = st.tuples(st.sampled_from(["k1", "k2"]), pieces).map(
        lambda kv: value_needles(kv[0], kv[1].decode("latin-1"))[0])
    vectors = st.lists(st.sampled_from([0.0, 1.0, -2.5, 3e-38]), min_size=70,
                       max_size=140).map(lambda v: vector_needle("k3", np.array(v)))
    return st.one_of(values, vectors)


@pytest.fixture(params=["table", "find"])
def piece_search(request, monkeypatch):
    """Both ways PieceTable searches: the prefix table, or one bytes.find per piece."""
    from membench.backends import scanner

    monkeypatch.setattr(scanner, "FIND_PIECES", 0 if request.param == "table" else 10**6)
    return request.param


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_needle_strategy(), min_size=1, max_size=5),
       st.lists(st.tuples(st.integers(0, 4), st.integers(0, 9)), max_size=8),
       st.binary(max_size=600), st.integers(0, 300))
def test_one_pass_over_many_needles_finds_what_one_find_per_needle_finds(
        piece_search, needles, planted, noise, zeros):
    """scan_many against the reference scan_needle: the same hits in the same order,
    with needles planted whole, as pieces of a vector, overlapping, and in a zero tail."""
    blob = bytearray(noise)
    for which, cut in planted:
        data = needles[which % len(needles)].data
        blob += data[cut * VECTOR_PIECE // 4:] if len(data) > VECTOR_PIECE else data
        blob += noise[:cut]
    blob = bytes(blob) + b"\0" * zeros
    many = scan_many(blob, needles)
    for needle in needles:
        assert many[needle] == scan_needle(blob, needle)


def test_one_pass_over_a_large_file_crosses_its_chunks_exactly(monkeypatch):
    from membench.backends import scanner

    monkeypatch.setattr(scanner, "CHUNK", 1000)
    monkeypatch.setattr(scanner, "FIND_PIECES", 0)  # the table's way, in chunks
    rng = np.random.default_rng(7)
    needles = [vector_needle("v", rng.normal(size=384)), *value_needles("k", SECRET_VALUE)]
    blob = bytearray(rng.integers(0, 256, 50_000, dtype=np.uint8).tobytes())
    for at in (0, 999, 1000, 7_000, 48_000):  # at and across chunk borders
        data = needles[at % 2].data
        blob[at:at + len(data)] = data
    blob = bytes(blob)
    many = scan_many(blob, needles)
    for needle in needles:
        assert many[needle] == scan_needle(blob, needle)
    assert [h.offset for h in many[needles[0]]] == [0, 1_000, 7_000, 48_000]


_WORDS = st.sampled_from(["Node", "20", "node", "Rust", "Go", "1.22", "Berlin", "x", "the"])
_VALUE = st.lists(_WORDS, min_size=1, max_size=2).map(" ".join)


def _fact(key: str, values: list[str], deleted: bool) -> Fact:
    versions = tuple(FactVersion(day=i + 1, slot=0, value=v, statement=f"my {key} is {v}")
                     for i, v in enumerate(values))
    deletion = Deletion(day=len(values) + 1, slot=0, request="forget it") if deleted else None
    return Fact(key, f"What is my {key}?", f"Which {key}?", versions, deletion)


@given(st.lists(st.tuples(st.lists(_VALUE, min_size=1, max_size=3), st.booleans()),
                min_size=1, max_size=4),
       st.lists(st.lists(_WORDS, max_size=6).map(" ".join), max_size=12))
@settings(max_examples=150, deadline=None)
def test_needles_kept_as_texts_arrive_equal_needles_over_every_text(facts, texts):
    """StatedTexts fed text by text (repeats included) gives needles()' needles."""
    made = [_fact(f"k{i}", values, deleted) for i, (values, deleted) in enumerate(facts)]
    deleted = [f for f in made if f.deleted_at is not None]
    stated = StatedTexts(made).empty()
    held: dict[str, None] = {}
    for text in texts:
        if text not in held:
            held[text] = None
            stated.add(text)
    assert stated_needles(deleted, stated, EMBED) == needles(deleted, held, EMBED)


def _live_reference(needle, live_texts, live_vectors) -> bool:
    if needle.form == VECTOR:
        return needle.data in live_vectors
    return any(needle.data.decode() in text.lower() or needle.data.decode() in text
               for text in live_texts)


@given(st.lists(st.text(alphabet="aAbB \0İ", max_size=8), max_size=6),
       st.lists(st.text(alphabet="aAbB \0İ", min_size=1, max_size=3), min_size=1,
                max_size=6))
@settings(max_examples=200, deadline=None)
def test_live_lookup_in_joined_texts_equals_a_search_of_each_text(live_texts, values):
    """A needle spanning two live texts must not count as live; one with a NUL neither."""
    vectors = {vector_needle("", EMBED(t)).data for t in live_texts}
    live = _LiveData(live_texts, vectors)
    wanted = [Needle("k", VALUE, v.encode()) for v in values]
    wanted += [vector_needle("k", EMBED(t)) for t in live_texts[:1] + ["gone"]]
    for needle in wanted:
        assert live(needle) == _live_reference(needle, live_texts, vectors)


@pytest.mark.parametrize("block, overlap", [(64, 300), (97, 8), (1 << 20, 4096)])
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_needle_strategy(), min_size=1, max_size=5),
       st.lists(st.tuples(st.integers(0, 4), st.integers(0, 9), st.integers(0, 2000)),
                max_size=8),
       st.binary(max_size=600), st.integers(0, 300), st.data())
def test_the_cache_by_blocks_finds_what_a_scan_of_the_whole_file_finds(
        monkeypatch, piece_search, block, overlap, needles, planted, noise, zeros, data):
    """Files that change between audits (planted needles moved, bytes overwritten) and
    needle sets that grow, scanned through one cache: scan()'s hits every time. Small
    blocks put needles across block borders; a small overlap sends vectors' pieces the
    whole-file way."""
    from membench.backends import scan_cache

    monkeypatch.setattr(scan_cache, "BLOCK", block)
    monkeypatch.setattr(scan_cache, "OVERLAP", overlap)
    cache = scan_cache.ScanCache()
    blob = bytearray(noise)
    for which, cut, _ in planted:
        data_ = needles[which % len(needles)].data
        blob += data_[cut * VECTOR_PIECE // 4:] if len(data_) > VECTOR_PIECE else data_
        blob += noise[:cut]
    blob += b"\0" * zeros
    for day in range(3):
        wanted = tuple(needles[:1 + day * 2])
        assert cache.scan(bytes(blob), wanted) == scan(bytes(blob), wanted)
        # the next day: some bytes overwritten, a needle planted somewhere else
        at = data.draw(st.integers(0, max(len(blob) - 1, 0)))
        blob[at:at + 3] = b"xyz"
        blob += needles[day % len(needles)].data
