"""Recency-aware readers: the article's advice that a stored line carries its date so the
newest can win, as policies. A reader takes what a base policy would inject (the whole fact
log, or a retriever's top-k), groups the lines judged to be about the same thing, and keeps
only the newest line of each group:
- by record key: lines the extractor filed under one key (the fact log's records);
- by similarity: lines whose user words overlap (stemmed content-word Dice) at or above
  `policies.same_topic_threshold` (transcript lines carry no key).
A right grouping turns a conflict into a current answer; a wrong one (two facts judged one,
or a question judged the same as a statement) drops a line that held a current value."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from weakref import WeakKeyDictionary

from membench.extraction.similarity import content_words, lexical
from membench.memory.policies import Injection, Policy, PolicySettings, register_policy
from membench.memory.stores import Document, Memory

RECORD_KEY, SIMILARITY = "record_key", "similarity"


@dataclass(frozen=True)
class RecencyReader:
    """A recency reader as data: the store it reads, the retriever (None: every line),
    how lines are grouped, and the policy it refines (the report compares the two)."""

    id: str
    store: str
    retriever: str | None
    grouping: str  # RECORD_KEY or SIMILARITY
    base: str  # the policy id whose injection this reader filters
    describes: str  # the label, with {k} for the top-k

    def __call__(self, settings: PolicySettings) -> Policy:
        return _Reader(self, settings)


class _Reader(Policy):
    def __init__(self, declared: RecencyReader, settings: PolicySettings) -> None:
        super().__init__(settings)
        self.declared = declared
        self.id = declared.id
        self.label = declared.describes.format(k=settings.retrieval_top_k)
        self.stores = (declared.store,)
        self.searches = ((declared.store, declared.retriever),) if declared.retriever else ()
        self._memos()

    def _memos(self) -> None:
        """Per day's memory, for as long as it lives: a memo holding the memory itself kept
        a whole day's stores alive after their unit, and travelled with the policy."""
        self._whole_store: WeakKeyDictionary[Memory, Injection] = WeakKeyDictionary()
        self._speakers: WeakKeyDictionary[Memory, dict[int, str]] = WeakKeyDictionary()

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("_whole_store", "_speakers")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._memos()

    def inject(self, memory: Memory, question: str) -> Injection:
        d = self.declared
        threshold = Fraction(str(self.settings.same_topic_threshold))
        if d.retriever is None:  # the same for every question of the day: once per memory
            if memory not in self._whole_store:
                kept = newest_per_group(memory, memory.documents(d.store), d.grouping,
                                        threshold, self._user_turns(memory))
                self._whole_store[memory] = Injection(tuple(doc.text for doc in kept), None)
            return self._whole_store[memory]
        documents = memory.search(d.store, d.retriever, question,
                                  self.settings.retrieval_top_k)
        kept = newest_per_group(memory, documents, d.grouping, threshold,
                                self._user_turns(memory))
        return Injection(tuple(doc.text for doc in kept), tuple(doc.source for doc in kept))

    def _user_turns(self, memory: Memory) -> dict[int, str] | None:
        """Exchange index -> user turn, once per day's memory (a shared store of many
        users holds a million exchanges; a probe retrieves a few); None where the
        grouping reads no words."""
        if self.declared.grouping == RECORD_KEY:
            return None
        if memory not in self._speakers:
            self._speakers[memory] = user_turns(memory)
        return self._speakers[memory]


def user_turns(memory: Memory) -> dict[int, str]:
    return {e.index: e.user for e in memory.exchanges}


def newest_per_group(memory: Memory, documents: list[Document], grouping: str,
                     threshold: Fraction, users: dict[int, str] | None = None
                     ) -> list[Document]:
    """The documents minus every one a newer document of its group supersedes, in their
    original order. Newer: a later exchange (every line carries its day). users: the
    memory's user_turns, if already built."""
    if grouping == RECORD_KEY:
        return _newest_per_key(memory, documents)
    users = user_turns(memory) if users is None else users
    words = {d.source: content_words(users.get(d.source, d.text)) for d in documents}
    return [d for d in documents
            if not any(o.source > d.source and
                       lexical(words[d.source], words[o.source]) >= threshold
                       for o in documents)]


def _newest_per_key(memory: Memory, documents: list[Document]) -> list[Document]:
    """Linear: the whole fact log is read at every probe (thousands of lines on a long
    story). A line filed under no key is never superseded."""
    keys = {r.exchange_index: r.key for r in memory.records}
    newest: dict[str, int] = {}
    for d in documents:
        if d.source in keys:
            key = keys[d.source]
            newest[key] = max(newest.get(key, d.source), d.source)
    return [d for d in documents if d.source not in keys or newest[keys[d.source]] == d.source]


for _order, _reader in ((165, RecencyReader(
        "fact_log_latest", "fact_log", None, RECORD_KEY, "fact_log",
        "fact log, newest line per record key")),
        (166, RecencyReader(
        "bm25_transcript_latest", "transcript", "bm25", SIMILARITY, "bm25_transcript",
        "BM25 top-{k} over transcript, newest of similar lines"))):
    register_policy(order=_order)(_reader)
