"""Small helpers for the words schemaflow shows people, shared by the planner and the renderers."""
from __future__ import annotations

from collections.abc import Iterable


DIRTY = "+dirty"  # after a commit: the work tree held uncommitted changes to the project's files
VALUE_SHOWN = 120  # characters of a value shown in a plan; a property value may hold thousands


def value_change(name: str, old: str | None, new: str | None) -> str:
    """``name: 'old' -> 'new'``, as a plan shows a changed comment or property (``(none)`` where there is none)."""
    return f"{name}: {_shown(old)} -> {_shown(new)}"


def _shown(value: str | None) -> str:
    if value is None:
        return "(none)"
    text = repr(value)
    return text if len(text) <= VALUE_SHOWN else text[:VALUE_SHOWN - 4] + "...'"


def listed(names: Iterable[str]) -> str:
    """Names as a plan lists a tuple of them: ``(a, b)``, and ``()`` for none."""
    return f"({', '.join(names)})"


def plural(n: int, word: str) -> str:
    """``n`` and the word, made plural unless ``n`` is 1: "1 step", "3 steps"."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def duration(seconds: float) -> str:
    """A time span as a plan or a progress line shows it: "40 s" below two minutes, else "7 min"."""
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def size(count: int) -> str:
    """A number of bytes as a plan or a progress line shows it, in decimal units: "512 B", "3.4 MB", "1.8 GB"."""
    for unit, scale in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} B"


def short_commit(commit: str | None) -> str:
    """A commit as git shows it in a log line: 10 hex digits (and ``+dirty`` for a work tree with changes)."""
    if not commit:
        return "no commit"
    sha, plus, rest = commit.partition("+")
    return sha[:10] + plus + rest
