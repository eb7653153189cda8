"""What a plan asks of its catalog, fitted to what the catalog can do (``capabilities.Capabilities``).

A plan is made for one catalog, and the planner reads its capabilities rather than find out half-way through an
apply. Three of them shape the steps:

- ``renames``: a rewrite (``plan.rewrite``) swaps its copy in by renaming the table to its backup and the copy to the
  table, and a conversion to Iceberg in place keeps the Parquet table by renaming it; a restore (``plan.restore``) is
  three renames. A catalog that renames no tables (an Iceberg REST catalog, Glue) takes none of them: such a change
  becomes a blocked step saying why and what to do instead, which ``--allow-destructive`` does not unblock (it allows
  what the catalog can do), and the object's other steps wait on it as on any change that cannot be made.
- ``engine``: where an engine (Spark) runs the catalog's statements, it analyses the live views a statement resolves,
  which ``plan.live_code`` guards against; a catalog with none stores a view's SQL as text and analyses nothing, so its
  plans carry no check of live views and drop a view as a catalog entry. What a change breaks of the views over it is
  still found from the SQL the catalog stores (``plan.invalidation`` reads it with sqlglot, no engine needed).
- ``commits_delta``: a Delta table's changes are commits to its log, which schemaflow makes through Spark with
  delta-spark; a catalog whose writer has no engine for that (Glue) holds Delta tables, and a plan reads and diffs them
  there, but each change to one is a blocked step saying where it can be made.
- ``drop_purges``: the Hive metastore deletes a managed table's files with its entry; an Iceberg REST catalog and Glue
  drop the entry only, and a drop's note says so (with the catalog's own name), so the reviewer is told what happens
  to the data.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from schemaflow.capabilities import Capabilities
from schemaflow.errors import SchemaflowError
from schemaflow.output_safety import one_line
from schemaflow.plan.changes import Change, CreateTable, DropLeftover, DropTable, DropView, Unsupported
from schemaflow.plan.delta import AlterDeltaTable, DeltaProtocol
from schemaflow.plan.diff import RECREATE
from schemaflow.plan.iceberg import ConvertToIceberg, staging_name
from schemaflow.plan.kinds import ObjectType
from schemaflow.plan.rewrite import RewriteTable
from schemaflow.sql.table_kinds import ColumnChanges, kind_of

# Where to make a change that needs renames: a catalog that has them; and how to have an Iceberg table of it without.
_ELSEWHERE = "or keep the table in a Hive metastore (metastore.type hive), which renames tables"
_DELTA_ELSEWHERE = ("make it with Spark and delta-spark where this catalog is Spark's metastore (an EMR or Glue job), "
                   "then declare the table as it is; or keep the table in a Hive metastore (metastore.type hive)")
_COPY = f"create the Iceberg table under another name and copy the rows into it, {_ELSEWHERE}"


def renaming(change: Change, capabilities: Capabilities, backend: str) -> Change:
    """``change``, or, where it renames tables and the catalog of ``backend`` cannot, the blocked step that says so."""
    if capabilities.renames:
        return change
    if isinstance(change, RewriteTable):
        key = change.key
        why = (f"needs a rewrite, and {_catalog(capabilities)} renames no tables, so schemaflow cannot rewrite {key} "
               f"there (metastore.type {backend}; a rewrite copies its rows into {staging_name(key)} and swaps that "
               "in by renaming)")
        way_out = _COPY if change.iceberg is not None else f"{RECREATE}, {_ELSEWHERE}"
        return Unsupported(key, ObjectType.TABLE, "; ".join(change.reasons), way_out, change.values, why)
    if isinstance(change, ConvertToIceberg):
        why = (f"keeps the Parquet table by renaming it to {change.backup}, and {_catalog(capabilities)} renames no "
               f"tables (metastore.type {backend})")
        return Unsupported(change.key, ObjectType.TABLE, "converting to Iceberg in place", _COPY, why=why)
    return change


def delta_committing(change: Change, capabilities: Capabilities, backend: str) -> Change:
    """``change``, or, where it commits to a Delta table's log and the catalog of ``backend`` commits none, the blocked
    step that says so."""
    if capabilities.commits_delta:
        return change
    match change:
        case AlterDeltaTable() | DeltaProtocol():
            what = "changing the Delta table"
        case CreateTable(table=table) if kind_of(table).column_changes == ColumnChanges.DELTA:
            what = "creating the Delta table"
        case _:
            return change
    why = (f"commits to its log, and {_catalog(capabilities)} (metastore.type {backend}) commits no Delta changes in "
           "this release: schemaflow makes them through Spark with delta-spark, an engine this catalog's backend has "
           "none of")
    planned = change.to_step()  # what the change would make, shown with the blocked step
    return Unsupported(change.key, ObjectType.TABLE, what, _DELTA_ELSEWHERE, (planned.summary, *planned.values), why)


def dropping(change: Change, capabilities: Capabilities) -> Change:
    """``change``, a table's drop noted as the catalog drops it: what it calls itself, and whether the files go."""
    if isinstance(change, DropTable) and not isinstance(change, DropLeftover):
        return replace(change, catalog=capabilities.noun, purges=capabilities.drop_purges)
    return change


def without_engine(changes: Sequence[Change]) -> list[Change]:
    """``changes`` as a catalog with no engine runs them: each view dropped as a catalog entry."""
    return [replace(c, engine=False) if isinstance(c, DropView) else c for c in changes]


def check_restorable(key: str, capabilities: Capabilities, backend: str) -> None:
    """Refuse a restore of ``key`` where the catalog of ``backend`` renames no tables, in one line."""
    if not capabilities.renames:
        raise SchemaflowError(f"{one_line(key)}: {_catalog(capabilities)} (metastore.type {backend}) renames no "
                              "tables, so schemaflow restores no table there (a restore swaps the backup in by "
                              "renaming): nor does it rewrite one there, so there is no backup to restore. Nothing was "
                              "restored")


def _catalog(capabilities: Capabilities) -> str:
    return f"the {capabilities.noun}"
