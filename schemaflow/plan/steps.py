"""The plan's serialisable vocabulary: steps, and the actions each step runs.

A ``Step`` is what a reviewer reads (one change to one object, with its notes and hazards) and an
``Action`` is what the executor runs: one change to the catalog, carrying the model (a table, a view, columns),
never SQL text; a backend makes of it what its catalog takes (the Hive metastore's writer: the Spark SQL
``statements`` an action shows, or a metastore call that Spark SQL cannot express). Printing a plan and applying it
are two walks over the same steps, so what is reviewed is exactly what runs. Steps round-trip through plain JSON data for saved plans.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Self, assert_never, get_args
from collections.abc import Mapping

from schemaflow.model import (SCHEMAFLOW_PREFIX, SETTINGS_KEY, VERSION_KEY, Column, Database, IcebergState,
                              PartitionValues, Table, View, ViewSql, column_data, from_data, partition_name, split_key,
                              to_data)
from schemaflow.plan.kinds import EFFECTS, ActionKind, Effect, ObjectType, StepKind
from schemaflow.plan.readers import ReaderVerdict
from schemaflow.sql import ddl, rewrite
from schemaflow.sql.rewrite import MICROS, TIMESTAMP_TYPE, Filled
from schemaflow.sql.table_kinds import ColumnChanges, kind_of
from schemaflow.wording import plural


def _shown(statements: tuple[str, ...]) -> str:
    return "\n".join(statement + ";" for statement in statements)


@dataclass(frozen=True)
class CreateTableAction:
    """Create a table that is neither Iceberg nor Delta (those are an ``IcebergCommit``, a ``DeltaCreate``), born
    claimed: it holds the run's claim in ``schemaflow.version`` from its first moment, so its later writes can be
    guarded."""

    kind: ClassVar[ActionKind] = ActionKind.CREATE_TABLE
    table: Table

    @property
    def object(self) -> str:
        return self.table.key

    @property
    def statements(self) -> tuple[str, ...]:
        """The Spark SQL the Hive metastore's writer runs for it, ``CLAIM`` in place of the run's claim."""
        return (ddl.create_table(self.table),)

    def describe(self) -> str:
        return _shown(self.statements)

    def to_data(self) -> dict[str, Any]:
        return {"action": self.kind, "table": to_data(self.table)}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> CreateTableAction:
        table = from_data(data["table"])
        assert isinstance(table, Table)
        return cls(table)


@dataclass(frozen=True)
class _OfColumns:
    """An action on some of a table's columns, as they are to be."""

    kind: ClassVar[ActionKind]
    object: str
    columns: tuple[Column, ...]

    def to_data(self) -> dict[str, Any]:
        return {"action": self.kind, "object": self.object, "columns": [column_data(c) for c in self.columns]}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Self:
        return cls(data["object"], tuple(Column(**c) for c in data["columns"]))


@dataclass(frozen=True)
class AddColumnsAction(_OfColumns):
    """Append ``columns`` to a table's data columns."""

    kind: ClassVar[ActionKind] = ActionKind.ADD_COLUMNS

    @property
    def statements(self) -> tuple[str, ...]:
        return (ddl.add_columns(self.object, self.columns),)

    def describe(self) -> str:
        return _shown(self.statements)


@dataclass(frozen=True)
class SetTableCommentAction:
    """Make ``comment`` a table's comment (None: remove it)."""

    kind: ClassVar[ActionKind] = ActionKind.SET_TABLE_COMMENT
    object: str
    comment: str | None

    @property
    def statements(self) -> tuple[str, ...]:
        return (ddl.set_table_comment(self.object, self.comment),)

    def describe(self) -> str:
        return _shown(self.statements)

    def to_data(self) -> dict[str, Any]:
        return {"action": self.kind, "object": self.object, "comment": self.comment}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> SetTableCommentAction:
        return cls(data["object"], data["comment"])


@dataclass(frozen=True)
class SetColumnCommentsAction(_OfColumns):
    """Give each of ``columns`` (by name) its comment, on a Spark data-source table, whose copy of the schema
    follows."""

    kind: ClassVar[ActionKind] = ActionKind.SET_COLUMN_COMMENTS

    @property
    def statements(self) -> tuple[str, ...]:
        return tuple(ddl.set_column_comment(self.object, c) for c in self.columns)

    def describe(self) -> str:
        return _shown(self.statements)


@dataclass(frozen=True)
class DropTableAction:
    """Drop a table (what becomes of its files is its kind's: the step's note says)."""

    kind: ClassVar[ActionKind] = ActionKind.DROP_TABLE
    object: str

    @property
    def statements(self) -> tuple[str, ...]:
        return (ddl.drop("table", self.object),)

    def describe(self) -> str:
        return _shown(self.statements)

    def to_data(self) -> dict[str, Any]:
        return {"action": self.kind, "object": self.object}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> DropTableAction:
        return cls(data["object"])


