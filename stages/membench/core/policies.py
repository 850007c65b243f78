"""Memory policies: what each keeps and what it injects for a question.

A policy is one small class registered with @register_policy; it names the stores it
keeps (for stored-token counts and the deletion audit) and builds its injection from
a Memory. Registration order is the report's row order.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from membench.core.memory import PLAIN, STEMMED, Document, Memory


@dataclass(frozen=True)
class PolicySettings:
    window_exchanges: int = 20
    retrieval_top_k: int = 5
    hybrid_top_k: int = 3


@dataclass(frozen=True)
class Injection:
    lines: tuple[str, ...]
    retrieved: tuple[int, ...] | None = None  # exchange indices, for retrieval policies

    @property
    def context(self) -> str:
        return "\n".join(self.lines)


class Policy(ABC):
    id: ClassVar[str]
    label: ClassVar[str]
    stores: ClassVar[tuple[str, ...]]  # every store the policy keeps
    retrieves_from: ClassVar[tuple[str, ...]] = ()  # stores it builds a search index over

    def __init__(self, settings: PolicySettings) -> None:
        self.settings = settings

    @abstractmethod
    def inject(self, memory: Memory, question: str) -> Injection: ...


POLICIES: dict[str, type[Policy]] = {}


def register_policy(cls: type[Policy]) -> type[Policy]:
    if cls.id in POLICIES:
        raise ValueError(f"policy id {cls.id!r} registered twice")
    POLICIES[cls.id] = cls
    return cls


def _all(memory: Memory, store: str) -> Injection:
    return Injection(tuple(memory.lines(store)))


def _retrieved(documents: list[Document], prefix: tuple[str, ...] = ()) -> Injection:
    return Injection(prefix + tuple(d.text for d in documents),
                     tuple(d.source for d in documents))


@register_policy
class SessionBuffer(Policy):
    id, label, stores = "session_buffer", "session buffer only", ("session",)

    def inject(self, memory, question):
        return _all(memory, "session")


@register_policy
class FullTranscript(Policy):
    id, label, stores = "full_transcript", "full transcript, every session", ("transcript",)

    def inject(self, memory, question):
        return _all(memory, "transcript")


@register_policy
class LastExchanges(Policy):
    id, stores = "last_n_exchanges", ("transcript",)

    @property
    def label(self):
        return f"last {self.settings.window_exchanges} exchanges across sessions"

    def inject(self, memory, question):
        return Injection(tuple(memory.lines("transcript")[-self.settings.window_exchanges:]))


@register_policy
class FactLog(Policy):
    id, label, stores = "fact_log", "fact log, append-only, all injected", ("fact_log",)

    def inject(self, memory, question):
        return _all(memory, "fact_log")


@register_policy
class Profile(Policy):
    id, label, stores = "profile", "profile, upsert + delete, all injected", ("profile",)

    def inject(self, memory, question):
        return _all(memory, "profile")


class _Retrieval(Policy):
    """Top-k search over one store, optionally after the whole profile."""

    corpus: ClassVar[str]
    search: ClassVar[str] = "bm25"  # bm25, bm25_stemmed, dense or hybrid
    with_profile: ClassVar[bool] = False
    _describes: ClassVar[str]

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "corpus" in cls.__dict__:
            cls.retrieves_from = (cls.corpus,)

    @property
    def top_k(self) -> int:
        s = self.settings
        return s.hybrid_top_k if self.with_profile else s.retrieval_top_k

    @property
    def label(self):
        return self._describes.format(k=self.top_k)

    def inject(self, memory, question):
        prefix = tuple(memory.lines("profile")) if self.with_profile else ()
        k = self.top_k
        if self.search == "dense":
            found = memory.retrieve_dense(self.corpus, question, k)
        elif self.search == "hybrid":
            found = memory.retrieve_fused(self.corpus, question, k)
        else:
            found = memory.retrieve(self.corpus, question, k, lexical_index_analyzer(self))
        return _retrieved(found, prefix)


@register_policy
class Bm25Transcript(_Retrieval):
    id, stores, corpus = "bm25_transcript", ("transcript",), "transcript"
    _describes = "BM25 top-{k} over transcript"


@register_policy
class Bm25FactLog(_Retrieval):
    id, stores, corpus = "bm25_fact_log", ("fact_log",), "fact_log"
    _describes = "BM25 top-{k} over fact log"


@register_policy
class ProfileBm25(_Retrieval):
    id, stores, corpus, with_profile = "profile_bm25", ("profile", "transcript"), "transcript", True
    _describes = "profile + BM25 top-{k} over transcript"


@register_policy
class ProfileBm25Redacted(_Retrieval):
    id, corpus, with_profile = "profile_bm25_redacted", "transcript_redacted", True
    stores = ("profile", "transcript_redacted")
    _describes = "profile + BM25 top-{k}, deletes redacted"


@register_policy
class ProfileBm25Unextracted(_Retrieval):
    id, corpus, with_profile = "profile_bm25_unextracted", "transcript_unextracted", True
    stores = ("profile", "transcript_unextracted")
    _describes = "profile + BM25 top-{k}, facts not indexed"


# ---- beyond the article: stemming, dense embeddings, and their fusion ----------------


@register_policy
class Bm25StemmedTranscript(_Retrieval):
    id, stores, corpus, search = "bm25_stemmed_transcript", ("transcript",), "transcript", \
        "bm25_stemmed"
    _describes = "BM25 stemmed top-{k} over transcript"


@register_policy
class DenseTranscript(_Retrieval):
    id, stores, corpus, search = "dense_transcript", ("transcript",), "transcript", "dense"
    _describes = "dense top-{k} over transcript"


@register_policy
class DenseFactLog(_Retrieval):
    id, stores, corpus, search = "dense_fact_log", ("fact_log",), "fact_log", "dense"
    _describes = "dense top-{k} over fact log"


@register_policy
class ProfileDenseUnextracted(_Retrieval):
    id, corpus, search, with_profile = ("profile_dense_unextracted", "transcript_unextracted",
                                        "dense", True)
    stores = ("profile", "transcript_unextracted")
    _describes = "profile + dense top-{k}, facts not indexed"


@register_policy
class HybridTranscript(_Retrieval):
    id, stores, corpus, search = "hybrid_transcript", ("transcript",), "transcript", "hybrid"
    _describes = "BM25 + dense RRF top-{k} over transcript"


@register_policy
class ProfileHybridUnextracted(_Retrieval):
    id, corpus, search, with_profile = ("profile_hybrid_unextracted", "transcript_unextracted",
                                        "hybrid", True)
    stores = ("profile", "transcript_unextracted")
    _describes = "profile + RRF top-{k}, facts not indexed"


# What each kind of search needs: embeddings, and a BM25 index (plain or stemmed).
EMBEDDING_SEARCHES = frozenset({"dense", "hybrid"})
BM25_SEARCHES = frozenset({"bm25", "bm25_stemmed", "hybrid"})
PLAIN_BM25_SEARCHES = frozenset({"bm25", "hybrid"})


def _search(policy: Policy | type[Policy]) -> str | None:
    return getattr(policy, "search", None)


def needs_embeddings(policy: Policy) -> bool:
    return _search(policy) in EMBEDDING_SEARCHES


def policy_needs_embeddings(policy_id: str) -> bool:
    return _search(POLICIES[policy_id]) in EMBEDDING_SEARCHES


def lexical_index_stores(policy: Policy) -> tuple[str, ...]:
    """Stores the policy keeps a BM25 term dictionary for (dense-only policies keep none)."""
    return policy.retrieves_from if _search(policy) in BM25_SEARCHES else ()


def lexical_index_analyzer(policy: Policy) -> str:
    """The analyzer of the policy's BM25 index: its token sequences are stemmed or plain."""
    return STEMMED if _search(policy) == "bm25_stemmed" else PLAIN


def build_policies(settings: PolicySettings,
                   only: Callable[[str], bool] = lambda _: True) -> list[Policy]:
    return [cls(settings) for policy_id, cls in POLICIES.items() if only(policy_id)]


def retrieval_corpora(policies: list[Policy]) -> list[str]:
    """The stores some policy searches with plain BM25, which the index stage tokenizes."""
    seen: dict[str, None] = {}
    for policy in policies:
        if _search(policy) in PLAIN_BM25_SEARCHES:
            for store in policy.retrieves_from:
                seen[store] = None
    return list(seen)


def dense_corpora(policies: list[Policy]) -> list[str]:
    """The stores some policy searches by embedding, which the embed stage must embed."""
    return list(dict.fromkeys(store for policy in policies if needs_embeddings(policy)
                              for store in policy.retrieves_from))
