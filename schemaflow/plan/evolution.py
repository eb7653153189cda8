"""How one table's columns evolve from the live list to the declared one.

The live columns go through the table's pending migrations first (renames, drops, reorders, in
file order), then the diff infers what it safely can: columns added at the end, type changes and
comment changes. What it cannot infer is a problem with the way out spelled as the migration to
write: a column that disappears (a drop, or a rename when another column of its type appears) and
columns in another order. Last, the metastore's positional type rule is checked on the whole change,
since the metastore applies it in one ``alter_table``.

The live table may be at any point of the history: a change may name a column that schemas/ added
after the table was last applied, or added back after an earlier change took its name away. Such a
column is brought in as schemas/ added it (see ``_Replay``). A name taken away and declared again
is the same column to a reader that finds columns by name: it shows the old values, with their type.

The outcome is classified the way Hive's ALTER TABLE decides whether partitions are rewritten:
the same columns (name lower-cased, type, comment, position by position), an append (the old
columns are a prefix of the new: partitions may keep their list), or anything else.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import ClassVar
from enum import StrEnum
from collections.abc import Callable, Sequence

from schemaflow.model import (AcceptLoss, Column, DropColumn, Migration, MigrationChange, Partitions, RenameColumn, ReorderColumns,
                              Table)
from schemaflow.plan.compatibility import Incompatibility, incompatibilities

class ColumnListChange(StrEnum):
    """What a column change does to the column list, as Hive's ALTER TABLE tells it (see the module docstring)."""
    SAME = "same"      # the same columns, comments included
    APPEND = "append"  # the old columns, then new ones: partitions may keep their list
    ALTER = "alter"    # anything else


_Pairs = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Problem:
    """Why a table's column change cannot be planned, and what to do about it."""

    what: str
    way_out: str


@dataclass(frozen=True)
class Evolution:
    key: str
    old: tuple[Column, ...]
    new: tuple[Column, ...]
    operations: tuple[str, ...] = ()           # what happens, in order, for the reviewer
    renamed: tuple[tuple[str, str], ...] = ()  # (live name, last name) of each live column that ends renamed
    dropped: tuple[str, ...] = ()
    reordered: bool = False
    retyped: tuple[tuple[str, str, str], ...] = ()   # (column, old type, new type)
    # (live column, what happens to it) for each live column a reader can no longer find by its name
    lost: tuple[tuple[str, str], ...] = ()
    # live columns a migration took away whose name the table declares again: by name, their old values
    returning: tuple[str, ...] = ()
    migrations: tuple[str, ...] = ()           # ids of the migrations this change applies
    mode: Partitions | None = None             # when a migration says so
    accepted: tuple[str, ...] = ()             # columns (last names) whose values a conversion may make NULL
    problems: tuple[Problem, ...] = field(default=())
    # changes that name a column the table neither has nor declares (``_Replay.unexplained``), when nothing blocks
    unexplained: tuple[Problem, ...] = field(default=())

    @property
    def comments(self) -> tuple[tuple[str, str | None, str | None], ...]:
        """(column, old comment, new comment) of each live column kept whose comment changes, by its last name."""
        last = dict(self.renamed)
        old = {last.get(c.name, c.name): c.comment for c in self.old if c.name not in self.dropped}
        return tuple((c.name, old[c.name], c.comment) for c in self.new if c.name in old and old[c.name] != c.comment)

    @property
    def kind(self) -> ColumnListChange:
        """By Hive's comparison of the old and new column lists."""
        if self.new == self.old and _exact(self.new, self.old):
            return ColumnListChange.SAME
        if self.new[:len(self.old)] == self.old and _exact(self.new[:len(self.old)], self.old):
            return ColumnListChange.APPEND
        return ColumnListChange.ALTER


class ColumnChange:
    """A change of a table's columns, however its kind commits them (the metastore's alter, an Iceberg commit, a
    rewrite of the rows): what its ``evolution`` loses or retypes can break the views over the table
    (``plan.invalidation``). ``needs_permission``: whether the change, when destructive, runs only as allowed
    (``--allow-destructive``); a change that drops only the columns migrations name does not, the migration being
    the permission. A base of the change classes, which are frozen dataclasses: these are their fields."""

    key: str
    evolution: Evolution
    needs_permission: ClassVar[bool] = False


