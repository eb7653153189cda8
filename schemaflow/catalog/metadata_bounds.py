"""How much of one command's bytes and time the metadata files of its tables may take, all together.

Each metadata file is bounded alone (``catalog.iceberg_metadata``: a regular file, at most 64 MiB, ...). But
whoever can register a table in a managed database registers as many as they like, and every command on that
database reads them all: 500 tables each naming a file of 63 MiB added 25 minutes to every plan. So the reads of
one command share a budget, as a project's YAML files share theirs (``spec.yamlpos``): ``COMMAND_BYTES`` read
and ``COMMAND_SECONDS`` spent reading and parsing, all tables together. A table's read is given what is left
(``Allowance``); one whose file does not fit in it, and every one once nothing is left, is not read: it is
``BudgetSpent``, a table whose metadata is unreadable for this command, in one line naming the tables that
spent the budget and what to do, and a plan refuses to change it, as any other unreadable metadata. Time is
checked between reads: one read is held to its file's own bounds (its size, object storage's timeouts).

A command holds its reads within ``metadata_bounds()``: the CLI opens one per command, and a read of the live
state outside any (a program calling the library) opens its own. Work a command starts in a thread
(``background``) runs in the command's context, so it spends the same budget (one read at a time).

The commits of ``apply`` read the metadata of the tables its plan changes again: each is bounded alone, not by
this budget. Their number is the reviewed plan's, not a metastore writer's, and a budget the plan's own read
spent must not stop an apply half-way.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import NoReturn

from schemaflow.catalog.metadata_readers import Unreadable
from schemaflow.wording import plural

# All the metadata files of one command together. A database of 2,000 Iceberg tables each keeping a few hundred
# snapshots (about 200 KiB of metadata) reads 400 MiB, parsed in seconds; a writer's 500 files of 63 MiB (31 GB,
# each within the bound of one file) are cut at 8 files.
COMMAND_BYTES = 512 * 2**20
# Reading and parsing them: 3,000 tables on object storage at 50 ms a file, or 512 MiB of JSON many times over;
# a writer's slow files add this much to a command at most (and one file's own bound), not hours.
COMMAND_SECONDS = 180.0
SHOWN = 3  # the tables named as the ones that spent the budget
# What to do about a table the budget left unread.
_ADVICE = ("see that those tables belong in the database and that their entries name their own metadata files (any "
           "writer can register one naming a large file): drop the ones nobody owns, or have their owners expire old "
           "snapshots; then plan again")


class BudgetSpent(Unreadable):
    """A table's metadata not read: what is left of the command's budget does not hold it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, _ADVICE)


@dataclass(frozen=True)
class Read:
    """One table's read: what it took."""

    table: str
    bytes: int
    seconds: float


@dataclass
class MetadataBudget:
    """What is left of one command's budget as its tables' metadata is read, and each read so far."""

    bytes: int = COMMAND_BYTES
    seconds: float = COMMAND_SECONDS
    clock: Callable[[], float] = time.monotonic
    reads: list[Read] = field(default_factory=list)

    @contextmanager
    def reading(self, table: str) -> Iterator[Allowance]:
        """The read of ``table``'s metadata in this block, given what is left, and spending what it takes; raises
        ``BudgetSpent`` at once when nothing is left."""
        if self.seconds <= 0:
            raise BudgetSpent(f"not read: {self.before('seconds')} took all the {COMMAND_SECONDS:g} s schemaflow "
                              "spends reading metadata in one command")
        if self.bytes <= 0:
            raise BudgetSpent(f"not read: {self.before('bytes')} took all the {COMMAND_BYTES:,} bytes of metadata "
                              "schemaflow reads in one command")
        allowance = Allowance(self)
        started = self.clock()
        try:
            yield allowance
        finally:
            took = self.clock() - started
            self.bytes -= allowance.read
            self.seconds -= took
            self.reads.append(Read(table, allowance.read, took))

    def before(self, by: str) -> str:
        """The tables read so far that took any ``by`` (``bytes`` or ``seconds``), in words, the ones that took the
        most named."""
        took = sorted((read for read in self.reads if getattr(read, by) > 0), key=lambda read: getattr(read, by),
                      reverse=True)
        return (f"the metadata of {plural(len(took), 'table')} read before it (the {'largest' if by == 'bytes' else 'slowest'}"
                f": {', '.join(read.table for read in took[:SHOWN])})")


@dataclass
class Allowance:
    """What one table's read may take of the budget (``bytes``), and what it took (``read``)."""

    budget: MetadataBudget
    read: int = 0

    @property
    def bytes(self) -> int:
        return self.budget.bytes

    @property
    def left(self) -> int:
        """What this read may still take: what was left of the budget when it began, less what it took (a read of
        several files, as a Delta log's, spends it file by file)."""
        return self.budget.bytes - self.read

    def took(self, count: int) -> None:
        self.read += count

    def refuse(self) -> NoReturn:
        """Refuse a file larger than what is left."""
        raise BudgetSpent(f"not read: its metadata file holds more than the {self.bytes:,} bytes left of the "
                          f"{COMMAND_BYTES:,} schemaflow reads in one command after {self.budget.before('bytes')}")


_BUDGET: ContextVar[MetadataBudget | None] = ContextVar("schemaflow_metadata_budget", default=None)


@contextmanager
def metadata_bounds() -> Iterator[MetadataBudget]:
    """Hold the metadata reads in this block to one command's budget: the one a caller holds already, else a new one."""
    held = _BUDGET.get()
    if held is not None:
        yield held
        return
    budget = MetadataBudget()
    token = _BUDGET.set(budget)
    try:
        yield budget
    finally:
        _BUDGET.reset(token)


def held_budget() -> MetadataBudget:
    """The budget of the command this runs in; outside any, a new one (a read bounded alone)."""
    return _BUDGET.get() or MetadataBudget()
