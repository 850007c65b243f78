"""Drives one memory system through a scenario, day by day, in one forget mode: its outcomes
through membench's own scoring (run_bench, as a policy whose memory is the system), then
what its files hold of the deleted facts at the end, before and after each of its remedies.

A joined benchmark's scenarios (format 2) are separate users of one system instance.
Each remedy runs on a copy of the system's directory at the story's end, reopened.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from membench.backends.scan_cache import ScanCache
from membench.backends.scanner import value_needles
from membench.memory.policies import Injection, Policy, PolicySettings
from membench.memory.stores import Memory
from membench.retrieval.retrievers import IndexCache
from membench.scenario.model import Exchange, Fact, Scenario
from membench.scoring.bench import BenchResult, CountTokens, Progress, run_bench
from membench.systems.base import (
    FORGET_API,
    FORGET_MODES,
    NO_REMEDY,
    EmbedTexts,
    Forget,
    MemorySystem,
    Turn,
)

Files = Callable[[Path], Iterable[tuple[str, bytes]]]  # membench.io.at_rest.backend_files
Fork = Callable[[Path, str], Path]  # (the system's directory, remedy) -> a copy of it
DEFAULT_USER = "user"


class SystemFailed(RuntimeError):
    """The system raised or broke its contract: the message names it."""


@dataclass(frozen=True)
class SystemAtRestRow:
    system: str
    mode: str
    remedy: str
    user: str  # the story's user ("user" in a single-user story)
    fact_key: str
    places: tuple[str, ...]  # what kind of file still holds a value, sorted; empty: none
    files: tuple[str, ...]  # those files, relative to the system's directory, sorted


@dataclass(frozen=True)
class SystemRun:
    system: str
    mode: str
    result: BenchResult
    at_rest: tuple[SystemAtRestRow, ...]


def user_of(scenario: Scenario, exchange: Exchange) -> str:
    return scenario.segment_of(exchange.day) or DEFAULT_USER


def turns_of(scenario: Scenario, exchange: Exchange) -> list[Turn]:
    """The exchange as the system hears it: the user's turn, then the assistant's reply.
    A given (format-2) turn is told as its dated, attributed line (`[day 3, 2023-05-08]
    Ana: ...`), the line evidence scoring looks for, with no reply."""
    user = user_of(scenario, exchange)
    if exchange.turn_id is not None:
        return [Turn(user, exchange.day, "user", exchange.line(), exchange.index)]
    turns = [Turn(user, exchange.day, "user", exchange.user, exchange.index)]
    if exchange.assistant:
        turns.append(Turn(user, exchange.day, "assistant", exchange.assistant, exchange.index))
    return turns


def forget_requests(scenario: Scenario) -> dict[tuple[int, int], list[Forget]]:
    """(day, slot) of each "please forget" exchange -> what the application deletes after it."""
    requests: dict[tuple[int, int], list[Forget]] = {}
    for fact in scenario.facts:
        for deletion in dict.fromkeys(fact.deletions + ((fact.deletion,) if fact.deletion
                                                        else ())):
            exchange = next((e for e in scenario.exchanges
                             if (e.day, e.slot) == (deletion.day, deletion.slot)), None)
            user = user_of(scenario, exchange) if exchange else DEFAULT_USER
            requests.setdefault((deletion.day, deletion.slot), []).append(
                Forget(user, fact.key, tuple(dict.fromkeys(fact.values()))))
    return requests


def system_texts(scenario: Scenario) -> list[str]:
    """Every text a system embeds in a run: each turn, then each probe question."""
    texts = dict.fromkeys(t.text for e in scenario.exchanges for t in turns_of(scenario, e))
    texts.update(dict.fromkeys(p.question for p in scenario.probes))
    return list(texts)


def call_system(system_id: str, what: str, function, *args):
    """function(*args), any error but SystemFailed turned into one naming the system."""
    try:
        return function(*args)
    except SystemFailed:
        raise
    except Exception as error:
        raise SystemFailed(f"system {system_id} failed in {what}: "
                           f"{type(error).__name__}: {error}") from error


class Feed:
    """The system advanced day by day over one or several users' stories (each a
    (user id or None, scenario); None: the scenario's own, per joined segment); every call
    into it names the system on failure."""

    def __init__(self, system: MemorySystem, stories: Sequence[tuple[str | None, Scenario]],
                 mode: str) -> None:
        self.system, self.mode = system, mode
        self.scenario = stories[0][1] if stories else None
        self.parts: list[tuple[int, int, int, list[Turn], list[Forget]]] = []
        for position, (user, scenario) in enumerate(stories):
            requests = forget_requests(scenario) if mode == FORGET_API else {}
            for e in scenario.exchanges:
                turns = [replace(turn, user_id=user) if user else turn
                         for turn in turns_of(scenario, e)]
                forgets = [replace(r, user_id=user) if user else r
                           for r in requests.get((e.day, e.slot), ())]
                self.parts.append((e.day, position, e.index, turns, forgets))
        self.parts.sort(key=lambda part: part[:3])  # day by day, users in order
        self.day = 0

    def call(self, what: str, function, *args):
        return call_system(self.system.id, what, function, *args)

    def advance_to(self, day: int) -> None:
        for exchange_day, _, _, turns, forgets in self.parts:
            if self.day < exchange_day <= day:
                for turn in turns:
                    self.call("observe", self.system.observe, turn)
                for request in forgets:
                    self.call("forget", self.system.forget, request)
        self.day = max(self.day, day)

    def context(self, user: str, question: str, k: int) -> tuple[str, ...]:
        texts = self.call("context", self.system.context, user, question, k)
        if not isinstance(texts, list | tuple) or not all(isinstance(t, str) for t in texts):
            raise SystemFailed(f"system {self.system.id}: context() returned "
                               f"{type(texts).__name__}, not a list of texts")
        return tuple(texts)


class _SystemMemory(Memory):
    def __init__(self, feed: Feed, day: int, indexes: IndexCache) -> None:
        super().__init__(feed.scenario, (), day, indexes)
        self.feed = feed


class SystemPolicy(Policy):
    """The system's own context for a probe, top-k of its search."""

    stores = ()

    def __init__(self, system_id: str, mode: str, settings: PolicySettings) -> None:
        super().__init__(settings)
        self.id, self.label = system_id, f"{system_id} ({mode})"

    def inject(self, memory, question):
        user = memory.feed.scenario.segment_of(memory.day) or DEFAULT_USER
        return Injection(memory.feed.context(user, question, self.settings.retrieval_top_k))


