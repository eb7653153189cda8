"""Drift: what changed in the metastore outside schemaflow since schemaflow last wrote each object.

Every write schemaflow makes records ``state_digest`` of the object as the write left it: one short
hash per aspect (columns, partitions, storage, comment, managed properties, a view's SQL). Drift
reads each object again and names the aspects whose hash is no longer the recorded one: a Spark
job's ``ADD COLUMNS``, a hand-made property change. While the schemas still declare what was
applied (the object's version is their fingerprint), the declared object is what schemaflow left,
so each changed aspect is spelt out against it: the column added, the property's old and new
value, with what to do about it. An Iceberg table speaks Iceberg: a column another writer renamed keeps its
field id (its earlier names are in the table's metadata), so it is a rename, not a drop and an add; a new
partition spec or sort order is named. A declared object whose records are gone (re-created from a
notebook, which drops every parameter) or that is missing is reported as such, and so is an object
made in a managed database outside schemaflow (unless the project leaves it alone, see ``scope``). A table
whose own metadata could not be read (``catalog.metadata_readers``) is not compared: its line says why.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath
from collections.abc import Callable, Mapping, Sequence

import yaml

from schemaflow.catalog.backend import CatalogReader
from schemaflow.catalog.metadata_bounds import metadata_bounds
from schemaflow.model import (APPLIED_AT_KEY, APPLIED_COMMIT_KEY, APPLIED_STATE_KEY, Column, Object, PartitionField,
                              SortTerm, Table, View, changed_aspects, column_type, fingerprint, state_digest)
from schemaflow.wording import short_commit, value_change

MISSING = "missing"          # declared, but not in the metastore
UNRECORDED = "unrecorded"    # declared and there, but without schemaflow's record of it
OUTSIDE = "undeclared"       # there, in a managed database, never declared nor applied by schemaflow
UNREAD = "unreadable"        # applied, and its own metadata could not be read now: not compared
_STORAGE = ("format", "external", "location", "serde", "input_format", "output_format")


@dataclass(frozen=True)
class Drift:
    object: str
    aspects: tuple[str, ...]   # what changed, or (MISSING,), (UNRECORDED,) or (OUTSIDE,)
    applied_at: str | None = None
    commit: str | None = None
    details: tuple[str, ...] = ()  # what changed in each aspect, and what to do about it
    unreadable: str | None = None  # (UNREAD,): why its own metadata was not read, and what to do

    def describe(self) -> str:
        if self.aspects == (MISSING,):
            return f"{self.object}: declared but not in the metastore (dropped outside schemaflow, or never applied)"
        if self.aspects == (UNRECORDED,):
            return (f"{self.object}: no record of what schemaflow applied (re-created outside schemaflow, "
                    "or never applied): plan shows how it differs")
        if self.aspects == (UNREAD,):
            return f"{self.object}: not compared, its own metadata could not be read: {self.unreadable}"
        if self.aspects == (OUTSIDE,):
            database = self.object.partition(".")[0]
            return (f"{self.object}: created outside schemaflow and not declared: declare it (schemaflow import "
                    f"--database {database} writes the files of what is there), exclude it in schemaflow.yaml, "
                    "or let a plan with --allow-destructive drop it")
        commit = f"commit {short_commit(self.commit)}" if self.commit else "commit unknown"
        since = f"since schemaflow applied it at {self.applied_at or '?'} ({commit})"
        return f"{self.object}: {', '.join(self.aspects)} changed {since}"


def read_drift(metastore: CatalogReader, declared: Mapping[str, Object], databases: tuple[str, ...],
               left_alone: Callable[[Object], bool] = lambda obj: False) -> list[Drift]:
    """Every object in ``databases`` that changed since schemaflow wrote it, every ``declared``
    object that is missing or carries no record, and every object there that is neither declared
    nor recorded (but those ``left_alone`` says the project leaves alone); sorted by name."""
    drifts: list[Drift] = []
    seen: set[str] = set()
    with metadata_bounds():
        for database in sorted(set(databases) & set(metastore.databases())):
            drifts += _database_drift(metastore, database, declared, left_alone, seen)
    drifts += [Drift(key, (MISSING,)) for key in declared.keys() - seen]
    return sorted(drifts, key=lambda d: d.object)


def _database_drift(metastore: CatalogReader, database: str, declared: Mapping[str, Object],
                    left_alone: Callable[[Object], bool], seen: set[str]) -> list[Drift]:
    """What ``read_drift`` finds in ``database``, adding the objects it holds to ``seen``."""
    drifts = []
    for entry in metastore.entries(database):
        live, parameters = entry.object, entry.parameters
        key = live.key
        seen.add(key)
        recorded = parameters.get(APPLIED_STATE_KEY)
        if not recorded:
            if key in declared:
                drifts.append(Drift(key, (UNRECORDED,)))
            elif not left_alone(live):
                drifts.append(Drift(key, (OUTSIDE,)))
            continue
        if isinstance(live, Table) and live.unreadable:
            drifts.append(Drift(key, (UNREAD,), parameters.get(APPLIED_AT_KEY), parameters.get(APPLIED_COMMIT_KEY),
                                unreadable=live.unreadable))
            continue
        changed = changed_aspects(recorded, state_digest(live))
        if changed:
            want = declared.get(key)
            details = explain(want, live, changed) if want is not None else ()
            drifts.append(Drift(key, changed, parameters.get(APPLIED_AT_KEY), parameters.get(APPLIED_COMMIT_KEY),
                                details))
    return drifts


def explain(declared: Object, live: Object, aspects: Sequence[str]) -> tuple[str, ...]:
    """What changed in each of ``aspects`` of ``live``, against ``declared`` when it is what was applied."""
    if live.version != fingerprint(declared) or type(live) is not type(declared):
        return ("the schemas changed since that apply as well: plan shows how the metastore differs from them",)
    lines: list[str] = []
    if isinstance(declared, Table) and isinstance(live, Table):
        if "columns" in aspects:
            lines += _columns(declared, declared.columns, live.columns, "column",
                              live.iceberg.former if live.iceberg else lambda name: ())
        if "partitions" in aspects:
            lines += _columns(declared, declared.partition_columns, live.partition_columns, "partition column")
        if "storage" in aspects:
            lines += _storage(declared, live)
        if "layout" in aspects:
            lines += _layout(declared, live)
    if isinstance(declared, View) and isinstance(live, View):
        if "columns" in aspects:
            lines.append(value_change("columns", ", ".join(c.name for c in declared.columns) or None,
                                      ", ".join(c.name for c in live.columns)) if declared.columns else
                         "the view's column names or comments are no longer those of its apply: plan shows them")
        if "partitions" in aspects:
            lines.append(value_change("partitioned on", ", ".join(declared.partitioned_on) or None,
                                      ", ".join(live.partitioned_on) or None))
    if "comment" in aspects:
        lines.append(value_change("comment", declared.comment, live.comment))
    if "properties" in aspects:
        keys = sorted(set(declared.properties) | (set(live.managed_keys) & set(live.properties)))
        lines += [value_change(f"property {k}", declared.properties.get(k), live.properties.get(k))
                  for k in keys if declared.properties.get(k) != live.properties.get(k)]
    if "sql" in aspects:
        lines.append(f"the SQL is no longer the one in {_file(declared)}: plan shows the difference")
    return tuple(lines)


def _columns(declared: Table, want: Sequence[Column], have: Sequence[Column], what: str,
             former: Callable[[str], tuple[str, ...]] = lambda name: ()) -> list[str]:
    """Columns added, removed, renamed (``former``: an Iceberg field id's earlier names), retyped, re-commented or
    reordered since the apply, with the ways back."""
    wanted = {c.name: c for c in want}
    there = {c.name: c for c in have}
    # A live column whose field id had a declared name that is no longer there: another writer renamed it.
    renamed = {c.name: old for c in have if c.name not in wanted
               for old in former(c.name)[:1] if old in wanted and old not in there}
    as_declared = {renamed.get(c.name, c.name): c for c in have}
    lines = []
    for column in have:
        if column.name in renamed:
            old = renamed[column.name]
            lines.append(f"{what} {old} renamed to {column.name} (its Iceberg field id kept, so its values): declare "
                         f"it as {column.name} in {_file(declared)}, or rename it back with a migration "
                         f"(- rename_column: {{table: {_declared_key(declared)}, from: {column.name}, to: {old}}})")
        elif column.name not in wanted:
            # As a schema file writes a column: one flow mapping, quoted where YAML needs it ("decimal(5,2)").
            entry = yaml.safe_dump({"name": column.name, "type": column_type(column)}, default_flow_style=True,
                                   sort_keys=False, width=1_000_000).strip()
            lines.append(f"{what} {column.name} {column_type(column)} added: declare it in {_file(declared)} "
                         f"({entry}), or drop it with a migration (- drop_column: {{table: {_declared_key(declared)}, "
                         f"column: {column.name}}})")
    for column in want:
        now = as_declared.get(column.name)
        if now is None:
            lines.append(f"{what} {column.name} removed: the next apply adds it back, empty")
            continue
        if column_type(column) != column_type(now):
            lines.append(value_change(f"type of {what} {now.name}", column_type(column), column_type(now)))
        if column.comment != now.comment:
            lines.append(value_change(f"comment of {what} {now.name}", column.comment, now.comment))
    common = [renamed.get(c.name, c.name) for c in have if renamed.get(c.name, c.name) in wanted]
    if common != [c.name for c in want if c.name in as_declared]:
        lines.append(value_change(f"order of the {what}s", ", ".join(c.name for c in want),
                                  ", ".join(c.name for c in have if renamed.get(c.name, c.name) in wanted)))
    return lines


def _layout(declared: Table, live: Table) -> list[str]:
    """An Iceberg table's partition spec and sort order, where another writer changed them, with the way back."""
    back = f"the next apply sets the declared one again (for data written after it), or declare this one in {_file(declared)}"
    return [f"{value_change(what, _terms(want), _terms(have))}: {back}"
            for what, want, have in (("partition spec", declared.partition_spec, live.partition_spec),
                                     ("sort order", declared.sort_order, live.sort_order)) if want != have]


def _terms(terms: Sequence[PartitionField | SortTerm]) -> str | None:
    return ", ".join(map(str, terms)) or None


def _storage(declared: Table, live: Table) -> list[str]:
    """Storage settings that differ from the declared ones (a location the metastore chose is not one)."""
    lines = [value_change(f"storage {name}", str(getattr(declared, name)), str(getattr(live, name)))
             for name in _STORAGE if getattr(declared, name) is not None
             and getattr(declared, name) != getattr(live, name)]
    keys = sorted(declared.serde_properties.keys() | live.serde_properties.keys())
    lines += [value_change(f"storage property {k}", declared.serde_properties.get(k), live.serde_properties.get(k))
              for k in keys if declared.serde_properties.get(k) != live.serde_properties.get(k)]
    if declared.bucketing != live.bucketing:
        lines.append(value_change("buckets", str(declared.bucketing and declared.bucketing.count),
                                  str(live.bucketing and live.bucketing.count)))
    return lines


def _file(declared: Object) -> str:
    return declared.source.path if declared.source else "schemas/"


def _declared_key(declared: Object) -> str:
    """The object's name as the project writes it (on a target, its database may have another name)."""
    if declared.source is None:
        return declared.key
    path = PurePosixPath(declared.source.path)
    return f"{path.parent.name}.{path.stem}"
