"""A map's units waiting to start, and the follow-ups a finished unit adds.

A follow-up is work that can only be listed once its unit's result is known (the
backends stage's remedies of a server backend: which of its stores deleted). It waits
among the units not yet started, before the first smaller one (by the sizes the stage
gives), so it starts as soon as a worker is free for it rather than after every unit. A
follow-up has none of its own. The results come back in the units' order, each with its
follow-ups' results in the order `follow` listed them, wherever and whenever they ran."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

# unit, its result -> its follow-ups and their sizes
Follow = Callable[[Any, Any], Sequence[tuple[Any, float]]]


@dataclass(frozen=True)
class Followed:
    """A unit's result and its follow-ups' results, in the order they were listed."""

    result: Any
    follow_ups: list


@dataclass(frozen=True)
class Waiting:
    """A unit (`position` None) or one of its follow-ups (its place among them)."""

    parent: int
    position: int | None
    unit: Any
    size: float


class UnitQueue:
    def __init__(self, units: Sequence[Any], sizes: Sequence[float],
                 follow: Follow | None = None) -> None:
        self.waiting = deque(Waiting(index, None, unit, size)
                             for index, (unit, size) in enumerate(zip(units, sizes, strict=True)))
        self.follow = follow
        self.done_units: list[Any] = [None] * len(units)
        self.done_follow_ups: list[list[Any]] = [[] for _ in units]

    def __bool__(self) -> bool:
        return bool(self.waiting)

    def pop(self) -> Waiting:
        return self.waiting.popleft()

    def finish(self, item: Waiting, result: Any) -> list[float]:
        """Records a result; the sizes of the follow-ups it added (none for a follow-up)."""
        if item.position is not None:
            self.done_follow_ups[item.parent][item.position] = result
            return []
        self.done_units[item.parent] = result
        if self.follow is None:
            return []
        follow_ups = [(unit, float(size)) for unit, size in self.follow(item.unit, result)]
        self.done_follow_ups[item.parent] = [None] * len(follow_ups)
        for position, (unit, size) in enumerate(follow_ups):
            self._insert(Waiting(item.parent, position, unit, size))
        return [size for _, size in follow_ups]

    def _insert(self, item: Waiting) -> None:
        before = next((index for index, waiting in enumerate(self.waiting)
                       if waiting.size < item.size), len(self.waiting))
        self.waiting.insert(before, item)

    def results(self) -> list[Any]:
        """The units' results in their order; with `follow`, each a Followed."""
        if self.follow is None:
            return list(self.done_units)
        return [Followed(result, follow_ups)
                for result, follow_ups in zip(self.done_units, self.done_follow_ups, strict=True)]
