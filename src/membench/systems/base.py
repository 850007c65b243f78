"""The memory-system interface: a system keeps its own memory, written through its own code.

A policy reads stores membench builds; a system (mem0, a LangGraph store, a team's own) is
told each turn as it happens, asked for the context it would put in front of the model for a
question, told to forget when the application honours a deletion, and names the directory
it writes, for the at-rest audit. Registering one is one module plus its line in
membench.plugins (or the `membench.plugins` entry point of another package).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from membench.model.requests import ChatRequest
from membench.registry import Registry

# How the application honours "please forget ...": the user's own turn only (the system
# sees it like any other turn), or that turn and an explicit API deletion of what the
# system holds about the fact (how an application implements a GDPR request).
FORGET_TURN, FORGET_API = "forget_turn", "forget_api"
FORGET_MODES = (FORGET_TURN, FORGET_API)
NO_REMEDY = "none"

EmbedTexts = Callable[[Sequence[str]], np.ndarray]  # texts -> unit vectors, one row each
# The optional model: requests in, answers out, in order, through the response cache
# (membench.commands.model_calls); a system that asks it sets `asks_model`.
AskModel = Callable[[Sequence[ChatRequest]], list[str]]


class SystemUnavailable(RuntimeError):
    """A system cannot run here (its package is not installed)."""


@dataclass(frozen=True)
class Turn:
    user_id: str
    day: int
    role: str  # "user" or "assistant"
    text: str
    exchange: int  # the exchange's index in the user's transcript


@dataclass(frozen=True)
class Forget:
    """The application deletes what the system holds about one fact of one user."""

    user_id: str
    fact_key: str
    values: tuple[str, ...]  # every value the user ever stated for it


class MemorySystem(ABC):
    id: ClassVar[str]
    label: ClassVar[str]
    install: ClassVar[str]  # the command that installs what it needs
    # Documented ways to remove deleted data after the fact, each measured at rest.
    remedies: ClassVar[tuple[str, ...]] = ()
    # A system that writes through a model: the systems stage hands it one (with_model).
    asks_model: ClassVar[bool] = False
    ask_model: ClassVar[AskModel | None] = None
    model_seed: ClassVar[int] = 0  # sent with each request (params' model.seed)

    @classmethod
    def with_model(cls, ask: AskModel, seed: int) -> type[MemorySystem]:
        """This system, answered by `ask` (the same id, label and remedies)."""
        return type(cls.__name__, (cls,), {"ask_model": staticmethod(ask), "model_seed": seed})

    def model(self) -> AskModel:
        """The model `with_model` gave; a system that asks one cannot run without it."""
        if self.ask_model is None:
            raise ValueError("it asks the model: run it through the systems stage "
                             "(docs/model.md)")
        return self.ask_model

    def __init__(self, directory: Path, embed: EmbedTexts) -> None:
        """`directory` is the system's own, empty; it writes nothing outside it."""
        self.directory = directory
        self.embed = embed

    @classmethod
    def check_installed(cls) -> None:
        """Raises SystemUnavailable naming `install` when a package is missing."""

    @abstractmethod
    def observe(self, turn: Turn) -> None: ...

    @abstractmethod
    def context(self, user_id: str, question: str, k: int) -> list[str]:
        """The texts the system would put in front of the model, best first."""

    @abstractmethod
    def forget(self, request: Forget) -> None: ...

    def apply_remedy(self, remedy: str, user_id: str) -> None:
        raise ValueError(f"system {self.id}: unknown remedy {remedy!r}")

    def place(self, relative: str) -> str:
        """What a file under the directory is (for the at-rest table): its top name."""
        return relative.split("/", 1)[0]

    def close(self) -> None:
        """Releases files and handles; the directory is removed by the caller."""


class WritesExchanges:
    """For a system that is given whole exchanges, as model-based managers take them (the
    user's turn with the assistant's reply): a user turn waits for its reply, and anything
    still waiting is written before the system is read, told to forget, cured or closed.
    Mixed in before the MemorySystem class it extends."""

    pending: list[Turn]

    def write_exchange(self, turns: list[Turn]) -> None:
        raise NotImplementedError

    def observe(self, turn: Turn) -> None:
        if turn.role == "user":
            self.flush()
        self.pending = [*getattr(self, "pending", []), turn]
        if turn.role == "assistant":
            self.flush()

    def flush(self) -> None:
        turns, self.pending = getattr(self, "pending", []), []
        if turns:
            self.write_exchange(turns)

    def context(self, user_id: str, question: str, k: int) -> list[str]:
        self.flush()
        return super().context(user_id, question, k)  # type: ignore[misc]

    def forget(self, request: Forget) -> None:
        self.flush()
        super().forget(request)  # type: ignore[misc]

    def apply_remedy(self, remedy: str, user_id: str) -> None:
        self.flush()
        super().apply_remedy(remedy, user_id)  # type: ignore[misc]

    def close(self) -> None:
        self.flush()
        super().close()  # type: ignore[misc]


SystemClass = type[MemorySystem]
SYSTEMS: Registry[SystemClass] = Registry("memory system")


def register_system(*, order: float) -> Callable[[SystemClass], SystemClass]:
    """Registers a MemorySystem class under its `id`; `order` places its rows."""
    return lambda cls: SYSTEMS.add(cls.id, cls, order=order)
