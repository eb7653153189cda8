"""How one table's columns evolve from the live list to the declared one.

The live columns go through the table's pending migrations first (renames, drops, reorders, in
file order), then the diff infers what it safely can: columns added at the end, type changes and
comment changes. What it cannot infer is a problem with the way out spelled as the migration to
write: a column that disappears (a drop, or a rename when another column of its type appears) and
columns in another order. Last, the metastore's positional type rule is checked on the whole change,
since the metastore applies it in one ``alter_table``.

The outcome is classified the way Hive's ALTER TABLE decides whether partitions are rewritten:
the same columns (name lower-cased, type, comment, position by position), an append (the old
columns are a prefix of the new: partitions may keep their list), or anything else.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Sequence

from schemaflow.model import (Column, DropColumn, Migration, PartitionsMode, RenameColumn, ReorderColumns, Table)
from schemaflow.plan.compatibility import incompatibilities

SAME, APPEND, ALTER = "same", "append", "alter"


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
    renamed: tuple[tuple[str, str], ...] = ()
    dropped: tuple[str, ...] = ()
    reordered: bool = False
    retyped: tuple[tuple[str, str, str], ...] = ()   # (column, old type, new type)
    # (live column, what happens to it) for each live column a reader can no longer find by its name
    lost: tuple[tuple[str, str], ...] = ()
    migrations: tuple[str, ...] = ()           # ids of the migrations this change applies
    mode: str | None = None                    # "cascade" or "restrict" when a migration says so
    problems: tuple[Problem, ...] = field(default=())

    @property
    def kind(self) -> str:
        """SAME, APPEND or ALTER, by Hive's comparison of the old and new column lists."""
        if self.new == self.old and _exact(self.new, self.old):
            return SAME
        if self.new[:len(self.old)] == self.old and _exact(self.new[:len(self.old)], self.old):
            return APPEND
        return ALTER


def _exact(a: Sequence[Column], b: Sequence[Column]) -> bool:
    """Hive compares comments too: columns equal as dataclasses are equal in name and type only if comments match."""
    return [(c.name, c.type, c.comment) for c in a] == [(c.name, c.type, c.comment) for c in b]


def evolve(live: Table, desired: Table, migrations: Sequence[Migration]) -> Evolution:
    """The evolution of ``live``'s data columns into ``desired``'s, through the pending migrations."""
    key = desired.key
    columns = list(live.columns)
    operations: list[str] = []
    problems: list[Problem] = []
    renamed: list[tuple[str, str]] = []
    dropped: list[str] = []
    reordered = False
    mode = None
    applied = []
    lost: list[tuple[str, str]] = []
    original = {c.name: c.name for c in live.columns}  # current name -> live name, through renames
    wanted = {c.name: c for c in desired.columns}
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
            names = [c.name for c in columns]
            where = f"migration {migration.id} ({change.describe()})"
            if isinstance(change, RenameColumn):
                if change.old not in names:
                    problems.append(Problem(f"{where}: {key} has no column {change.old}",
                                            f"its columns are {', '.join(names)}; fix the migration"))
                    continue
                columns[names.index(change.old)] = replace(columns[names.index(change.old)], name=change.new)
                renamed.append((change.old, change.new))
                original[change.new] = original.pop(change.old)
                lost.append((original[change.new], f"migration {migration.id} renames to {change.new}"))
            elif isinstance(change, DropColumn):
                if change.column not in names:
                    problems.append(Problem(f"{where}: {key} has no column {change.column}",
                                            f"its columns are {', '.join(names)}; fix the migration"))
                    continue
                del columns[names.index(change.column)]
                dropped.append(change.column)
                lost.append((original.pop(change.column), f"migration {migration.id} drops"))
            elif isinstance(change, ReorderColumns):
                # The order may name columns the schema adds: they are added first, then placed.
                columns += [wanted[n] for n in change.order if n not in names and n in wanted]
                names = [c.name for c in columns]
                if sorted(change.order) != sorted(names):
                    problems.append(Problem(f"{where}: the order must name every column of {key} once",
                                            f"its columns are then {', '.join(names)}"))
                    continue
                by_name = {c.name: c for c in columns}
                columns = [by_name[n] for n in change.order]
                reordered = True
            elif isinstance(change, PartitionsMode):
                mode = change.mode
            operations.append(f"{change.describe()} ({migration.id})")
    problems += _inferred(key, columns, desired.columns, operations)
    if not problems:
        problems += [Problem(i.describe(), _incompatible_way_out(i.new.name))
                     for i in incompatibilities(live.columns, desired.columns)]
    old_types = {c.name: c.type for c in columns}
    retyped = tuple((c.name, old_types[c.name], c.type) for c in desired.columns
                    if c.name in old_types and old_types[c.name] != c.type)
    return Evolution(key, live.columns, desired.columns, tuple(operations), tuple(renamed), tuple(dropped),
                     reordered, retyped, _last_word(lost), tuple(applied), mode, tuple(problems))


def _last_word(lost: list[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """What finally happens to each lost live column (renamed, then dropped: dropped), by column name."""
    return tuple(sorted(dict(lost).items()))


def _applied_checksum(record: str) -> str | None:
    """The file checksum an applied migration's record holds (records are JSON; older or foreign ones may not be)."""
    try:
        return json.loads(record).get("checksum") or None
    except (ValueError, AttributeError):
        return None


def _inferred(key: str, current: list[Column], desired: Sequence[Column], operations: list[str]) -> list[Problem]:
    """What the diff infers after the migrations (appends, type and comment changes), or why it cannot."""
    names = [c.name for c in current]
    wanted = [c.name for c in desired]
    problems = []
    appearing = [c for c in desired if c.name not in names]
    for gone in (c for c in current if c.name not in wanted):
        twins = [c.name for c in appearing if c.type == gone.type]
        if twins:
            problems.append(Problem(
                f"column {gone.name} of {key} disappears and {twins[0]} ({gone.type}) appears",
                f"if it is a rename, add a migration: - rename_column: {{table: {key}, from: {gone.name}, to: {twins[0]}}}; "
                f"if not, acknowledge the loss: - drop_column: {{table: {key}, column: {gone.name}}}"))
        else:
            problems.append(Problem(
                f"column {gone.name} of {key} disappears",
                f"dropping it loses its data for readers; acknowledge that with a migration: "
                f"- drop_column: {{table: {key}, column: {gone.name}}}"))
    if problems:
        return problems
    kept = [n for n in wanted if n in names]
    if kept != names or any(wanted.index(c.name) < len(names) for c in appearing):
        return [Problem(f"the columns of {key} are in another order than live ({', '.join(names)})",
                        f"state the new order with a migration: - reorder_columns: {{table: {key}, "
                        f"order: [{', '.join(wanted)}]}}")]
    by_name = {c.name: c for c in current}
    for column in desired:
        old = by_name.get(column.name)
        if old is None:
            operations.append(f"add {column.name} {column.type}")
        elif old.type != column.type:
            operations.append(f"change type of {column.name} from {old.type} to {column.type}")
        if old is not None and old.comment != column.comment:
            operations.append(f"change comment of {column.name}")
    return []


def _incompatible_way_out(column: str) -> str:
    return (f"add a new column instead and fill it from {column} outside schemaflow, or copy the data into a "
            "new table; the check can also be turned off on the metastore (not recommended)")