@dataclass(frozen=True)
class CreateViewAction:
    """Create a view (with ``replace``, in place of the live one), born claimed as a created table is.

    The Hive metastore's writer runs it in the view's own database (``USE``), where unqualified names in its SQL
    resolve, as validate resolved them."""

    kind: ClassVar[ActionKind] = ActionKind.CREATE_VIEW
    view: View
    replace: bool = False

    @property
    def object(self) -> str:
        return self.view.key

    @property
    def statements(self) -> tuple[str, ...]:
        return ddl.use_database(self.view.database), ddl.create_view(self.view, self.replace)

    def describe(self) -> str:
        return _shown(self.statements)

    def to_data(self) -> dict[str, Any]:
        # What each ``*`` stands for is no part of a view's data, but of the text its CREATE stores.
        return {"action": self.kind, "view": to_data(self.view), "replace": self.replace,
                **({"stars": [list(star) for star in self.view.stars]} if self.view.stars else {})}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> CreateViewAction:
        view = from_data(data["view"])
        assert isinstance(view, View)
        stars = tuple((int(start), int(end), str(columns)) for start, end, columns in data.get("stars", ()))
        return cls(replace(view, stars=stars), bool(data["replace"]))


@dataclass(frozen=True)
class DropViewAction:
    """Drop a view: through the engine (``engine``: Spark's DROP VIEW), or as a catalog entry, never through Spark,
    whose DROP VIEW, and on Spark 3.5 its CREATE OR REPLACE VIEW too, analyses the view's live SQL first (to uncache
    it), which runs the functions it calls and those of every view it reads: planned so where that SQL calls code
    (``plan.live_code``)."""

    kind: ClassVar[ActionKind] = ActionKind.DROP_VIEW
    object: str
    engine: bool = True

    @property
    def statements(self) -> tuple[str, ...]:
        return (ddl.drop("view", self.object),) if self.engine else ()

    def describe(self) -> str:
        return _shown(self.statements) or f"-- metastore drop_table {self.object} (a view: its SQL is not analysed)"

    def to_data(self) -> dict[str, Any]:
        return {"action": self.kind, "object": self.object, "engine": self.engine}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> DropViewAction:
        return cls(data["object"], bool(data["engine"]))


# Stands for the moment a parameter is written; the executor puts the time in its place.
APPLIED_AT = "${applied_at}"


def fill_applied_at(values: Mapping[str, str], now: str) -> dict[str, str]:
    """``values`` with ``APPLIED_AT`` replaced by ``now`` in schemaflow's own parameters only.

    A user's property may hold the same characters (``${applied_at}`` is valid text): it is
    stored as written. Users cannot declare ``schemaflow.`` keys, so these are schemaflow's.
    """
    return {k: v.replace(APPLIED_AT, now) if k.startswith(SCHEMAFLOW_PREFIX) else v for k, v in values.items()}


@dataclass(frozen=True)
class SetParameters:
    """Set and unset table parameters through the metastore client (``alter_table``).

    Used for managed properties and the ``schemaflow.version`` stamp: Spark SQL refuses reserved
    keys such as ``owner``, and only the metastore client carries the compare-and-swap guard.
    """

    kind: ClassVar[ActionKind] = ActionKind.SET_PARAMETERS
    object: str
    set: Mapping[str, str] = field(default_factory=dict)
    unset: tuple[str, ...] = ()

    def describe(self) -> str:
        parts = [f"set {k}={v!r}" for k, v in sorted(self.set.items())]
        parts += [f"unset {k}" for k in self.unset]
        return f"-- metastore alter_table {self.object}: " + ", ".join(parts)

    def to_data(self) -> dict[str, Any]:
        return {"action": self.kind, "object": self.object,
                "set": dict(sorted(self.set.items())), "unset": list(self.unset)}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> SetParameters:
        return cls(object=data["object"], set=dict(data["set"]), unset=tuple(data["unset"]))


@dataclass(frozen=True)
class AddDatabase:
    """Create a database through the metastore client, unless it exists, as declared.

    Without a declared location the metastore puts it in its own warehouse directory
    (``warehouse_dir`` for the embedded one). Spark's ``CREATE DATABASE`` would compute the location
    on the machine that runs it, from its own warehouse setting: with a shared metastore, a folder
    on a CI runner or a laptop.
    """

    kind: ClassVar[ActionKind] = ActionKind.ADD_DATABASE
    database: Database

    def describe(self) -> str:
        where = f"at {self.database.location}" if self.database.location else "in the metastore's warehouse directory"
        said = [f"comment {self.database.comment!r}"] if self.database.comment else []
        said += [f"{k}={v!r}" for k, v in sorted(self.database.properties.items())]
        return f"-- metastore create_database {self.database.name} ({where})" + "".join(f", {x}" for x in said)

    def to_data(self) -> dict[str, Any]:
        return {"action": self.kind, **self.database.to_data()}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> AddDatabase:
        return cls(Database.from_data(data))


@dataclass(frozen=True)
class SetDatabaseParameters:
    """Set properties of a database through the metastore client (``alter_database``, unguarded)."""

    kind: ClassVar[ActionKind] = ActionKind.SET_DATABASE_PARAMETERS
    database: str
    properties: Mapping[str, str]

    def describe(self) -> str:
        listed = ", ".join(f"set {k}={v!r}" for k, v in sorted(self.properties.items()))
        return f"-- metastore alter_database {self.database}: {listed}"

    def to_data(self) -> dict[str, Any]:
        return {"action": self.kind, "database": self.database,
                "properties": dict(sorted(self.properties.items()))}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> SetDatabaseParameters:
        return cls(data["database"], dict(data["properties"]))


