"""A plan's actions worded for a catalog that runs no SQL (an Iceberg REST catalog, AWS Glue): what a reviewer reads.

On the Hive metastore an action shows the Spark SQL (or metastore call) its writer runs (``plan.steps``). Another
catalog runs neither: its backend's ``Wording`` (``capabilities``) names the catalog's own call for each kind of
action, and this module says, in terms that hold for any catalog, what that call changes. Each action is a first line
naming the change and the call::

    -- iceberg_rest: create namespace sales (POST /v1/{prefix}/namespaces)

then one line for each thing it sets (columns with their types, comments, properties set and unset, a commit's
requirements, partitions), and a view's SQL as the catalog will store it, indented under the line that says so. A kind
the backend names no call for is one its catalog does not take: the line says apply refuses it.

Names and types are shown through ``output_safety.one_line`` and values (comments, properties, locations) as Python
literals, so a newline or a control character in them is an escape, never a line of its own; the terminal and the
pull-request comment escape what they show on top of that, as for the Hive metastore's SQL.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import assert_never

from schemaflow.capabilities import Wording
from schemaflow.model import VERSION_KEY, Column, Table
from schemaflow.output_safety import one_line
from schemaflow.plan.kinds import ObjectType
from schemaflow.plan.steps import (Action, AddColumnsAction, AddDatabase, ChangeViewPartitions, CheckLiveViews,
                                   CreateTableAction, CreateViewAction, DeltaAlter, DeltaCreate, DropTableAction,
                                   DropViewAction, IcebergCommit,
                                   ForgetEntryAction, KeepViewPartitions, PartitionView, RegisterTableAction,
                                   RestoreBackup, RewriteRows, SetColumnCommentsAction, SetColumns,
                                   SetDatabaseParameters, SetParameters, SetStorageAction, SetTableCommentAction,
                                   listed_partitions)
from schemaflow.sql.ddl import CLAIM
from schemaflow.wording import plural

# The kinds of action that run one of two calls, and the names of their variants (``capabilities.Wording``).
VARIANTS = {"iceberg_commit": ("create", "convert"), "create_view": ("replace",), "set_parameters": ("view",),
            "set_columns": ("cascade",)}
DETAIL = "--   "   # the lines under an action's first line
SQL_INDENT = "    "  # a view's SQL under the line that introduces it: never at the start of a line of schemaflow's


def words(action: Action, catalog: str, wording: Wording, object_type: ObjectType, verbose: bool = False) -> str:
    """``action`` as a reviewer reads it for the catalog backend ``catalog``, worded by its ``wording``;
    ``object_type`` is that of the step it is in (a view's properties are written through another call than a
    table's); ``verbose`` shows the run's claim a created object is born with."""
    thing = wording.database
    match action:
        case AddDatabase():
            database = action.database
            said = [f"comment {database.comment!r}"] if database.comment else []
            said += [f"location {database.location!r}" if database.location else "no location declared"]
            said += _set(database.properties)
            return _action(catalog, wording, action.kind, f"create {thing} {_name(database.name)}, unless it exists",
                           said)
        case SetDatabaseParameters():
            return _action(catalog, wording, action.kind, f"set properties of {thing} {_name(action.database)}",
                           _set(action.properties))
        case CreateTableAction():
            table = action.table
            where = [] if table.location else ["no location declared"]
            return _action(catalog, wording, action.kind, f"create table {_name(table.key)}",
                           _table(table) + where + _claimed(verbose))
        case AddColumnsAction():
            return _action(catalog, wording, action.kind, f"add {plural(len(action.columns), 'column')} to "
                           f"{_name(action.object)}", _columns("column", action.columns))
        case SetTableCommentAction():
            comment = f"comment {action.comment!r}" if action.comment is not None else "comment removed"
            return _action(catalog, wording, action.kind, f"set the comment of table {_name(action.object)}",
                           [comment])
        case SetColumnCommentsAction():
            said = [f"column {_name(c.name)}: " + (f"comment {c.comment!r}" if c.comment else "comment removed")
                    for c in action.columns]
            return _action(catalog, wording, action.kind, f"set column comments of {_name(action.object)}", said)
        case DropTableAction():
            return _action(catalog, wording, action.kind, f"drop table {_name(action.object)}", [])
        case CreateViewAction():
            view = action.view
            said = _columns("column", view.columns) + ([f"comment {view.comment!r}"] if view.comment else [])
            said += _claimed(verbose)
            said += [f"SQL, stored as written (its unqualified names resolve in {_name(view.database)}):"]
            sql = [SQL_INDENT + line for line in view.sql.split("\n")]
            verb, variant = ("replace", "replace") if action.replace else ("create", None)
            return _action(catalog, wording, action.kind, f"{verb} view {_name(view.key)}", said, variant, sql)
        case DropViewAction():
            return _action(catalog, wording, action.kind, f"drop view {_name(action.object)}", [])
        case SetParameters():
            of_view = object_type == ObjectType.VIEW
            said = _set(action.set) + [f"unset {_name(key)}" for key in action.unset]
            return _action(catalog, wording, action.kind, f"set properties of {'view' if of_view else 'table'} "
                           f"{_name(action.object)}", said, "view" if of_view else None)
        case SetColumns():
            mode = ("every partition follows" if action.cascade else "partitions keep theirs")
            said = (_columns("column", action.columns) + _columns("partition column", action.partition_columns)
                    + [mode] + _set(action.parameters))
            return _action(catalog, wording, action.kind, f"replace the columns of {_name(action.object)}", said,
                           "cascade" if action.cascade else None)
        case SetStorageAction():
            said = [f"storage property {_name(k)}={v!r}" for k, v in sorted(action.serde_properties.items())]
            said += [] if action.buckets is None else [f"{action.buckets} buckets"]
            return _action(catalog, wording, action.kind, f"set the storage of {_name(action.object)}", said)
        case PartitionView():
            return _action(catalog, wording, action.kind, f"partition view {_name(action.object)} on "
                           f"({', '.join(map(_name, action.columns))})", [])
        case ChangeViewPartitions():
            said = [f"{verb} {plural(len(values), 'partition')} ({one_line(listed_partitions(action.columns, values))})"
                    for verb, values in (("drop", action.drop), ("add", action.add)) if values]
            return _action(catalog, wording, action.kind, f"change the partitions of view {_name(action.object)}",
                           said)
        case KeepViewPartitions():
            return _action(catalog, wording, action.kind, f"read the partitions of view {_name(action.object)}", [])
        case IcebergCommit():
            return _commit(action, catalog, wording)
        case DeltaCreate():
            return _action(catalog, wording, action.kind, f"create Delta table {_name(action.object)}",
                           _table(action.table))
        case DeltaAlter():
            said = [f"on top of Delta log version {action.log_version} of table {one_line(action.table_id)}"]
            said += _set(action.set) + [_column("add column", c) for c in action.add]
            said += [f"rename column {_name(old)} to {_name(new)}" for old, new in action.rename]
            said += [f"drop column {_name(name)}" for name in action.drop]
            said += [f"change the type of column {_name(c.name)} to {one_line(c.type or '')}" for c in action.retype]
            said += [f"comment of column {_name(c.name)}: {c.comment!r}" for c in action.comments]
            said += [f"move column {_name(name)} " + (f"after {_name(after)}" if after else "first")
                     for name, after in action.moves]
            said += [f"comment {comment!r}" for comment in action.comment]
            said += [f"unset {_name(key)}" for key in action.unset]
            return _action(catalog, wording, action.kind, f"change Delta table {_name(action.object)}", said)
        case RewriteRows():
            return _action(catalog, wording, action.kind, f"rewrite table {_name(action.object)} through "
                           f"{_name(action.staging)}, keeping it as {_name(action.backup)}", _table(action.table))
        case RestoreBackup():
            return _action(catalog, wording, action.kind, f"restore table {_name(action.object)} from "
                           f"{_name(action.backup)}", [])
        case RegisterTableAction():
            return _action(catalog, wording, action.kind, f"register table {_name(action.object)}", [
                f"metadata file {action.metadata_location!r}, its current one in {one_line(action.source)}",
                "no file written or copied"])
        case ForgetEntryAction():  # run by the catalog moved from, whose calls this wording does not name
            return (f"-- {one_line(action.source)}: forget the {action.object_type} entry {_name(action.object)} in the "
                    "catalog moved from, its files kept (they are the moved object's)")
        case CheckLiveViews():
            said = [f"{_name(key)}: " + ("(could not be read)" if sql is None else f"{sql.sql!r}")
                    for key, sql in sorted(action.views.items())]
            return _action(catalog, wording, action.kind, "check that the live views this step reads still hold the "
                           "SQL planned", said)
        case _ as unreachable:
            assert_never(unreachable)


def _commit(commit: IcebergCommit, catalog: str, wording: Wording) -> str:
    """A commit to an Iceberg table's metadata: the table it creates, or what it changes and what it requires."""
    table = commit.table
    said = []
    for column in table.columns:
        source = commit.sources.get(column.name)
        note = (" (new)" if source is None and not commit.create else
                f" (was {_name(source)})" if source is not None and source != column.name else "")
        said += [_column("column", column) + note]
    said += [f"partitioned by ({', '.join(one_line(str(f)) for f in table.partition_spec)})"] if table.partition_spec \
        else [] if commit.create else ["not partitioned"]
    said += [f"sorted by ({', '.join(one_line(str(t)) for t in table.sort_order)})"] if table.sort_order else \
        [] if commit.create else ["unsorted"]
    said += [f"comment {table.comment!r}"] if table.comment else []
    said += _set(commit.set) + [f"unset {_name(key)}" for key in commit.unset]
    if commit.create and commit.backup:
        return _action(catalog, wording, commit.kind, f"convert {_name(commit.object)} to Iceberg, its files "
                       f"registered in place, the Parquet table kept as {_name(commit.backup)}", said, "convert")
    if commit.create:
        where = f"location {table.location!r}" if table.location else "no location declared"
        return _action(catalog, wording, commit.kind, f"create Iceberg table {_name(commit.object)}", said + [where],
                       "create")
    state = commit.requires
    requires = ("requires the live table's uuid, schema, spec and sort order (not known: planned from files)"
                if state is None else f"requires table uuid {one_line(state.table_uuid)}, schema {state.schema_id}, "
                f"spec {state.spec_id}, sort order {state.sort_order_id}, as planned")
    return _action(catalog, wording, commit.kind, f"commit table {_name(commit.object)}", [requires, *said])


def _action(catalog: str, wording: Wording, kind: str, what: str, said: list[str], variant: str | None = None,
            sql: Iterable[str] = ()) -> str:
    """The first line (the change and the catalog's call for it), then each of ``said`` and the ``sql`` lines."""
    assert variant is None or variant in VARIANTS[kind]
    call = wording.calls.get(f"{kind}:{variant}" if variant else kind)
    first = f"-- {one_line(catalog)}: {what} " + (f"({one_line(call)})" if call else
                                                   "(this catalog takes no such change: apply refuses it)")
    return "\n".join([first, *(DETAIL + line for line in said), *sql])


def _name(name: str) -> str:
    return one_line(name)


def _column(what: str, column: Column) -> str:
    comment = f", comment {column.comment!r}" if column.comment else ""
    return f"{what} {_name(column.name)} {one_line(column.type) if column.type else '(no type declared)'}{comment}"


def _columns(what: str, columns: Iterable[Column]) -> list[str]:
    return [_column(what, c) for c in columns]


def _set(values: Mapping[str, str]) -> list[str]:
    return [f"set {_name(key)}={value!r}" for key, value in sorted(values.items())]


def _claimed(verbose: bool) -> list[str]:
    """What a created object is born with, shown with schemaflow's bookkeeping: the run's claim."""
    return [f"set {VERSION_KEY}={CLAIM!r}"] if verbose else []


def _table(table: Table) -> list[str]:
    """A table's definition, as a create writes it."""
    said = _columns("column", table.columns) + _columns("partition column", table.partition_columns)
    storage = f"{'data source' if table.data_source else 'format'} {one_line(table.format)}"
    said += [storage + (", external" if table.external else "")]
    said += [f"SerDe {table.serde!r}"] if table.serde else []
    said += [f"input format {table.input_format!r}, output format {table.output_format!r}"] if table.input_format \
        else []
    said += [f"storage property {_name(k)}={v!r}" for k, v in sorted(table.serde_properties.items())]
    if table.bucketing:
        bucketing = table.bucketing
        sorted_by = f", sorted by ({', '.join(map(_name, bucketing.sorted_by))})" if bucketing.sorted_by else ""
        said += [f"{bucketing.count} buckets by ({', '.join(map(_name, bucketing.columns))}){sorted_by}"]
    said += [f"partitioned by ({', '.join(one_line(str(f)) for f in table.partition_spec)})"] \
        if table.partition_spec else []
    said += [f"sorted by ({', '.join(one_line(str(t)) for t in table.sort_order)})"] if table.sort_order else []
    said += [f"comment {table.comment!r}"] if table.comment else []
    said += [f"location {table.location!r}"] if table.location else []
    return said
