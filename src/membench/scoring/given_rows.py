"""One format-2 probe's outcome-row fields: both scoring rules where both apply, the
scenario's mode deciding `outcome`; abstention probes scored by their premise's turns."""

from __future__ import annotations

from membench.scenario.model import Probe, Scenario
from membench.scoring.evidence import EvidenceScorer, fact_state, value_outcome


def format2_fields(scenario: Scenario, scorer: EvidenceScorer, probe: Probe, day: int,
                   context: str, retrieved: tuple[int, ...] | None) -> dict:
    tags = {"scenario": probe.scenario, "probe_id": probe.id, "tags": probe.tags}
    if probe.abstention:
        outcome = scorer.abstention_outcome(probe, context)
        return {"fact_key": "", "changed": False, "deleted": False, "outcome": outcome,
                "gold_retrieved": None, "value_outcome": None, "evidence_outcome": outcome,
                **tags}
    fact = scorer.facts[probe.fact_key]
    state = fact_state(fact, day)
    evidence = scorer.evidence_outcome(fact, day, context)
    value = value_outcome(fact, day, context)
    gold = scorer.gold(fact, day)
    return {
        "fact_key": fact.key,
        "changed": len(state.stated) > 1,
        "deleted": state.deleted,
        "outcome": evidence if scenario.scoring == "evidence" or value is None else value,
        "gold_retrieved": None if retrieved is None or gold is None
        else set(gold) <= set(retrieved),
        "value_outcome": value,
        "evidence_outcome": evidence,
        **tags,
    }