@dataclass(frozen=True)
class PartitionView:
    """Move a view's trailing output columns into its partition keys (Hive ``PARTITIONED ON``).

    Spark SQL cannot parse ``PARTITIONED ON``; the metastore holds it all the same.
    """

    kind: ClassVar[ActionKind] = ActionKind.PARTITION_VIEW
    object: str
    columns: tuple[str, ...]

    def describe(self) -> str:
        return f"-- metastore alter_table {self.object}: partitioned on ({', '.join(self.columns)})"

    def to_data(self) -> dict[str, Any]:
        return {"action": self.kind, "object": self.object, "columns": list(self.columns)}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> PartitionView:
        return cls(object=data["object"], columns=tuple(data["columns"]))


@dataclass(frozen=True)
class ChangeViewPartitions:
    """Drop, then add, partitions of a partitioned view through the metastore client, in batches.

    A view partition is metadata only: it is added without a storage descriptor (so without a
    location, as Hive's ``ALTER VIEW ADD PARTITION`` does) and dropped without deleting data.
    ``values`` are in the order of ``columns``.
    """

    kind: ClassVar[ActionKind] = ActionKind.CHANGE_VIEW_PARTITIONS
    object: str
    columns: tuple[str, ...]
    add: tuple[PartitionValues, ...] = ()
    drop: tuple[PartitionValues, ...] = ()

    def describe(self) -> str:
        parts = [f"{verb} {plural(len(values), 'partition')} ({listed_partitions(self.columns, values)})"
                 for verb, values in (("drop", self.drop), ("add", self.add)) if values]
        return f"-- metastore {self.object}: " + "; ".join(parts)

    def to_data(self) -> dict[str, Any]:
        return {"action": self.kind, "object": self.object, "columns": list(self.columns),
                "add": [list(v) for v in self.add], "drop": [list(v) for v in self.drop]}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> ChangeViewPartitions:
        return cls(object=data["object"], columns=tuple(data["columns"]), add=tuple(tuple(v) for v in data["add"]),
                   drop=tuple(tuple(v) for v in data["drop"]))


@dataclass(frozen=True)
class KeepViewPartitions:
    """Read a partitioned view's partitions just before it is re-created, so that those re-added after
    it keep their parameters and creation time (Spark's CREATE OR REPLACE VIEW drops them all).

    What is read stays with the running apply: a run stopped in between re-adds them without.
    """

    kind: ClassVar[ActionKind] = ActionKind.KEEP_VIEW_PARTITIONS
    object: str

    def describe(self) -> str:
        return f"-- metastore {self.object}: read its partitions, to re-add them with their parameters and times"

    def to_data(self) -> dict[str, Any]:
        return {"action": self.kind, "object": self.object}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> KeepViewPartitions:
        return cls(object=data["object"])




@dataclass(frozen=True)
class CheckLiveViews:
    """The live views the step's next statement has Spark analyse (the view it drops or replaces, what the view it
    creates reads, and what those read, with their stored SQL), each with the SQL the plan read of it (None: it could
    not be read), checked through the metastore client just before, so that a view another client changed since the
    plan was made stops the apply before Spark analyses it (``plan.live_code``). ``code`` says what of that SQL is
    code, in words ("" for none), which the step's id then covers (``plan.view_code``)."""

    kind: ClassVar[ActionKind] = ActionKind.CHECK_LIVE_VIEWS
    object: str
    views: Mapping[str, ViewSql | None]
    code: str = ""

    def describe(self) -> str:
        lines = ["-- metastore: check the live views Spark analyses in this step still hold the SQL planned, "
                 + (f"which the step's id covers ({self.code})" if self.code else "none of which is code")]
        for key, sql in sorted(self.views.items()):
            lines += [f"-- {key}:", *(["(could not be read)"] if sql is None else sql.describe().split("\n"))]
        return "\n".join(lines)

    def to_data(self) -> dict[str, Any]:
        return {"action": self.kind, "object": self.object, **({"code": self.code} if self.code else {}),
                "views": {key: None if sql is None else sql.to_data() for key, sql in sorted(self.views.items())}}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> CheckLiveViews:
        return cls(data["object"], {key: None if sql is None else ViewSql.from_data(sql)
                                    for key, sql in data["views"].items()}, data.get("code", ""))


# How many partitions a step's text names before it says how many more there are (its JSON has them all).
LISTED = 10


def listed_partitions(columns: tuple[str, ...], values: tuple[PartitionValues, ...]) -> str:
    names = [partition_name(columns, v) for v in values[:LISTED]]
    more = len(values) - LISTED
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")