class CommittedColumnChange(ColumnChange):
    """A change of columns a table format makes in its own metadata or log (Iceberg, Delta), whatever else it changes:
    it reshapes the table when a column's name or type changes, and destroys only the columns it drops, which a
    migration names (that is the permission)."""

    @property
    def reshapes(self) -> bool:
        return [(c.name, c.type) for c in self.evolution.old] != [(c.name, c.type) for c in self.evolution.new]

    @property
    def destructive(self) -> bool:
        return bool(self.evolution.dropped)


def _exact(a: Sequence[Column], b: Sequence[Column]) -> bool:
    """Hive compares comments too: columns equal as dataclasses are equal in name and type only if comments match."""
    return [(c.name, c.type, c.comment) for c in a] == [(c.name, c.type, c.comment) for c in b]


def evolve(live: Table, desired: Table, migrations: Sequence[Migration], type_rule: bool = True,
           by_id: bool = False) -> Evolution:
    """The evolution of ``live``'s data columns into ``desired``'s, through the pending migrations.

    ``type_rule``: whether the metastore refuses incompatible type changes (``model.TYPE_RULE``,
    on unless its server says otherwise). ``by_id``: the table's readers find columns by field id
    (Iceberg), so a column may be added anywhere and the order changes without a migration.
    """
    key = desired.key
    if _exact(live.columns, desired.columns) and not any(m.changes_for(key) for m in migrations):
        # Nothing to replay nor infer: what the rest would find (a plan of thousands of unchanged tables
        # spends most of its diff there); tests/test_evolution.py checks the two agree.
        return Evolution(key, live.columns, desired.columns)
    return replayed(live, desired, migrations, type_rule, by_id)


def replayed(live: Table, desired: Table, migrations: Sequence[Migration], type_rule: bool = True,
             by_id: bool = False) -> Evolution:
    """``evolve`` the whole way: the pending migrations replayed, then what the diff infers."""
    key = desired.key
    replay = _Replay(key, list(live.columns), {c.name: c for c in desired.columns},
                     origin={c.name: c.name for c in live.columns})
    problems: list[Problem] = []
    applied = []
    for migration in migrations:
        if not migration.changes_for(key):
            continue
        if migration.id in live.migrations:
            recorded = _applied_checksum(live.migrations[migration.id])
            if recorded and recorded != migration.checksum:
                problems.append(Problem(
                    f"migration {migration.id} was edited after it was applied to {key} "
                    f"(applied: {recorded}, the file now: {migration.checksum})",
                    f"restore the file as it was applied (git log -p migrations/{migration.id}.yaml) "
                    "and put new changes in a new migration"))
            continue
        applied.append(migration.id)
        for change in migration.changes_for(key):
            replay.apply(change, migration.id)
    # A column brought in takes its declared type and comment, under its last name; one that no reorder
    # placed is added among the columns schemas/ adds, where it declares them.
    current = [replay.wanted.get(c.name, c) if c.name in replay.added else c for c in replay.columns
               if c.name not in replay.floating]
    operations = replay.operations
    former = live.iceberg.former if live.iceberg else (lambda name: ())
    problems += replay.problems + _inferred(key, current, desired.columns, operations,
                                            replay.added - replay.floating, by_id,
                                            lambda name: former(replay.origin.get(name, "")))
    if problems:
        problems = replay.unexplained + problems
    elif type_rule:
        problems += [Problem(i.describe(), _incompatible_way_out(i))
                     for i in incompatibilities(live.columns, desired.columns)]
    renamed, lost, returning, retyped = _for_readers(live, desired, current, replay)
    wanted, names = [c.name for c in desired.columns], {c.name for c in current}
    moved = by_id and [c.name for c in current if c.name in wanted] != [n for n in wanted if n in names]
    return Evolution(key, live.columns, desired.columns, tuple(operations), renamed, tuple(replay.dropped),
                     replay.reordered or moved, retyped, lost, returning, tuple(applied), replay.mode,
                     tuple(sorted(replay.accepted)), tuple(problems), () if problems else tuple(replay.unexplained))


