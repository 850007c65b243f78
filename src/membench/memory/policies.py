"""Memory policies: what each keeps and what it injects for a question.

A policy is a factory in POLICIES: settings in, a Policy out. One that builds its
injection itself is a small class; a retrieval policy is data (a RetrievalPolicy: store,
retriever, k setting, with or without the profile). Each is registered with an explicit
order, which is the report's row order; plugins (membench.plugins) add more the same way.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields

from membench.memory.stores import Document, Memory
from membench.registry import Registry
from membench.retrieval.retrievers import PLAIN, RETRIEVERS, Retriever


@dataclass(frozen=True)
class PolicySettings:
    """params.yaml `policies` (the values live only there)."""

    window_exchanges: int
    retrieval_top_k: int
    hybrid_top_k: int
    same_topic_threshold: float  # recency readers: lines this alike are one topic


@dataclass(frozen=True)
class Injection:
    lines: tuple[str, ...]
    retrieved: tuple[int, ...] | None = None  # exchange indices, for retrieval policies
    # The whole of this store: the bench takes its text from Memory.text(store), built once
    # a day and only where a context is kept, and classifies it by Memory.lowered(store).
    store: str | None = None

    @property
    def context(self) -> str:
        return "\n".join(self.lines)


class Policy(ABC):
    id: str
    label: str
    stores: tuple[str, ...]  # every store the policy keeps
    # (store, retriever name) for every search the policy runs: what it indexes or embeds
    searches: tuple[tuple[str, str], ...] = ()

    def __init__(self, settings: PolicySettings) -> None:
        self.settings = settings

    @abstractmethod
    def inject(self, memory: Memory, question: str) -> Injection: ...


PolicyFactory = Callable[[PolicySettings], Policy]  # a Policy class or a RetrievalPolicy
POLICIES: Registry[PolicyFactory] = Registry("policy")


def register_policy(*, order: float) -> Callable[[PolicyFactory], PolicyFactory]:
    """Registers a factory under its `id`; `order` places its row in every table."""
    return lambda factory: POLICIES.add(factory.id, factory, order=order)


def _all(memory: Memory, store: str) -> Injection:
    """The whole store; every probe of the day shares one joined text (Memory.text)."""
    return Injection(tuple(memory.lines(store)), store=store)


def _retrieved(documents: list[Document], prefix: tuple[str, ...] = ()) -> Injection:
    return Injection(prefix + tuple(d.text for d in documents),
                     tuple(d.source for d in documents))


@register_policy(order=10)
class SessionBuffer(Policy):
    id, label, stores = "session_buffer", "session buffer only", ("session",)

    def inject(self, memory, question):
        return _all(memory, "session")


@register_policy(order=20)
class FullTranscript(Policy):
    id, label, stores = "full_transcript", "full transcript, every session", ("transcript",)

    def inject(self, memory, question):
        return _all(memory, "transcript")


@register_policy(order=30)
class LastExchanges(Policy):
    id, stores = "last_n_exchanges", ("transcript",)

    @property
    def label(self):
        return f"last {self.settings.window_exchanges} exchanges across sessions"

    def inject(self, memory, question):
        return Injection(tuple(memory.lines("transcript")[-self.settings.window_exchanges:]))


@register_policy(order=40)
class FactLog(Policy):
    id, label, stores = "fact_log", "fact log, append-only, all injected", ("fact_log",)

    def inject(self, memory, question):
        return _all(memory, "fact_log")


@register_policy(order=50)
class Profile(Policy):
    id, label, stores = "profile", "profile, upsert + delete, all injected", ("profile",)

    def inject(self, memory, question):
        return _all(memory, "profile")


TOP_K, HYBRID_TOP_K = "retrieval_top_k", "hybrid_top_k"  # PolicySettings fields


@dataclass(frozen=True)
class RetrievalPolicy:
    """A retrieval policy as data: top-k of one retriever over one store, optionally
    after the whole profile. Calling it with settings gives the Policy."""

    id: str
    store: str
    retriever: str  # a RETRIEVERS name
    describes: str  # the label, with {k} for the top-k setting's value
    k_setting: str = TOP_K
    with_profile: bool = False

    def __post_init__(self) -> None:
        if self.k_setting not in {f.name for f in fields(PolicySettings)}:
            raise ValueError(f"policy {self.id!r}: no setting {self.k_setting!r}")

    def __call__(self, settings: PolicySettings) -> Policy:
        return _Retrieval(self, settings)


class _Retrieval(Policy):
    def __init__(self, declared: RetrievalPolicy, settings: PolicySettings) -> None:
        super().__init__(settings)
        self.declared = declared
        self.id = declared.id
        self.top_k: int = getattr(settings, declared.k_setting)
        self.label = declared.describes.format(k=self.top_k)
        self.stores = ("profile", declared.store) if declared.with_profile else (declared.store,)
        self.searches = ((declared.store, declared.retriever),)

    def inject(self, memory, question):
        prefix = tuple(memory.lines("profile")) if self.declared.with_profile else ()
        found = memory.search(self.declared.store, self.declared.retriever, question,
                              self.top_k)
        return _retrieved(found, prefix)


# The article's retrieval policies, then beyond it: stemming, dense embeddings, their fusion.
for _order, _policy in enumerate((
    RetrievalPolicy("bm25_transcript", "transcript", "bm25", "BM25 top-{k} over transcript"),
    RetrievalPolicy("bm25_fact_log", "fact_log", "bm25", "BM25 top-{k} over fact log"),
    RetrievalPolicy("profile_bm25", "transcript", "bm25",
                    "profile + BM25 top-{k} over transcript", HYBRID_TOP_K, with_profile=True),
    RetrievalPolicy("profile_bm25_redacted", "transcript_redacted", "bm25",
                    "profile + BM25 top-{k}, deletes redacted", HYBRID_TOP_K, with_profile=True),
    RetrievalPolicy("profile_bm25_unextracted", "transcript_unextracted", "bm25",
                    "profile + BM25 top-{k}, facts not indexed", HYBRID_TOP_K,
                    with_profile=True),
    RetrievalPolicy("bm25_stemmed_transcript", "transcript", "bm25_stemmed",
                    "BM25 stemmed top-{k} over transcript"),
    RetrievalPolicy("dense_transcript", "transcript", "dense", "dense top-{k} over transcript"),
    RetrievalPolicy("dense_fact_log", "fact_log", "dense", "dense top-{k} over fact log"),
    RetrievalPolicy("profile_dense_unextracted", "transcript_unextracted", "dense",
                    "profile + dense top-{k}, facts not indexed", HYBRID_TOP_K,
                    with_profile=True),
    RetrievalPolicy("hybrid_transcript", "transcript", "hybrid",
                    "BM25 + dense RRF top-{k} over transcript"),
    RetrievalPolicy("profile_hybrid_unextracted", "transcript_unextracted", "hybrid",
                    "profile + RRF top-{k}, facts not indexed", HYBRID_TOP_K, with_profile=True),
), start=6):
    register_policy(order=_order * 10)(_policy)


def searches(policy: Policy) -> list[tuple[str, type[Retriever]]]:
    """(store, retriever class) of each search the policy runs."""
    return [(store, RETRIEVERS[name]) for store, name in policy.searches]


def needs_embeddings(policy: Policy) -> bool:
    return any(retriever.needs_vectors for _, retriever in searches(policy))


def without_embeddings(policies: Sequence[Policy]) -> list[Policy]:
    """The policies that run without the embed stage's vectors (no model, fast)."""
    return [policy for policy in policies if not needs_embeddings(policy)]


def build_policies(settings: PolicySettings) -> list[Policy]:
    """Every registered policy, in row order; load membench.plugins first for plugins'."""
    return [POLICIES[policy_id](settings) for policy_id in POLICIES]


def _stores(policies: Sequence[Policy], wanted: Callable[[type[Retriever]], bool]) -> list[str]:
    return list(dict.fromkeys(store for policy in policies
                              for store, retriever in searches(policy) if wanted(retriever)))


def tokenized_stores(policies: Sequence[Policy]) -> list[str]:
    """Stores some retriever keeps a plain BM25 index of: the index stage tokenizes them."""
    return _stores(policies, lambda retriever: retriever.analyzer == PLAIN)


def embedded_stores(policies: Sequence[Policy]) -> list[str]:
    """Stores some retriever ranks by vectors: the embed stage must embed them."""
    return _stores(policies, lambda retriever: retriever.needs_vectors)
