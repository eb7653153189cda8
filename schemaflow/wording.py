"""Small helpers for the words schemaflow shows people, shared by the planner and the renderers."""
from __future__ import annotations


def plural(n: int, word: str) -> str:
    """``n`` and the word, made plural unless ``n`` is 1: "1 step", "3 steps"."""
    return f"{n} {word}{'' if n == 1 else 's'}"