@dataclass(frozen=True)
class SetColumns:
    """Replace a table's column list through the metastore client, in one ``alter_table``.

    Spark SQL cannot rename, retype, reorder or drop columns of a Hive table, nor send CASCADE.
    With ``cascade`` every partition's column list follows the table's: in the metastore's own
    CASCADE, or ``batched`` a thousand partitions at a time (rewriting only those that differ, so a
    stopped run resumes). Without, partitions keep theirs. Spark's own copy of the schema
    (``spark.sql.sources.schema``) is rewritten with it, and ``parameters`` (the records of the
    migrations it applies) are set in the same write, so the columns and the record never disagree.
    """

    kind: ClassVar[ActionKind] = ActionKind.SET_COLUMNS
    object: str
    columns: tuple[Column, ...]
    partition_columns: tuple[Column, ...]
    cascade: bool
    batched: bool = False
    parameters: Mapping[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        listed = ", ".join(f"{c.name} {c.type}" + (f" COMMENT {c.comment!r}" if c.comment else "") for c in self.columns)
        mode = "table only"
        if self.cascade:
            mode = "every partition follows, in batches" if self.batched else "CASCADE: every partition follows"
        recorded = "".join(f", set {k}={v!r}" for k, v in sorted(self.parameters.items()))
        return f"-- metastore alter_table {self.object} ({mode}): columns ({listed}){recorded}"

    def to_data(self) -> dict[str, Any]:
        return {"action": self.kind, "object": self.object, "cascade": self.cascade, "batched": self.batched,
                "columns": [column_data(c) for c in self.columns],
                "partition_columns": [column_data(c) for c in self.partition_columns],
                "parameters": dict(sorted(self.parameters.items()))}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> SetColumns:
        return cls(object=data["object"], cascade=bool(data["cascade"]), batched=bool(data["batched"]),
                   columns=tuple(Column(**c) for c in data["columns"]),
                   partition_columns=tuple(Column(**c) for c in data["partition_columns"]),
                   parameters=dict(data["parameters"]))


@dataclass(frozen=True)
class SetStorageAction:
    """Make ``serde_properties`` a table's SERDEPROPERTIES (a data source's OPTIONS) and, unless None,
    ``buckets`` its bucket count, in one ``alter_table`` of its storage descriptor (``Metastore.set_storage``)."""

    kind: ClassVar[ActionKind] = ActionKind.SET_STORAGE
    object: str
    serde_properties: Mapping[str, str]
    buckets: int | None = None

    def describe(self) -> str:
        listed = ", ".join(f"{k}={v!r}" for k, v in sorted(self.serde_properties.items()))
        buckets = "" if self.buckets is None else f", {self.buckets} buckets"
        return f"-- metastore alter_table {self.object}: storage properties ({listed}){buckets}"

    def to_data(self) -> dict[str, Any]:
        return {"action": self.kind, "object": self.object,
                "serde_properties": dict(sorted(self.serde_properties.items())), "buckets": self.buckets}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> SetStorageAction:
        return cls(object=data["object"], serde_properties=dict(data["serde_properties"]), buckets=data["buckets"])


@dataclass(frozen=True)
class IcebergCommit:
    """One commit to an Iceberg table's metadata: it creates the table (``create``) or evolves it by field id
    into ``table``'s columns, partition spec, sort order and comment.

    Each column of ``table`` named in ``sources`` keeps the field id of that live column (renamed, retyped,
    moved or re-commented as ``table`` says); every other column is new, and a live column no source names
    is dropped. The commit lands only while the table still has the uuid, schema, spec and sort order
    ``requires`` says (Iceberg's requirements; None in a plan made from files, which is not applied), and
    its metastore entry still names the metadata file it was made from. ``set`` and ``unset`` are properties
    written in the same commit: its step's stamp, which the executor gives it (``with_stamp``), so the
    stamp and the change land together. A create with a ``backup`` converts the Parquet table of the same
    name: its files become the new table's, and it is kept as ``backup`` (``catalog.hive.iceberg_convert``).
    """

    kind: ClassVar[ActionKind] = ActionKind.ICEBERG_COMMIT
    table: Table
    sources: Mapping[str, str] = field(default_factory=dict)
    requires: IcebergState | None = None
    create: bool = False
    set: Mapping[str, str] = field(default_factory=dict)
    unset: tuple[str, ...] = ()
    backup: str | None = None
    keep: bool = True  # a conversion's Parquet entry kept as ``backup``; else moved there, then dropped (its files stay)

    @property
    def object(self) -> str:
        return self.table.key

    def with_properties(self, stamp: SetParameters) -> IcebergCommit:
        """This commit with ``stamp``'s properties written in it."""
        return replace(self, set={**self.set, **stamp.set}, unset=self.unset + stamp.unset)

    def describe(self) -> str:
        table = self.table
        columns = ", ".join(f"{c.name} {c.type}" + (f" (was {self.sources[c.name]})" if self.sources.get(c.name, c.name)
                                                    != c.name else "") + ("" if c.name in self.sources or
                                                                          self.create else " (new)")
                            + (f" COMMENT {c.comment!r}" if c.comment else "") for c in table.columns)
        layout = f"; partitioned by ({', '.join(map(str, table.partition_spec))})" if table.partition_spec else ""
        layout += f"; sorted by ({', '.join(map(str, table.sort_order))})" if table.sort_order else ""
        comment = f"; comment {table.comment!r}" if table.comment else ""
        if self.create and self.backup:
            kept = (f"the Parquet table kept as {self.backup}" if self.keep else
                    f"the Parquet table's entry moved to {self.backup}, then dropped (its files are the Iceberg table's)")
            return (f"-- iceberg convert {self.object}: columns ({columns}){layout}{comment}; its Parquet files "
                    f"registered, {kept}")
        if self.create:
            where = f"; at {table.location!r}" if table.location else "; in its database's folder"
            return f"-- iceberg create {self.object}: columns ({columns}){layout}{comment}{where}"
        r = self.requires
        requires = ("the live table's uuid, schema, spec and sort order" if r is None else
                    f"table {r.table_uuid}, schema {r.schema_id}, spec {r.spec_id}, sort order {r.sort_order_id}")
        return f"-- iceberg commit {self.object} (requires {requires}): columns ({columns}){layout}{comment}"

    def to_data(self) -> dict[str, Any]:
        return {"action": self.kind, "table": to_data(self.table), "sources": dict(sorted(self.sources.items())),
                "requires": self.requires.to_data() if self.requires else None, "create": self.create,
                **({"set": dict(sorted(self.set.items())), "unset": list(self.unset)} if self.set or self.unset else {}),
                **({"backup": self.backup} if self.backup else {}), **({} if self.keep else {"keep": False})}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> IcebergCommit:
        table = from_data(data["table"])
        assert isinstance(table, Table)
        return cls(table, dict(data["sources"]), IcebergState.from_data(data["requires"]) if data["requires"] else None,
                   bool(data["create"]), dict(data.get("set", {})), tuple(data.get("unset", ())), data.get("backup"),
                   bool(data.get("keep", True)))


@dataclass(frozen=True)
class DeltaCreate:
    """Create a Delta table through the engine (``CREATE TABLE ... USING delta``), with its declared properties (its
    settings and protocol) in its first commit, and born claimed, as every table schemaflow creates."""

    kind: ClassVar[ActionKind] = ActionKind.DELTA_CREATE
    table: Table
    set: Mapping[str, str] = field(default_factory=dict)  # its step's stamp (``with_stamp``), written by the engine too

    @property
    def object(self) -> str:
        return self.table.key

    def with_properties(self, stamp: SetParameters) -> DeltaCreate:
        """This create with ``stamp``'s properties written after it, through the engine (a new table unsets none)."""
        return replace(self, set={**self.set, **stamp.set})

    @property
    def changes(self) -> tuple[str, ...]:
        """The CREATE (delta-spark's first commit), ``CLAIM`` in place of the run's claim."""
        return (ddl.create_table(self.table, self.table.properties),)

    @property
    def stamp(self) -> dict[str, str]:
        """What its stamp sets that the CREATE did not write already: a commit of its own after it."""
        return {k: v for k, v in self.set.items() if self.table.properties.get(k) != v}

    @property
    def statements(self) -> tuple[str, ...]:
        """The Spark SQL the engine runs for it (delta-spark), ``CLAIM`` in place of the run's claim."""
        return self.changes + _stamp_statement(self.object, self.stamp)

    def describe(self) -> str:
        return _shown(self.statements)

    def to_data(self) -> dict[str, Any]:
        return {"action": self.kind, "table": to_data(self.table), **({"set": dict(sorted(self.set.items()))}
                                                                        if self.set else {})}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> DeltaCreate:
        table = from_data(data["table"])
        assert isinstance(table, Table)
        return cls(table, dict(data.get("set", {})))


@dataclass(frozen=True)
class DeltaAlter:
    """Changes to a Delta table, run through the engine (delta-spark) as statements, each a commit to its log, in
    this order: properties set (a protocol or feature first), columns added, renamed, dropped, retyped, re-commented and
    moved, the table's comment, properties unset, and last the step's stamp (schemaflow's own keys).

    ``log_version`` is the version of the log the plan read (``DeltaState.log_version``) and ``table_id`` the table it
    was (metaData.id): the guard. Apply lands the changes only on top of that version, so a commit another writer
    made since is a concurrent change. ``set`` and ``unset`` take the step's stamp (``with_stamp``), so the stamp
    lands in the log with the change."""

    kind: ClassVar[ActionKind] = ActionKind.DELTA_ALTER
    object: str
    log_version: int
    table_id: str
    set: Mapping[str, str] = field(default_factory=dict)
    unset: tuple[str, ...] = ()
    add: tuple[Column, ...] = ()
    rename: tuple[tuple[str, str], ...] = ()     # (old name, new name)
    drop: tuple[str, ...] = ()
    retype: tuple[Column, ...] = ()              # each column with its new type
    comments: tuple[Column, ...] = ()            # each column with its new comment
    moves: tuple[tuple[str, str | None], ...] = ()  # (column, the column it comes after; None: first)
    comment: tuple[str | None, ...] = ()         # the table's new comment, when it changes (None: removed)

    def with_properties(self, stamp: SetParameters) -> DeltaAlter:
        """These changes with ``stamp``'s keys written by them: schemaflow's own (the declared properties it sets are
        this step's or the protocol step's before it already) and those it removes."""
        own = {k: v for k, v in stamp.set.items() if k.startswith(SCHEMAFLOW_PREFIX)}
        return replace(self, set={**self.set, **own}, unset=self.unset + stamp.unset)

    @property
    def stamp(self) -> dict[str, str]:
        """schemaflow's own keys it sets (its step's stamp): the last statement, a commit of its own once the changes
        have landed, so that its ``${live_state}`` is the table as they left it."""
        return {k: v for k, v in self.set.items() if k.startswith(SCHEMAFLOW_PREFIX)}

    @property
    def statements(self) -> tuple[str, ...]:
        """The Spark SQL the engine runs for it, in order."""
        return self.changes + _stamp_statement(self.object, self.stamp)

    @property
    def changes(self) -> tuple[str, ...]:
        """The statements of the change itself, in order, its stamp aside."""
        key = self.object
        settings = {k: v for k, v in self.set.items() if not k.startswith(SCHEMAFLOW_PREFIX)}
        return ((ddl.set_table_properties(key, settings),) if settings else ()) + (
            (ddl.add_columns(key, self.add),) if self.add else ()) + tuple(
            ddl.rename_column(key, old, new) for old, new in self.rename) + (
            (ddl.drop_columns(key, self.drop),) if self.drop else ()) + tuple(
            ddl.change_column_type(key, c) for c in self.retype) + tuple(
            ddl.set_column_comment(key, c) for c in self.comments) + tuple(
            ddl.move_column(key, name, after) for name, after in self.moves) + tuple(
            ddl.set_table_comment(key, comment) for comment in self.comment) + (
            (ddl.unset_table_properties(key, self.unset),) if self.unset else ())

    def describe(self) -> str:
        return f"-- on top of Delta log version {self.log_version} of table {self.table_id}\n" + _shown(self.statements)

    def to_data(self) -> dict[str, Any]:
        return {"action": self.kind, "object": self.object, "log_version": self.log_version, "table_id": self.table_id,
                "set": dict(sorted(self.set.items())), "unset": list(self.unset),
                "add": [column_data(c) for c in self.add], "rename": [list(pair) for pair in self.rename],
                "drop": list(self.drop), "retype": [column_data(c) for c in self.retype],
                "comments": [column_data(c) for c in self.comments], "moves": [list(move) for move in self.moves],
                "comment": list(self.comment)}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> DeltaAlter:
        return cls(data["object"], int(data["log_version"]), data["table_id"], dict(data["set"]), tuple(data["unset"]),
                   tuple(Column(**c) for c in data["add"]), tuple((old, new) for old, new in data["rename"]),
                   tuple(data["drop"]), tuple(Column(**c) for c in data["retype"]),
                   tuple(Column(**c) for c in data["comments"]), tuple((n, a) for n, a in data["moves"]),
                   tuple(data["comment"]))


def _stamp_statement(key: str, stamp: Mapping[str, str]) -> tuple[str, ...]:
    """The statement that writes a Delta table's ``stamp`` into its log (none for no stamp)."""
    return (ddl.set_table_properties(key, stamp),) if stamp else ()


@dataclass(frozen=True)
class RewriteRows:
    """A table's rows moved into a new definition of it (``plan.rewrite``), verified, then swapped in.

    The new table is created as ``staging`` (claimed), filled by ``INSERT INTO staging <select>`` in verified,
    journaled chunks (``catalog.hive.rewrite_copy``); then the table is renamed to ``backup`` (kept, its files untouched)
    and ``staging`` to the table's name. ``describe`` shows the statements ``catalog.hive.rewrite``
    runs, made by the same functions.
    """

    kind: ClassVar[ActionKind] = ActionKind.REWRITE_ROWS
    table: Table                     # the new definition, under the table's own name
    columns: tuple[Filled, ...]      # each of its columns, and the live column it is filled from
    staging: str
    backup: str
    resumed: bool = False            # a stopped run renamed the table already: only the cut-over is left
    registrable: bool = False        # files Iceberg can register: timestamps in microseconds, not Spark's INT96
    records: Mapping[str, str] = field(default_factory=dict)  # the migration records the cut-over's last rename sets
    # A Delta table's guard: the log version the plan read, of the table (metaData.id) it was; the copy starts only
    # on that version. None: not a Delta table, or only the cut-over is left.
    log_version: int | None = None
    table_id: str | None = None

    @property
    def object(self) -> str:
        return self.table.key

    @property
    def delta(self) -> bool:
        """Whether the table is a Delta table: its staging table is created, and its log read, through delta-spark."""
        return kind_of(self.table).column_changes is ColumnChanges.DELTA

    @property
    def create(self) -> str:
        """The CREATE of the staging table, claimed; a Delta table's with its declared properties, which its log
        takes from its first commit (delta-spark writes none into the metastore's entry)."""
        database, name = split_key(self.staging)
        return ddl.create_table(replace(self.table, database=database, name=name),
                                self.table.properties if self.delta else None)

    @property
    def copy(self) -> str:
        """The statement that fills the staging table."""
        return rewrite.insert(self.staging, rewrite.select(self.object, self.columns))

    def describe(self) -> str:
        converted = [f.column + " (accepted)" * f.accepts_loss for f in self.columns if f.lossy]
        lost = f"; values a conversion makes NULL counted in {', '.join(converted)}" if converted else ""
        keys = ", ".join(c.name for c in self.table.partition_columns)
        recording = "".join(f", set {k}={v!r}" for k, v in sorted(self.records.items()))
        if self.resumed:
            return (f"-- finish the rewrite of {self.object} (guarded): {self.object} is {self.backup} already; rename "
                    f"the verified copy {self.staging} to {self.object}{recording}")
        where = f", per partition ({keys}) and column where they differ" if keys and not self.delta else ""
        units = "slices of its rows, its partitions not the metastore's" if self.delta else (
            "of partitions, where each stays one")
        guard = (f"-- only on top of Delta log version {self.log_version} of table {self.table_id}\n"
                 if self.log_version is not None else "")
        micros = (f"-- with {TIMESTAMP_TYPE} = {MICROS} (not INT96), so that Iceberg can register the files\n"
                  if self.registrable else "")
        defaulted = [f.column for f in self.columns if f.nulls_as_empty]
        empty = (f"-- {', '.join(defaulted)}: NULL written as '', which Spark writes as NULL is, in the default "
                 "partition (read back as NULL)\n" if defaulted else "")
        return (f"-- rewrite {self.object} through {self.staging}\n{guard}{self.create};\n{micros}{empty}{self.copy};\n"
                f"-- run in chunks ({units}), each verified as it lands: the row count and a "
                f"checksum of the rows' values as they are written, against what {self.staging} holds of them"
                f"{where}{lost}; journaled on {self.staging}, so a stopped apply resumes; what is written to "
                f"{self.object} meanwhile is copied again\n"
                f"-- cut-over (guarded): rename {self.object} to {self.backup}, then {self.staging} to {self.object}"
                f"{recording}")

    def to_data(self) -> dict[str, Any]:
        return {"action": self.kind, "table": to_data(self.table),
                "columns": [{"column": f.column, "type": f.type, "source": f.source, "old_type": f.old_type,
                             **({"accepts_loss": True} if f.accepts_loss else {}),
                             **({"empty_as_null": True} if f.empty_as_null else {}),
                             **({"nulls_as_empty": True} if f.nulls_as_empty else {})} for f in self.columns],
                "staging": self.staging, "backup": self.backup, **({"resumed": True} if self.resumed else {}),
                **({"registrable": True} if self.registrable else {}),
                **({"records": dict(sorted(self.records.items()))} if self.records else {}),
                **({"log_version": self.log_version, "table_id": self.table_id} if self.log_version is not None
                   else {})}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> RewriteRows:
        table = from_data(data["table"])
        assert isinstance(table, Table)
        log_version = data.get("log_version")
        return cls(table, tuple(Filled(**f) for f in data["columns"]), data["staging"], data["backup"],
                   bool(data.get("resumed", False)), bool(data.get("registrable", False)), dict(data.get("records", {})),
                   None if log_version is None else int(log_version), data.get("table_id"))


@dataclass(frozen=True)
class RestoreBackup:
    """The backup a rewrite kept swapped back in under the table's name, no row copied (``plan.restore``): the
    backup is renamed to ``temporary`` (guarded by ``backup_version``), the table to ``backup`` (guarded by the run's
    claim; as the new backup, it gets back the version it had when planned), then ``temporary`` to the table's
    name."""

    kind: ClassVar[ActionKind] = ActionKind.RESTORE_BACKUP
    object: str
    backup: str
    temporary: str
    backup_version: str | None  # the backup's stamp when planned

    def describe(self) -> str:
        return (f"-- restore {self.object} from {self.backup}, no rows copied (each rename guarded): rename "
                f"{self.backup} to {self.temporary}, {self.object} to {self.backup}, then {self.temporary} to "
                f"{self.object}")

    def to_data(self) -> dict[str, Any]:
        return {"action": self.kind, "object": self.object, "backup": self.backup, "temporary": self.temporary,
                "backup_version": self.backup_version}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> RestoreBackup:
        return cls(data["object"], data["backup"], data["temporary"], data["backup_version"])


@dataclass(frozen=True)
class RegisterTableAction:
    """The catalog adopts an Iceberg table that the catalog the project moves from holds (``plan.moving``): a new entry
    ``object`` naming ``metadata_location``, the table's current metadata file there when planned, with no data or
    metadata file written or copied. ``version`` is the ``schemaflow.version`` that metadata holds (None: not stamped),
    which the step's later writes expect. Refused if the name is taken meanwhile (``ConcurrentChange``)."""

    kind: ClassVar[ActionKind] = ActionKind.REGISTER_TABLE
    object: str
    metadata_location: str
    version: str | None
    source: str  # the catalog moved from, as its plan records it (catalog.backend's ``endpoint``)

    def describe(self) -> str:
        return (f"-- register {self.object}: a new entry naming the metadata file {self.metadata_location!r} (the "
                f"table's current one in {self.source}); no file is written or copied")

    def to_data(self) -> dict[str, Any]:
        return {"action": self.kind, "object": self.object, "metadata_location": self.metadata_location,
                "version": self.version, "source": self.source}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> RegisterTableAction:
        return cls(data["object"], data["metadata_location"], data["version"], data["source"])


@dataclass(frozen=True)
class ForgetEntryAction:
    """The entry of a moved table or view dropped from the catalog the project moves from (``plan.moving``), once the
    catalog it moves to holds it: its data and metadata files are kept (they are the moved table's). Guarded by the
    ``schemaflow.version`` the old entry had when planned (``version``)."""

    kind: ClassVar[ActionKind] = ActionKind.FORGET_ENTRY
    object: str
    object_type: ObjectType  # TABLE or VIEW
    version: str | None
    source: str  # the catalog moved from, as its plan records it

    def describe(self) -> str:
        return (f"-- in {self.source}: drop the {self.object_type} entry {self.object} (its files are kept: they are "
                "the moved object's)")

    def to_data(self) -> dict[str, Any]:
        return {"action": self.kind, "object": self.object, "object_type": self.object_type, "version": self.version,
                "source": self.source}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> ForgetEntryAction:
        return cls(data["object"], ObjectType(data["object_type"]), data["version"], data["source"])


Action = (CreateTableAction | AddColumnsAction | SetTableCommentAction | SetColumnCommentsAction | DropTableAction
          | CreateViewAction | DropViewAction | AddDatabase | SetDatabaseParameters | SetParameters | PartitionView | SetColumns
          | ChangeViewPartitions | KeepViewPartitions | SetStorageAction | IcebergCommit | RewriteRows | RestoreBackup
          | CheckLiveViews | RegisterTableAction | ForgetEntryAction | DeltaCreate | DeltaAlter)


# The one map from what plan JSON calls an action to its class, from the classes' own kinds.
ACTION_CLASSES: Mapping[ActionKind, type[Action]] = {cls.kind: cls for cls in get_args(Action)}


def with_stamp(action: Action, stamp: SetParameters) -> Action | None:
    """``action`` with its step's ``stamp`` written in it, when it is of a kind that writes the stamp itself, so that
    the change and the stamp land in one write (a commit to a table's own metadata); None when the stamp follows it
    as a write of its own. Each kind of action says which: mypy fails here on one that does not."""
    match action:
        case IcebergCommit() | DeltaCreate() | DeltaAlter():
            return action.with_properties(stamp)
        case (CreateTableAction() | AddColumnsAction() | SetTableCommentAction() | SetColumnCommentsAction()
              | DropTableAction() | CreateViewAction() | DropViewAction() | AddDatabase() | SetDatabaseParameters()
              | SetParameters() | PartitionView() | SetColumns() | ChangeViewPartitions() | KeepViewPartitions()
              | SetStorageAction() | RewriteRows() | RestoreBackup() | CheckLiveViews() | RegisterTableAction()
              | ForgetEntryAction()):
            return None
        case _ as unreachable:
            assert_never(unreachable)


def action_from_data(data: Mapping[str, Any]) -> Action:
    try:
        kind = ActionKind(data["action"])
    except (KeyError, ValueError):
        raise ValueError(f"unknown action kind {data.get('action')!r}") from None
    return ACTION_CLASSES[kind].from_data(data)


@dataclass(frozen=True)
class Step:
    """One change to one object, in the order it runs.

    What it runs (``actions``) is its own ``body``, then its ``stamp``: the last write to its object,
    which records the object's managed properties and its new ``schemaflow.version`` (see
    ``plan.plan``), and which an apply may run beside the next step (``apply.lane``). The plan's last
    step may also write the ``settings_record`` (``plan.settings_changes``), after everything else.
    Plan JSON has them as one list of actions, as ``actions`` does.
    """

    kind: StepKind
    object: str                    # "db.name", or the database name for database steps
    object_type: ObjectType
    summary: str                   # one line a reviewer reads
    body: tuple[Action, ...]       # what it runs for the change itself
    notes: tuple[str, ...] = ()    # consequences worth knowing (partitions left alone, ...)
    hazards: tuple[str, ...] = ()  # risks to data or readers a reviewer must weigh
    destructive: bool = False
    blocked: str | None = None     # why this step will not run as planned
    sql_diff: tuple[str, ...] = ()  # a re-created view's SQL, live against declared, as a unified diff
    values: tuple[str, ...] = ()    # the old and new value of each comment and property it changes
    stamp: SetParameters | None = None  # None: a database's step, or one its object's stamp does not follow
    settings_record: tuple[SetDatabaseParameters, ...] = ()  # the settings applied, on each managed database
    readers: tuple[ReaderVerdict, ...] = ()  # each reader's verdict on what it does (plan.readers)

    @property
    def actions(self) -> tuple[Action, ...]:
        """Everything the step runs, in order."""
        return self.body + ((self.stamp,) if self.stamp else ()) + self.settings_record

    @property
    def runs(self) -> tuple[Action, ...]:
        """What apply runs of the step, write by write: its ``actions``, but that a last action of its body that
        writes the stamp itself (an Iceberg commit: ``with_stamp``) takes it in, so that the change and the stamp land
        in one write."""
        stamped = with_stamp(self.body[-1], self.stamp) if self.stamp and self.body else None
        return self.actions if stamped is None else (*self.body[:-1], stamped, *self.settings_record)

    @property
    def effect(self) -> Effect:
        return EFFECTS[self.kind]

    def to_data(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "object": self.object, "object_type": self.object_type,
            "summary": self.summary, "notes": list(self.notes), "hazards": list(self.hazards),
            "destructive": self.destructive, "blocked": self.blocked,
            "actions": [a.to_data() for a in self.actions],
            **({"sql_diff": list(self.sql_diff)} if self.sql_diff else {}),
            **({"values": list(self.values)} if self.values else {}),
            **({"readers": [v.to_data() for v in self.readers]} if self.readers else {}),
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Step:
        body, stamp, record = _parts(data["object"], tuple(action_from_data(a) for a in data["actions"]))
        return cls(
            kind=StepKind(data["kind"]), object=data["object"], object_type=ObjectType(data["object_type"]),
            summary=data["summary"], notes=tuple(data.get("notes", ())), hazards=tuple(data.get("hazards", ())),
            destructive=bool(data.get("destructive", False)), blocked=data.get("blocked"),
            sql_diff=tuple(data.get("sql_diff", ())), values=tuple(data.get("values", ())),
            body=body, stamp=stamp, settings_record=record,
            readers=tuple(ReaderVerdict.from_data(v) for v in data.get("readers", ())),
        )


def _parts(key: str, actions: tuple[Action, ...]) -> tuple[tuple[Action, ...], SetParameters | None,
                                                         tuple[SetDatabaseParameters, ...]]:
    """A saved step's actions parted into its body, stamp and settings record.

    Plan JSON keeps one list, so the parts are told apart here, once, by what only they write: the
    settings record ``schemaflow.settings``, the stamp (just before it) the object's own version.
    """
    record: tuple[SetDatabaseParameters, ...] = ()
    while actions and isinstance(last := actions[-1], SetDatabaseParameters) and SETTINGS_KEY in last.properties:
        record, actions = (last, *record), actions[:-1]
    if actions and isinstance(last := actions[-1], SetParameters) and last.object == key and VERSION_KEY in last.set:
        return actions[:-1], last, record
    return actions, None, record
