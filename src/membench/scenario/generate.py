"""Generates a story for scale: N facts from the domain templates, each changed a chosen
number of times and a share deleted, over S sessions, for one user or a deployment of U
users with the same keys and their own values. Same settings and seed, same story.

The result is the scenario file's data (membench.scenario.spec reads it back, with the
optional `user`/`users` extension when there is more than one user).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from fractions import Fraction
from itertools import chain, zip_longest

from membench.scenario.domains import (
    ACKNOWLEDGEMENT,
    DELETION_REPLY,
    DISTRACTORS,
    DOMAINS,
    FILLER_REPLY,
    KeyTemplate,
)
from membench.scenario.text import tokens

MAX_DRAWS = 1_000


class GenerateError(ValueError):
    """The settings ask for a story the templates cannot give."""


@dataclass(frozen=True)
class GenerateSettings:
    facts: int  # fact keys (per user)
    changes: tuple[int, ...]  # changes per fact, given to the facts in turn
    deleted_share: Fraction  # share of the facts the user later asks to forget
    sessions: int  # days of the story's timeline
    users: int
    seed: int


@dataclass(frozen=True)
class _Key:
    template: KeyTemplate
    subject: str

    @property
    def name(self) -> str:
        return f"{self.template.name}_{self.subject.replace(' ', '_').replace('-', '_').lower()}"

    def text(self, template: str, value: str = "") -> str:
        text = template.format(subject=self.subject, value=value)
        return text[0].upper() + text[1:]


def _keys(rng: random.Random, count: int) -> list[_Key]:
    """`count` keys, the domains taking turns so that a few facts already span several."""
    per_domain = []
    for domain in DOMAINS:
        keys = [_Key(t, s) for s in domain.subjects for t in domain.keys]
        rng.shuffle(keys)
        per_domain.append(keys)
    interleaved = [k for k in chain.from_iterable(zip_longest(*per_domain)) if k is not None]
    if count > len(interleaved):
        raise GenerateError(f"generate.facts: the templates give at most {len(interleaved)} "
                            f"facts, asked for {count}")
    return interleaved[:count]


def _timelines(rng: random.Random, events: list[int], sessions: int) -> list[list[tuple]]:
    """Per fact, its events' (day, slot): distinct days in order, no day above its share."""
    capacity = math.ceil(sum(events) / sessions) if events else 0
    load = [0] * (sessions + 1)
    timelines = []
    for count in events:
        free = [day for day in range(1, sessions + 1) if load[day] < capacity]
        if len(free) < count:
            raise GenerateError(
                f"generate.sessions: {sessions} days cannot hold a fact with {count} events "
                "(raise generate.sessions or lower generate.changes)")
        days = sorted(rng.sample(free, count))
        timeline = []
        for day in days:
            load[day] += 1
            timeline.append((day, load[day]))
        timelines.append(timeline)
    return timelines


class _ValueDrawer:
    """Draws values no other value contains or is contained in (as whole-word sequences),
    so a value found in a text belongs to exactly one fact, one user and one version."""

    def __init__(self, rng: random.Random, fixed_texts: list[str]) -> None:
        self._rng = rng
        self._taken: set[tuple[str, ...]] = set()
        self._parts: set[tuple[str, ...]] = set()  # every run of words of a taken value
        self._widened: dict[str, int] = {}  # template name -> spaces used up
        for text in fixed_texts:
            self._parts |= _runs(tuple(tokens(text)), limit=6)

    def draw(self, template: KeyTemplate) -> str:
        """A fresh value of the template's kind: from its space, or from its wider space
        once MAX_DRAWS draws in a row found none (and from then on, for that template)."""
        spaces = [template.draw] if template.wider is None else [template.draw, template.wider]
        for space in spaces[self._widened.get(template.name, 0):]:
            for _ in range(MAX_DRAWS):
                value = space(self._rng)
                words = tuple(tokens(value))
                if words in self._parts or _runs(words) & self._taken:
                    continue
                self._taken.add(words)
                self._parts |= _runs(words)
                return value
            self._widened[template.name] = self._widened.get(template.name, 0) + 1
        raise GenerateError(f"ran out of distinct {template.name} values: lower "
                            "generate.facts, generate.users or generate.changes")


def _runs(words: tuple[str, ...], limit: int | None = None) -> set[tuple[str, ...]]:
    longest = len(words) if limit is None else limit
    return {words[i:j] for i in range(len(words))
            for j in range(i + 1, min(len(words), i + longest) + 1)}


def user_names(users: int) -> list[str]:
    width = max(3, len(str(users)))
    return [f"u{n:0{width}d}" for n in range(1, users + 1)]


def generate_scenario(settings: GenerateSettings) -> dict:
    """The scenario file's data: the first user's facts, then the other users' (if any)."""
    if settings.facts < 1 or settings.users < 1 or settings.sessions < 1:
        raise GenerateError("generate: facts, users and sessions must be at least 1")
    if not settings.changes or min(settings.changes) < 0:
        raise GenerateError("generate.changes: expected a non-empty list of counts >= 0")
    if not 0 <= settings.deleted_share <= 1:
        raise GenerateError("generate.deleted_share: expected a share between 0 and 1")
    rng = random.Random(settings.seed)
    keys = _keys(rng, settings.facts)
    changes = [settings.changes[i % len(settings.changes)] for i in range(len(keys))]
    deleted_count = math.floor(settings.deleted_share * len(keys) + Fraction(1, 2))
    deleted = set(rng.sample(range(len(keys)), deleted_count))
    timelines = _timelines(rng, [1 + c + (i in deleted) for i, c in enumerate(changes)],
                           settings.sessions)
    questions = [key.text(t) for key in keys for t in (key.template.literal,
                                                          key.template.paraphrase,
                                                          key.template.forget)]
    drawer = _ValueDrawer(rng, [FILLER_REPLY, ACKNOWLEDGEMENT, DELETION_REPLY, *DISTRACTORS,
                                *questions])
    stories = []
    for _ in range(settings.users):
        facts = []
        for i, key in enumerate(keys):
            events = timelines[i]
            versions = []
            for n, (day, slot) in enumerate(events[:1 + changes[i]]):
                value = drawer.draw(key.template)
                template = key.template.statement if n == 0 else key.template.change
                versions.append({"day": day, "slot": slot, "value": value,
                                 "statement": key.text(template, value)})
            fact = {"key": key.name, "versions": versions}
            if i in deleted:
                day, slot = events[-1]
                fact["deletion"] = {"day": day, "slot": slot,
                                    "request": key.text(key.template.forget)}
            facts.append(fact)
        stories.append(facts)
    for i, key in enumerate(keys):
        stories[0][i] = {"key": key.name, "literal": key.text(key.template.literal),
                         "paraphrase": key.text(key.template.paraphrase),
                         **{k: v for k, v in stories[0][i].items() if k != "key"}}
    data: dict = {"reference_sessions": settings.sessions, "filler_reply": FILLER_REPLY,
                  "acknowledgement": ACKNOWLEDGEMENT, "deletion_reply": DELETION_REPLY,
                  "distractors": list(DISTRACTORS), "facts": stories[0]}
    if settings.users > 1:
        names = user_names(settings.users)
        data["user"] = names[0]
        data["users"] = [{"name": name, "facts": facts}
                         for name, facts in zip(names[1:], stories[1:], strict=True)]
    return data
