"""The difference between a desired and a live catalog, as changes in a deterministic order.

Set algebra on object names first (create what is only desired, drop what is only live), then a
comparison of each common object. A table's columns evolve through its pending migrations and
what the diff can infer (``plan.evolution``): a plain append stays a table-only ``ADD COLUMNS``,
anything else is one ``AlterColumns`` that cascades to the partitions unless a migration restricts it.
Storage and partition-key changes cannot be made in place and are reported as unsupported.
"""
from __future__ import annotations

from typing import Sequence

from schemaflow.model import Catalog, Column, Migration, Object, Table, View
from schemaflow.plan.changes import (AddColumns, AlterColumns, Change, CreateDatabase, CreateTable, CreateView,
                                     DropTable, DropView, ReplaceView, SetTableComment, Unsupported)
from schemaflow.plan.evolution import APPEND, SAME, evolve
from schemaflow.sql.views import normalize_sql

_RECREATE = "drop it and re-create it (--allow-destructive), or create a new table and copy the data"


def diff(desired: Catalog, live: Catalog) -> list[Change]:
    """Changes that turn ``live`` into ``desired``: databases first, then objects by name."""
    changes: list[Change] = [CreateDatabase(d) for d in sorted(set(desired.databases) - set(live.databases))]
    for key in sorted(desired.objects.keys() | live.objects.keys()):
        want, have = desired.get(key), live.get(key)
        if have is None:
            changes.append(create(desired.objects[key]))  # the key is desired when it is not live
        elif want is None:
            changes.append(DropTable(have) if isinstance(have, Table) else DropView(have))
        elif want.kind != have.kind:
            changes += [DropTable(have) if isinstance(have, Table) else DropView(have), create(want)]
        elif isinstance(want, Table):
            assert isinstance(have, Table)  # the same kind
            changes += diff_table(want, have, desired.migrations)
        else:
            assert isinstance(have, View)  # the same kind
            changes += diff_view(want, have)
    return changes


def create(obj: Object) -> Change:
    return CreateTable(obj) if isinstance(obj, Table) else CreateView(obj)


def diff_table(want: Table, have: Table, migrations: Sequence[Migration] = ()) -> list[Change]:
    key = want.key
    storage = [f"{what} {old!r} -> {new!r}" for what, old, new in (
        ("format", have.format, want.format),
        ("external", have.external, want.external),
    ) if old != new]
    if want.external and not _same_location(want.location, have.location):
        storage.append(f"location {have.location!r} -> {want.location!r}")
    if storage:
        return [Unsupported(key, "table", "changing storage (" + ", ".join(storage) + ")", _RECREATE)]
    if _shape(want.partition_columns) != _shape(have.partition_columns):
        return [Unsupported(key, "table", f"changing partition columns {_names(have.partition_columns)} -> "
                            f"{_names(want.partition_columns)}",
                            "partition keys cannot change in place: " + _RECREATE)]
    evolution = evolve(have, want, migrations)
    if evolution.problems:
        return [Unsupported(key, "table", p.what, p.way_out) for p in evolution.problems]
    changes: list[Change] = []
    keys_commented = want.partition_columns != have.partition_columns or any(
        o.comment != n.comment for o, n in zip(have.partition_columns, want.partition_columns))
    partitioned = bool(want.partition_columns)
    if evolution.kind == APPEND and not keys_commented and evolution.mode != "cascade":
        changes.append(AddColumns(key, want.columns[len(have.columns):], partitioned=partitioned))
    elif evolution.kind != SAME or keys_commented or evolution.mode == "cascade":
        changes.append(AlterColumns(key, evolution, want.partition_columns, want.format,
                                    cascade=partitioned and evolution.mode != "restrict"))
    if want.comment != have.comment:
        changes.append(SetTableComment(key, have.comment, want.comment))
    return changes


def diff_view(want: View, have: View) -> list[Change]:
    reasons: list[str] = []
    sql_changed = normalize_sql(want.sql) != normalize_sql(have.sql)
    if sql_changed:
        reasons.append("SQL changed")
    if _names(want.columns) != _names(have.columns):
        reasons.append(f"columns {_names(have.columns)} -> {_names(want.columns)}")
        new = [name for name in _names(want.columns) if name not in _names(have.columns)]
        if not sql_changed and set(_names(have.columns)) < set(_names(want.columns)):
            reasons.append(f"recompile: Spark expanded * when it created the view, so {', '.join(new)} "
                           "would not appear otherwise")
    reshaped = bool(reasons)
    # An undeclared view column comment is Spark's to choose: it carries over the comment of the
    # column selected (through aliases too), so only declared comments are compared.
    if not reshaped and any(w.comment is not None and w.comment != h.comment
                            for w, h in zip(want.columns, have.columns)):
        reasons.append("column comments changed")
    if want.comment != have.comment:
        reasons.append("comment changed")
    if want.partitioned_on != have.partitioned_on:
        reasons.append(f"partitioned on {list(have.partitioned_on)} -> {list(want.partitioned_on)}")
    return [ReplaceView(want, tuple(reasons), reshapes=reshaped, deliberate=sql_changed)] if reasons else []


def property_delta(want: Object, have: Object | None) -> tuple[dict[str, str], tuple[str, ...]]:
    """Managed properties to set and to unset; keys schemaflow never managed are left alone."""
    live = {} if have is None else have.properties
    to_set = {k: v for k, v in sorted(want.properties.items()) if live.get(k) != v}
    managed_before = () if have is None else have.managed_keys
    to_unset = tuple(sorted(k for k in managed_before if k not in want.properties and k in live))
    return to_set, to_unset


def _shape(columns: tuple[Column, ...]) -> list[tuple[str, str | None]]:
    return [(c.name, c.type) for c in columns]


def _names(columns: tuple[Column, ...]) -> list[str]:
    return [c.name for c in columns]


def _same_location(a: str | None, b: str | None) -> bool:
    """Compare locations as the metastore stores them: a bare local path gains ``file:``."""
    def norm(p: str | None) -> str:
        p = (p or "").rstrip("/")
        return "file:" + p if p.startswith("/") else p
    return norm(a) == norm(b)
