"""Errors schemaflow reports to its user, each saying where the problem is and what to do.

``Problem`` is one finding at a source position; ``SpecError`` carries all the problems found in
the project's files, so that ``validate`` can report every one of them in a single run. A file's name
is text its author chose: a problem shows its path with each control character, newline and bidi
control as an escape (``output_safety.one_line``), so a name cannot colour a terminal, start a line
of its own or a CI workflow command, or reorder what a review shows.
"""
from __future__ import annotations

from dataclasses import dataclass

from schemaflow.model import Source
from schemaflow.output_safety import one_line


class SchemaflowError(Exception):
    """An error with a message meant for the user; the CLI prints it and exits 1."""


@dataclass(frozen=True)
class Problem:
    source: Source
    message: str

    def __str__(self) -> str:
        # The path is a file's name, which anyone can choose: shown escaped, as user text is (``output_safety``).
        return f"{one_line(str(self.source))}: {self.message}"


class SpecError(SchemaflowError):
    """The project's YAML is invalid; nothing may be planned or applied from it."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = sorted(problems, key=lambda p: (p.source.path, p.source.line, p.source.col, p.message))
        super().__init__("\n".join(str(p) for p in self.problems))


class ConcurrentChange(SchemaflowError):
    """A guarded write found ``schemaflow.version`` (or what ``what`` names) other than expected: someone
    changed the object since."""

    def __init__(self, key: str, expected: str | None, found: str | None, what: str = "schemaflow.version") -> None:
        self.key, self.expected, self.found = key, expected, found
        super().__init__(f"{key} was modified concurrently: its {what} is {found!r}, this run expected {expected!r}")


class Unreachable(SchemaflowError):
    """The metastore could not be talked to (down, or the connection broke), after the retries a read gets."""
