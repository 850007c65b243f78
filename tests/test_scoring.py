import pytest

from membench.scenario.model import Deletion, Fact, FactVersion
from membench.scoring.rules import Outcome, outcome


def fact(*values_days, deleted=None):
    versions = tuple(FactVersion(day, 1, value, f"It is {value}.") for value, day in values_days)
    deletion = Deletion(deleted, 2, "Please forget it.") if deleted else None
    return Fact("k", "q?", "p?", versions, deletion)


REGION = fact(("eu-west-2", 1), ("eu-central-1", 14))


@pytest.mark.parametrize("day,context,expected", [
    (10, "we deploy to eu-west-2", Outcome.CURRENT),
    (10, "nothing here", Outcome.MISSING),
    (20, "eu-central-1 only", Outcome.CURRENT),
    (20, "eu-west-2 then eu-central-1", Outcome.CONFLICT),
    (20, "still eu-west-2", Outcome.STALE),
    (20, "eu-west-22 and eu-central-10", Outcome.MISSING),
])
def test_live_outcomes(day, context, expected):
    assert outcome(REGION, day, context) is expected


def test_returning_value_counts_the_middle_one_as_old():
    on_call = fact(("Priya", 6), ("Marco", 16), ("Priya", 27))
    assert outcome(on_call, 30, "Priya") is Outcome.CURRENT
    assert outcome(on_call, 30, "Priya and Marco") is Outcome.CONFLICT
    assert outcome(on_call, 30, "Marco") is Outcome.STALE
    assert outcome(on_call, 20, "Priya") is Outcome.STALE


def test_old_value_contained_in_current_is_not_old():
    widened = fact(("Node 20", 1), ("Node 20 and Node 22", 5))
    assert outcome(widened, 9, "Node 20 and Node 22") is Outcome.CURRENT


def test_deleted_fact_leaks_or_is_clean():
    phone = fact(("+44 7700 900123", 9), deleted=20)
    assert outcome(phone, 10, "+44 7700 900123") is Outcome.CURRENT
    assert outcome(phone, 20, "call +44 7700 900123") is Outcome.LEAKED
    assert outcome(phone, 20, "Please forget my phone number.") is Outcome.CLEAN


def test_probe_before_statement_is_an_error():
    with pytest.raises(ValueError):
        outcome(REGION, 0, "")
