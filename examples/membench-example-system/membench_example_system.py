"""A notebook memory: each user's turns kept as JSON lines in one file, searched by word
overlap with the question, the newest first among equals. Forgetting rewrites the file
without the lines that state the fact (atomically: a new file replaces the old).

membench drives it like any system: `observe` each turn, `context` at each probe, `forget`
when the application honours a deletion; everything it writes is under `self.directory`,
which membench audits at rest.
"""

from __future__ import annotations

import json
import os
import re

from membench.scenario.text import has
from membench.systems.base import MemorySystem, register_system

WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> set[str]:
    return set(WORD.findall(text.lower()))


@register_system(order=100)
class Notebook(MemorySystem):
    id, label = "example_notes", "example: a word-overlap notebook (examples/)"
    install = "pip install -e examples/membench-example-system"

    def _file(self, user_id: str):
        return self.directory / f"notes-{user_id}.jsonl"

    def _notes(self, user_id: str) -> list[dict]:
        path = self._file(user_id)
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]

    def observe(self, turn):
        if turn.role != "user":  # a notebook of what the user said
            return
        with self._file(turn.user_id).open("a", encoding="utf-8") as notes:
            notes.write(json.dumps({"day": turn.day, "text": turn.text}) + "\n")

    def context(self, user_id, question, k):
        asked = _words(question)
        notes = list(enumerate(self._notes(user_id)))
        ranked = sorted(notes, key=lambda n: (-len(asked & _words(n[1]["text"])), -n[0]))
        return [note["text"] for _, note in ranked[:k]]

    def forget(self, request):
        kept = [n for n in self._notes(request.user_id)
                if not any(has(n["text"], value) for value in request.values)]
        path = self._file(request.user_id)
        fresh = path.with_suffix(".new")
        fresh.write_text("".join(json.dumps(n) + "\n" for n in kept), encoding="utf-8")
        os.replace(fresh, path)