Deleted = Sequence[tuple[str, Fact]]  # (user, fact) of every fact a user asked to forget


def deleted_facts(stories: Sequence[tuple[str, Scenario]]) -> list[tuple[str, Fact]]:
    return [(user, f) for user, scenario in stories for f in scenario.facts
            if f.deleted_at is not None]


def scan(system: MemorySystem, directory: Path, files: Files, deleted: Deleted, mode: str,
         remedy: str, cache: ScanCache) -> list[SystemAtRestRow]:
    """Each deleted fact's values (as written, lower-cased, as tokens) in the system's files.
    Needles are keyed by (user, fact) position, so users sharing a key stay apart."""
    wanted = [n for i, (_, f) in enumerate(deleted) for v in dict.fromkeys(f.values())
              for n in value_needles(str(i), v)]
    found: list[tuple[set[str], set[str]]] = [(set(), set()) for _ in deleted]
    for relative, blob in files(directory):
        for hit in cache.scan(blob, wanted):
            places, names = found[int(hit.needle.fact_key)]
            places.add(system.place(relative))
            names.add(relative)
    rows = [SystemAtRestRow(system.id, mode, remedy, user, fact.key, tuple(sorted(places)),
                            tuple(sorted(names)))
            for (user, fact), (places, names) in zip(deleted, found, strict=True)]
    return sorted(rows, key=lambda r: (r.user, r.fact_key))


def audit(system_class: type[MemorySystem], system: MemorySystem, directory: Path,
          embed: EmbedTexts, files: Files, fork: Fork, deleted: Deleted, users: Sequence[str],
          mode: str, said: Progress) -> list[SystemAtRestRow]:
    """The closed system's files, then each remedy on its own copy of them (for every user)."""
    cache = ScanCache()
    rows = scan(system, directory, files, deleted, mode, NO_REMEDY, cache)
    for remedy in system_class.remedies:
        said(f"remedy {remedy}")
        copy = fork(directory, remedy)
        cured = open_system(system_class, copy, embed)
        try:
            for user in users:
                call_system(cured.id, f"remedy {remedy}", cured.apply_remedy, remedy, user)
        finally:
            call_system(cured.id, "close", cured.close)
        rows += scan(cured, copy, files, deleted, mode, remedy, cache)
    return rows


def check_mode(mode: str) -> None:
    if mode not in FORGET_MODES:
        raise ValueError(f"unknown forget mode {mode!r}; known: {', '.join(FORGET_MODES)}")


def reporter(name: str, mode: str, progress: Progress | None) -> Progress:
    def said(message: str) -> None:
        if progress:
            progress(f"system {name} ({mode}): {message}")
    return said


def run_system(system_class: type[MemorySystem], scenario: Scenario, mode: str,
               settings: PolicySettings, embed: EmbedTexts, count_tokens: CountTokens,
               directory: Path, files: Files, fork: Fork,
               progress: Progress | None = None) -> SystemRun:
    """`directory` is the system's (empty); `fork` copies it for a remedy."""
    check_mode(mode)
    name = system_class.id
    said = reporter(name, mode, progress)
    system = open_system(system_class, directory, embed)
    feed = Feed(system, [(None, scenario)], mode)
    try:
        policy = SystemPolicy(name, mode, settings)
        result = run_bench(scenario, (), [policy], count_tokens, IndexCache(), progress=said,
                           memories=lambda day, indexes: _memory(feed, day, indexes))
        feed.advance_to(scenario.sessions)
    finally:
        feed.call("close", system.close)
    users = sorted({user_of(scenario, e) for e in scenario.exchanges})
    deleted = [(scenario.segment_of(f.deletion.day) or DEFAULT_USER, f)
               for f in scenario.facts if f.deletion is not None]
    rows = audit(system_class, system, directory, embed, files, fork, deleted, users, mode,
                 said)
    return SystemRun(name, mode, result, tuple(rows))


def open_system(system_class: type[MemorySystem], directory: Path,
                embed: EmbedTexts) -> MemorySystem:
    try:
        return system_class(directory, embed)
    except Exception as error:
        raise SystemFailed(f"system {system_class.id} failed to open: "
                           f"{type(error).__name__}: {error}") from error


def _memory(feed: Feed, day: int, indexes: IndexCache) -> Memory:
    feed.advance_to(day)
    return _SystemMemory(feed, day, indexes)
