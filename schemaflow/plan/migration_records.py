"""Where the migrations a plan applies are recorded: on every table each one changes, in the write that changes it.

A migration's record on a table (``schemaflow.migration.<id>``: when, the file's checksum, the commit) is what keeps
the next plan from replaying it there (``plan.evolution``). So it lands in the same write as the change, whatever
the table's kind: the metastore ``alter_table`` that sets a Hive table's columns (``SetColumns``), the rename that
makes a rewrite's verified copy the table (``RewriteRows``), the Iceberg commit (which takes the step's stamp in),
and otherwise the table's stamp. A migration that names several tables is recorded on each by its own change.

A table an earlier apply changed without recording the migration on it (before this, a migration naming tables of
several kinds was recorded on the first kind alone) would have the migration replayed on columns it already left
as they are, and every plan would block on it (a rename to a name the table has). Such a table takes the record of
another table that holds it, where the migration's changes to it are in place already (``found_elsewhere``): its
stamp records the migration, and no merged migration ever needs an edit.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import assert_never

from schemaflow.model import (MIGRATION_PREFIX, AcceptLoss, Catalog, DropColumn, Migration, MigrationChange,
                              PartitionsMode, RenameColumn, ReorderColumns, Table)
from schemaflow.plan.steps import APPLIED_AT


def migration_records(migrations: Iterable[Migration], commit: str | None) -> dict[str, str]:
    """The table parameters that record ``migrations`` as applied now, from ``commit``."""
    return {MIGRATION_PREFIX + m.id: json.dumps({"at": APPLIED_AT, "checksum": m.checksum, "commit": commit},
                                                sort_keys=True) for m in migrations}


def recorded_ids(records: Mapping[str, str]) -> set[str]:
    """The ids of the migrations ``records`` (table parameters) record."""
    return {k[len(MIGRATION_PREFIX):] for k in records if k.startswith(MIGRATION_PREFIX)}


def found_elsewhere(desired: Catalog, live: Catalog) -> dict[str, dict[str, str]]:
    """For each declared live table, the migrations naming it that it has no record of, though another live table
    records them and their changes to it are in place (id -> that record): an earlier apply made them and did not
    record them on it."""
    holders: dict[str, str] = {}
    for holder in live.objects.values():
        if isinstance(holder, Table):
            for id_, record in sorted(holder.migrations.items()):
                holders.setdefault(id_, record)
    named: dict[str, list[Migration]] = {}  # the recorded migrations naming each table, in order
    for migration in desired.migrations:
        if migration.id in holders:
            for table in dict.fromkeys(c.table for c in migration.changes):
                named.setdefault(table, []).append(migration)
    found: dict[str, dict[str, str]] = {}
    for key, migrations in sorted(named.items()):
        have = live.get(key)
        if not isinstance(have, Table) or not isinstance(desired.get(key), Table):
            continue
        names = [c.name for c in have.all_columns]
        records = {m.id: holders[m.id] for m in migrations
                   if m.id not in have.migrations and in_place(m.changes_for(key), names)}
        if records:
            found[key] = records
    return found


def with_found(live: Catalog, found: Mapping[str, Mapping[str, str]]) -> Catalog:
    """``live`` with each table holding the records ``found`` for it (``found_elsewhere``), as the diff reads it."""
    objects = dict(live.objects)
    for key, records in found.items():
        table = objects[key]
        assert isinstance(table, Table)  # found_elsewhere finds tables only
        objects[key] = replace(table, migrations={**table.migrations, **records})
    return replace(live, objects=objects)


def found_warnings(found: Mapping[str, Mapping[str, str]]) -> tuple[str, ...]:
    """What the plan says of the records ``found_elsewhere`` found."""
    return tuple(f"{key}: migration {id_} is in place on it but not recorded (an earlier apply recorded it on another "
                 "table only): this plan records it, and replays nothing of it" for key, records in sorted(found.items())
                 for id_ in sorted(records))


def in_place(changes: Sequence[MigrationChange], names: Sequence[str]) -> bool:
    """Whether a table whose columns are ``names`` shows every change of ``changes`` (a migration's, to it) made, and
    at least one: read backwards from the last, each rename's new name is there and its old one not, each dropped
    column is not, and each reorder's columns are in its order."""
    now = list(names)
    shown = False
    for change in reversed(changes):
        match change:
            case RenameColumn(old=old, new=new):
                if new not in now or old in now:
                    return False
                now[now.index(new)], shown = old, True
            case DropColumn(column=column):
                if column in now:
                    return False
                now.append(column)
                shown = True
            case ReorderColumns(order=order):
                if [n for n in now if n in order] != [n for n in order if n in now]:
                    return False
            case PartitionsMode() | AcceptLoss():
                pass  # nothing a table's columns show
            case _ as unreachable:
                assert_never(unreachable)
    return shown