def _for_readers(live: Table, desired: Table, current: list[Column],
                 replay: _Replay) -> tuple[_Pairs, _Pairs, tuple[str, ...], tuple[tuple[str, str, str], ...]]:
    """What readers of the live columns find afterwards: renamed, lost, returning and retyped (see ``Evolution``).

    A live column that ends under another name, or nowhere, is lost to readers, unless its name comes
    back: a reader that finds columns by name then finds its old values there, with the old type.
    """
    moved = {name: fate for name, fate in replay.fates.items() if replay.origin.get(name) != name}
    returning = tuple(sorted(name for name in moved if name in replay.wanted))
    live_types = {c.name: c.type for c in live.columns}
    old_types = {c.name: c.type for c in current if c.name not in replay.added} | {n: live_types[n] for n in returning}
    retyped = tuple((c.name, old, c.type) for c in desired.columns
                    if (old := old_types.get(c.name)) and c.type and old != c.type)
    renamed = tuple((replay.origin[c.name], c.name) for c in current if replay.origin.get(c.name, c.name) != c.name)
    lost = tuple(sorted((name, fate) for name, fate in moved.items() if name not in replay.wanted))
    return renamed, lost, returning, retyped


@dataclass
class _Replay:
    """The live columns taken through the pending migration changes, in order.

    A change may name a column the table lacks at that point of history: schemas/ added it after the
    table was last applied, or added it back after an earlier change took the name away. The column
    is brought in where it was added, at the end (its type and comment are the declared ones of its
    last name), so a drop of it drops nothing. Unless an earlier change here took that name away, the
    name may as well be misspelt: ``unexplained`` says so, as a problem when the plan is blocked anyway and
    else as a hazard of the step, since applying records the migration as done.
    """

    key: str
    columns: list[Column]
    wanted: dict[str, Column]
    origin: dict[str, str]                     # current name -> live name, for the columns the live table has
    added: set[str] = field(default_factory=set)   # current names of the columns brought in
    floating: set[str] = field(default_factory=set)   # those of them no reorder has placed since
    freed: set[str] = field(default_factory=set)   # names a change took away
    fates: dict[str, str] = field(default_factory=dict)  # live name -> what the last change to it did
    operations: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)   # live names
    reordered: bool = False
    mode: Partitions | None = None
    accepted: set[str] = field(default_factory=set)    # current names
    problems: list[Problem] = field(default_factory=list)
    unexplained: list[Problem] = field(default_factory=list)

    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def apply(self, change: MigrationChange, migration_id: str) -> None:
        where = f"migration {migration_id} ({change.describe()})"
        if isinstance(change, RenameColumn) and change.new in self.names():
            self.problems.append(Problem(f"{where}: {self.key} already has a column {change.new}",
                                         f"its columns are {', '.join(self.names())}; fix the migration"))
            return
        arrived = [n for n in dict.fromkeys(_named(change)) if n not in self.names()]
        for name in arrived:
            self._bring_in(name, where)
        if isinstance(change, RenameColumn):
            index = self.names().index(change.old)
            self.columns[index] = replace(self.columns[index], name=change.new)
            self._take_away(change.old, change.new, f"migration {migration_id} renames to {change.new}")
            if change.old in self.accepted:
                self.accepted = self.accepted - {change.old} | {change.new}
        elif isinstance(change, DropColumn):
            del self.columns[self.names().index(change.column)]
            self._take_away(change.column, None, f"migration {migration_id} drops")
            self.accepted.discard(change.column)
        elif isinstance(change, AcceptLoss):
            self.accepted.add(change.column)
        elif isinstance(change, ReorderColumns):
            if sorted(change.order) != sorted(self.names()):
                self.problems.append(Problem(f"{where}: the order must name every column of {self.key} once",
                                             f"its columns are then {', '.join(self.names())}"))
                return
            by_name = {c.name: c for c in self.columns}
            self.columns = [by_name[n] for n in change.order]
            self.reordered = True
            self.floating.clear()
        else:
            self.mode = change.mode
        note = f"; not yet on the table, added by schemas/ since: {', '.join(arrived)}" if arrived else ""
        self.operations.append(f"{change.describe()} ({migration_id}{note})")

    def _bring_in(self, name: str, where: str) -> None:
        # A reorder may name columns the schema adds: those are expected, as are names taken away here.
        if name not in self.freed and name not in self.wanted:
            self.unexplained.append(Problem(f"{where}: {self.key} has no column {name}",
                                            f"its columns are {', '.join(self.names())}; fix the migration"))
        self.columns.append(self.wanted.get(name, Column(name)))
        self.added.add(name)
        self.floating.add(name)

    def _take_away(self, name: str, new: str | None, fate: str) -> None:
        """Bookkeeping for the column ``name`` renamed to ``new``, or dropped (``new`` None)."""
        self.freed.add(name)
        if name in self.added:
            floating = name in self.floating
            self.added.remove(name)
            self.floating.discard(name)
            if new:
                self.added.add(new)
                self.floating.update([new] if floating else [])
            return
        live_name = self.origin.pop(name)
        if new:
            self.origin[new] = live_name
        else:
            self.dropped.append(live_name)
        self.fates[live_name] = fate


