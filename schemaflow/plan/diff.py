"""The difference between a desired and a live catalog, as changes in a deterministic order.

Set algebra on object names first (create what is only desired, drop what is only live), then a
comparison of each common object. Columns follow Hive's prefix rule: when the live columns are a
prefix of the desired ones the change is an append plus comment updates; anything else (rename,
drop, reorder, retype) cannot be inferred from two states and is reported as unsupported here.
"""
from __future__ import annotations

from typing import Mapping

from schemaflow.model import MANAGED_KEYS_KEY, VERSION_KEY, Catalog, Column, Object, Table, View, fingerprint
from schemaflow.plan.changes import (AddColumns, Change, CreateDatabase, CreateTable, CreateView, DropTable,
                                     DropView, ReplaceView, SetColumnComment, SetTableComment, Unsupported)
from schemaflow.sql.views import normalize_sql

_RECREATE = "drop it and re-create it (--allow-destructive), or create a new table and copy the data"


def diff(desired: Catalog, live: Catalog) -> list[Change]:
    """Changes that turn ``live`` into ``desired``: databases first, then objects by name."""
    changes: list[Change] = [CreateDatabase(d) for d in sorted(set(desired.databases) - set(live.databases))]
    for key in sorted(desired.objects.keys() | live.objects.keys()):
        want, have = desired.get(key), live.get(key)
        if have is None:
            changes.append(create(want))
        elif want is None:
            changes.append(DropTable(have) if isinstance(have, Table) else DropView(have))
        elif want.kind != have.kind:
            changes += [DropTable(have) if isinstance(have, Table) else DropView(have), create(want)]
        elif isinstance(want, Table):
            changes += diff_table(want, have)
        else:
            changes += diff_view(want, have)
    return changes


def create(obj: Object) -> Change:
    return CreateTable(obj) if isinstance(obj, Table) else CreateView(obj)


def diff_table(want: Table, have: Table) -> list[Change]:
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
                            f"{_names(want.partition_columns)}", _RECREATE)]
    changes: list[Change] = []
    for old, new in zip(have.partition_columns, want.partition_columns):
        if old.comment != new.comment:
            changes.append(Unsupported(key, "table", f"changing the comment of partition column {new.name}",
                                       "Spark SQL cannot alter partition columns; keep the live comment for now"))
    common = len(have.columns)
    if _shape(want.columns[:common]) != _shape(have.columns):
        return changes + [Unsupported(key, "table", "changing columns " + _column_delta(have.columns, want.columns),
                                      "renames, drops, reorders and type changes need column evolution, "
                                      "which is not supported yet")]
    if want.columns[common:]:
        changes.append(AddColumns(key, want.columns[common:], partitioned=bool(want.partition_columns)))
    changes += [SetColumnComment(key, new.name, old.comment, new.comment)
                for old, new in zip(have.columns, want.columns) if old.comment != new.comment]
    if want.comment != have.comment:
        changes.append(SetTableComment(key, have.comment, want.comment))
    return changes


def diff_view(want: View, have: View) -> list[Change]:
    reasons: list[str] = []
    if normalize_sql(want.sql) != normalize_sql(have.sql):
        reasons.append("SQL changed")
    if _names(want.columns) != _names(have.columns):
        reasons.append(f"columns {_names(have.columns)} -> {_names(want.columns)}")
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
    return [ReplaceView(want, tuple(reasons), reshapes=reshaped)] if reasons else []


def property_delta(want: Object, have: Object | None) -> tuple[dict[str, str], tuple[str, ...]]:
    """Managed properties to set and to unset; keys schemaflow never managed are left alone."""
    live = {} if have is None else have.properties
    to_set = {k: v for k, v in sorted(want.properties.items()) if live.get(k) != v}
    managed_before = () if have is None else have.managed_keys
    to_unset = tuple(sorted(k for k in managed_before if k not in want.properties and k in live))
    return to_set, to_unset


def stamp_parameters(want: Object, have: Object | None, changed: Mapping[str, str],
                     removed: tuple[str, ...]) -> tuple[dict[str, str], tuple[str, ...]]:
    """What the final write of an object sets and unsets: properties, the version, the managed keys."""
    to_set = {**changed, VERSION_KEY: fingerprint(want)}
    to_unset = removed
    if want.properties:
        to_set[MANAGED_KEYS_KEY] = ",".join(sorted(want.properties))
    elif have is not None and have.managed_keys:
        to_unset += (MANAGED_KEYS_KEY,)
    return to_set, to_unset


def _shape(columns: tuple[Column, ...]) -> list[tuple[str, str | None]]:
    return [(c.name, c.type) for c in columns]


def _names(columns: tuple[Column, ...]) -> list[str]:
    return [c.name for c in columns]


def _column_delta(old: tuple[Column, ...], new: tuple[Column, ...]) -> str:
    old_types, new_types = dict(_shape(old)), dict(_shape(new))
    parts = [f"-{n}" for n in old_types if n not in new_types]
    parts += [f"+{n}" for n in new_types if n not in old_types]
    parts += [f"{n} {old_types[n]} -> {new_types[n]}" for n in new_types
              if n in old_types and old_types[n] != new_types[n]]
    if not parts:
        parts.append(f"order {_names(old)} -> {_names(new)}")
    return "(" + ", ".join(parts) + ")"


def _same_location(a: str | None, b: str | None) -> bool:
    """Compare locations as the metastore stores them: a bare local path gains ``file:``."""
    def norm(p: str | None) -> str:
        p = (p or "").rstrip("/")
        return "file:" + p if p.startswith("/") else p
    return norm(a) == norm(b)
