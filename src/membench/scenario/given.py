"""Builds a Scenario from format-2 specs: given turns replayed in order (one exchange per
turn, dated when the session has a date), sessions without turns generated as format 1's
filler (or left empty without a `filler` block), facts and probes as written.

Several specs (a benchmark directory) are joined on one day line, one scenario after the
other; each keeps its own memory (Scenario.segments), so a policy never sees another
conversation. Joined fact keys and probe ids are prefixed with "<scenario id>/"."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from membench.scenario.build import CorpusText, FillerDrawer, ScenarioShape
from membench.scenario.format2 import Format2Spec
from membench.scenario.model import (
    Deletion,
    Exchange,
    ExchangeKind,
    Fact,
    FactVersion,
    Probe,
    Scenario,
)
from membench.scenario.text import ValueFinder


@dataclass(frozen=True)
class _Built:
    exchanges: list[Exchange]
    facts: list[Fact]
    probes: list[Probe]
    days: int


def _filler_values(spec: Format2Spec) -> ValueFinder:
    return ValueFinder(s for f in spec.facts for v in f.versions for s in (v.value, *v.answers))


def _build_one(spec: Format2Spec, corpus: Sequence[CorpusText], shape: ScenarioShape,
               offset: int, first_index: int, prefix: str) -> _Built:
    drawer = None
    if spec.filler and any(s.turns is None for s in spec.sessions):
        drawer = FillerDrawer(random.Random(shape.seed), corpus, shape.lines_per_reply,
                              _filler_values(spec))
    exchanges: list[Exchange] = []
    where: dict[str, Exchange] = {}
    for session in spec.sessions:
        day = offset + session.number
        if session.turns is not None:
            for slot, turn in enumerate(session.turns, 1):
                exchange = Exchange(first_index + len(exchanges), day, slot, ExchangeKind.TURN,
                                    turn.text, "", turn_id=turn.id, speaker=turn.speaker,
                                    date=session.date)
                where[turn.id] = exchange
                exchanges.append(exchange)
        elif drawer is not None:
            for slot in range(1, shape.exchanges_per_session + 1):
                code, source = drawer.code()
                exchanges.append(Exchange(
                    first_index + len(exchanges), day, slot, ExchangeKind.FILLER,
                    drawer.question(spec.filler.questions), f"{spec.filler.reply}\n{code}",
                    source=source))

    def at(turn_ids: Sequence[str]) -> Exchange:
        return max((where[t] for t in turn_ids), key=lambda e: e.index)

    facts = []
    for fact in spec.facts:
        versions = tuple(FactVersion(at(v.turns).day, at(v.turns).slot, v.value,
                                     " / ".join(where[t].user for t in v.turns),
                                     v.turns, v.answers) for v in fact.versions)
        deletions = tuple(Deletion(where[t].day, where[t].slot, where[t].user, t)
                          for t in fact.deletions)
        final = deletions[-1] if deletions and (deletions[-1].day, deletions[-1].slot) > (
            versions[-1].day, versions[-1].slot) else None
        facts.append(Fact(prefix + fact.key, "", "", versions, final, deletions))
    probes = [Probe(offset + p.session, prefix + p.fact if p.fact else "", p.form, p.question,
                    prefix + p.id, p.evidence, p.tags, spec.id) for p in spec.probes]
    return _Built(exchanges, facts, probes, len(spec.sessions))


def build_given(specs: Sequence[Format2Spec], corpus: Sequence[CorpusText],
                shape: ScenarioShape, *, joined: bool = False) -> Scenario:
    """One Scenario from one spec, or from several joined (joined=True prefixes keys)."""
    if len(specs) > 1 and not joined:
        raise ValueError("several format-2 scenarios must be joined")
    scorings = sorted({s.scoring for s in specs})
    if len(scorings) > 1:
        raise ValueError(f"a benchmark's scenarios must share one scoring mode, got "
                         f"{', '.join(scorings)}")
    exchanges, facts, probes, segments, offset = [], [], [], [], 0
    for spec in specs:
        built = _build_one(spec, corpus, shape, offset, len(exchanges),
                           f"{spec.id}/" if joined else "")
        exchanges += built.exchanges
        facts += built.facts
        probes += built.probes
        segments.append((spec.id, offset + 1, offset + built.days))
        offset += built.days
    ids = [s.id for s in specs]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise ValueError(f"scenario id(s) used by more than one file: {', '.join(repeated)}")
    probes.sort(key=lambda p: p.day)  # stable: file order within a day
    return Scenario(sessions=offset,
                    exchanges_per_session=max((e.slot for e in exchanges), default=0),
                    seed=shape.seed, facts=tuple(facts), exchanges=tuple(exchanges),
                    probes=tuple(probes), scoring=specs[0].scoring, segments=tuple(segments))