def _named(change: MigrationChange) -> Sequence[str]:
    """The columns a change needs the table to have."""
    if isinstance(change, RenameColumn):
        return (change.old,)
    if isinstance(change, DropColumn):
        return (change.column,)
    if isinstance(change, ReorderColumns):
        return change.order
    if isinstance(change, AcceptLoss):
        return (change.column,)
    return ()


def _applied_checksum(record: str) -> str | None:
    """The file checksum an applied migration's record holds (records are JSON; older or foreign ones may not be)."""
    try:
        return json.loads(record).get("checksum") or None
    except (ValueError, AttributeError):
        return None


def _inferred(key: str, current: list[Column], desired: Sequence[Column], operations: list[str],
              added: set[str], by_id: bool = False,
              former: Callable[[str], tuple[str, ...]] = lambda name: ()) -> list[Problem]:
    """What the diff infers after the migrations (appends, type and comment changes), or why it cannot.

    The ``added`` columns of ``current`` are in place already, but are new to the table. ``by_id``: a
    column may be added anywhere, and the order of the others changes as declared. ``former``: the earlier
    names of a current column's Iceberg field id, which say what another writer renamed.
    """
    names = [c.name for c in current]
    wanted = [c.name for c in desired]
    problems = []
    appearing = [c for c in desired if c.name not in names]
    gone = [c for c in current if c.name not in wanted]
    # Each disappearing column is offered one target: the declared name its field id had, else a column of its
    # type that appears and that no other disappearing column was offered.
    was = {c.name: old for c in gone for old in former(c.name)[:1] if old in {a.name for a in appearing}}
    offered = set(was.values())
    for column in gone:
        if column.name in was:
            problems.append(Problem(
                f"column {column.name} of {key} was {was[column.name]} (the same Iceberg field id), and "
                f"{was[column.name]} is declared",
                f"declare it as {column.name} to keep the rename, or rename it back with a migration: - rename_column: "
                f"{{table: {key}, from: {column.name}, to: {was[column.name]}}}"))
            continue
        twins = [c.name for c in appearing if c.type == column.type and c.name not in offered]
        if twins:
            offered.add(twins[0])
            problems.append(Problem(
                f"column {column.name} of {key} disappears and {twins[0]} ({column.type}) appears",
                f"if it is a rename, add a migration: - rename_column: {{table: {key}, from: {column.name}, to: {twins[0]}}}; "
                f"if not, acknowledge the loss: - drop_column: {{table: {key}, column: {column.name}}}"))
        else:
            problems.append(Problem(
                f"column {column.name} of {key} disappears",
                f"dropping it loses its data for readers; acknowledge that with a migration: "
                f"- drop_column: {{table: {key}, column: {column.name}}}"))
    if problems:
        return problems
    kept = [n for n in wanted if n in names]
    if by_id:
        if kept != names:
            operations.append(f"reorder columns: {', '.join(wanted)}")
    elif kept != names or any(wanted.index(c.name) < len(names) for c in appearing):
        return [Problem(f"the columns of {key} are in another order than live ({', '.join(names)})",
                        f"state the new order with a migration: - reorder_columns: {{table: {key}, "
                        f"order: [{', '.join(wanted)}]}}")]
    by_name = {c.name: c for c in current if c.name not in added}
    for column in desired:
        old = by_name.get(column.name)
        if old is None:
            place = wanted.index(column.name)
            where = "" if not by_id or place == len(wanted) - 1 else (
                " first" if place == 0 else f" after {wanted[place - 1]}")
            operations.append(f"add {column.name} {column.type}{where}")
        elif old.type != column.type:
            operations.append(f"change type of {column.name} from {old.type} to {column.type}")
        if old is not None and old.comment != column.comment:
            operations.append(f"change comment of {column.name}")
    return []


def _incompatible_way_out(found: Incompatibility) -> str:
    if found.old.name == found.new.name:  # a type change of its own
        first = f"add a new column instead and fill it from {found.new.name} outside schemaflow"
    else:  # columns moved into other positions: a column dropped or moved before them
        first = (f"the columns from position {found.position} on would move: keep {found.old.name} where it is (and "
                 "stop writing to it), or drop only the last column")
    return f"{first}, or copy the data into a new table; the check can also be turned off on the metastore (not recommended)"
