"""sqlitecat: a read-write catalog backend written outside schemaflow, as a package of its own would write one.

It keeps a project's catalog in a SQLite file (``.schemaflow/sqlitecat.db``): each database's attributes, and each
table and view as the model's plain data with its parameters beside it. Every write of an object is a
compare-and-swap: it reads the row and its ``revision``, checks the ``schemaflow.version`` it is guarded by, and
updates ``WHERE revision = ?``, so a writer that changed the row in between makes it ``ConcurrentChange``. It runs no
engine: no view partitions, no rewrites, no view checks. Registered through the entry point ``schemaflow.backends``
(``sqlitecat = sqlitecat``) by tests/test_backend_sqlitecat.py; it imports only what schemaflow offers extensions.
"""
from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

from schemaflow.catalog.backend import CatalogReader, CatalogWriter, LiveEntry, WithoutEngine
from schemaflow.capabilities import Capabilities, Wording
from schemaflow.catalog.backends import Opening, register_backend
from schemaflow.catalog.stamping import fill_live_state
from schemaflow.errors import ConcurrentChange, SchemaflowError
from schemaflow.model import (SCHEMAFLOW_PREFIX, VERSION_KEY, Catalog, Column, Database, IcebergState,
                              Object, PartitionValues, Stored, Table, View, ViewSql, from_data, recorded, to_data)
from schemaflow.project import Project

NAME = "sqlitecat"
FILE = ".schemaflow/sqlitecat.db"
SCHEMA = """
CREATE TABLE IF NOT EXISTS databases (name TEXT PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS objects (key TEXT PRIMARY KEY, database TEXT NOT NULL, data TEXT NOT NULL,
                                    parameters TEXT NOT NULL, revision INTEGER NOT NULL);
"""


def live_object(data: Mapping[str, Any], parameters: Mapping[str, str]) -> Object:
    """An object as read: its plain data, its user's properties, and what schemaflow's parameters record."""
    obj = from_data(data)
    record = recorded(parameters)
    if isinstance(obj, View):
        del record["migrations"]
    return replace(obj, properties={k: v for k, v in parameters.items() if not k.startswith(SCHEMAFLOW_PREFIX)},
                   **record)


@dataclass
class Store:
    """The SQLite file, opened on first use."""

    path: str
    _connection: sqlite3.Connection | None = field(default=None, init=False)

    @property
    def db(self) -> sqlite3.Connection:
        if self._connection is None:
            self._connection = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self._connection.executescript(SCHEMA)
        return self._connection

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def row(self, key: str) -> tuple[dict[str, Any], dict[str, str], int] | None:
        found = self.db.execute("SELECT data, parameters, revision FROM objects WHERE key = ?", (key,)).fetchone()
        return None if found is None else (json.loads(found[0]), json.loads(found[1]), found[2])


@dataclass
class SqliteReader:
    store: Store
    endpoint: str

    def databases(self) -> tuple[str, ...]:
        return tuple(name for (name,) in self.store.db.execute("SELECT name FROM databases ORDER BY name"))

    def database(self, name: str) -> Database:
        found = self.store.db.execute("SELECT data FROM databases WHERE name = ?", (name,)).fetchone()
        return Database.from_data(json.loads(found[0])) if found else Database(name)

    def entries(self, database: str) -> Iterable[LiveEntry]:
        for data, parameters in self.store.db.execute(
                "SELECT data, parameters FROM objects WHERE database = ? ORDER BY key", (database,)):
            parameters = json.loads(parameters)
            yield LiveEntry(live_object(json.loads(data), parameters), parameters)

    def read(self, databases: tuple[str, ...]) -> Catalog:
        held = [d for d in databases if d in self.databases()]
        objects = {e.object.key: e.object for d in held for e in self.entries(d)}
        return Catalog(databases=tuple(held), objects=objects, database_details={d: self.database(d) for d in held})

    def views(self, keys: Collection[str]) -> dict[str, View | None]:
        found = {}
        for key in keys:
            row = self.store.row(key)
            obj = None if row is None else live_object(row[0], row[1])
            found[key] = obj if isinstance(obj, View) else None
        return found

    def count_partitions(self, key: str) -> int:
        return 0

    def partition_values(self, key: str) -> tuple[PartitionValues, ...]:
        return ()

    def stored(self, key: str) -> Stored:
        raise SchemaflowError(f"{NAME} keeps no files")

    def data_folders(self, key: str) -> tuple[str, ...]:
        raise SchemaflowError(f"{NAME} keeps no files")

    def enforces_type_rule(self) -> bool:
        return False


@dataclass
class SqliteWriter:
    store: Store
    endpoint: str
    progress: Callable[[str], None] | None = None
    careless: bool = False  # the guard off (a careless catalog): check_guards must notice

    def _write(self, key: str, expected: str | None, change: Callable[[Object], Object],
               set: Mapping[str, str] = {}, unset: Sequence[str] = ()) -> None:
        """One guarded write of ``key``: ``change`` its object, set and unset parameters, compare-and-swap."""
        row = self.store.row(key)
        if row is None:
            raise ConcurrentChange(key, expected, None)
        data, parameters, revision = row
        if expected is not None and parameters.get(VERSION_KEY) != expected and not self.careless:
            raise ConcurrentChange(key, expected, parameters.get(VERSION_KEY))
        changed = change(live_object(data, parameters))
        kept = {k: v for k, v in parameters.items() if k not in unset}
        parameters = fill_live_state(kept | dict(set), lambda: live_object(_definition(changed), kept | dict(set)))
        with self.store.transaction() as db:
            if db.execute("UPDATE objects SET data = ?, parameters = ?, revision = revision + 1 "
                          "WHERE key = ? AND revision = ?", (json.dumps(_definition(changed)), json.dumps(parameters),
                                                             key, revision)).rowcount != 1:
                raise ConcurrentChange(key, expected, "another revision", what="row")

    def _insert(self, obj: Object, claim: str, replacing: bool = False) -> None:
        parameters = {**obj.properties, VERSION_KEY: claim}
        with self.store.transaction() as db:
            row = db.execute("SELECT parameters FROM objects WHERE key = ?", (obj.key,)).fetchone()
            if row is not None and not (replacing and json.loads(row[0]).get(VERSION_KEY) == claim):
                raise ConcurrentChange(obj.key, None if not replacing else claim, json.loads(row[0]).get(VERSION_KEY))
            db.execute("INSERT OR REPLACE INTO objects VALUES (?, ?, ?, ?, 0)",
                       (obj.key, obj.database, json.dumps(_definition(obj)), json.dumps(parameters)))

    def _delete(self, key: str, expected: str | None) -> None:
        with self.store.transaction() as db:
            row = db.execute("SELECT parameters FROM objects WHERE key = ?", (key,)).fetchone()
            if row is not None and expected is not None and json.loads(row[0]).get(VERSION_KEY) != expected:
                raise ConcurrentChange(key, expected, json.loads(row[0]).get(VERSION_KEY))
            db.execute("DELETE FROM objects WHERE key = ?", (key,))

    def add_database(self, database: Database) -> None:
        with self.store.transaction() as db:
            db.execute("INSERT OR IGNORE INTO databases VALUES (?, ?)", (database.name, json.dumps(database.to_data())))

    def set_database_properties(self, name: str, properties: Mapping[str, str]) -> None:
        self.update_database_properties(name, (), lambda _: properties)

    def update_database_properties(self, name: str, keys: Collection[str],
                                   update: Callable[[Mapping[str, str]], Mapping[str, str]]) -> None:
        with self.store.transaction() as db:
            found = db.execute("SELECT data FROM databases WHERE name = ?", (name,)).fetchone()
            database = Database.from_data(json.loads(found[0])) if found else Database(name)
            current = {k: database.properties[k] for k in keys if k in database.properties}
            database = replace(database, properties={**database.properties, **update(current)})
            db.execute("INSERT OR REPLACE INTO databases VALUES (?, ?)", (name, json.dumps(database.to_data())))

    def set_parameters(self, key: str, set: Mapping[str, str], unset: Sequence[str],
                       expected: str | None = None) -> None:
        self._write(key, expected, lambda obj: obj, set, unset)

    def check_guards(self, key: str) -> None:
        try:
            self._write(key, "\0never a version", lambda obj: obj)
        except ConcurrentChange:
            return
        raise SchemaflowError(f"{self.endpoint} wrote {key} under a stamp it does not hold: its guard is off, so nothing was applied: "
                              "set metastore.options.careless: false")

    def create_table(self, table: Table, claim: str) -> None:
        self._insert(table, claim)

    def add_columns(self, key: str, columns: Sequence[Column], expected: str | None) -> None:
        self._write(key, expected, lambda t: replace(_table(t), columns=_table(t).columns + tuple(columns)))

    def set_table_comment(self, key: str, comment: str | None, expected: str | None) -> None:
        self._write(key, expected, lambda t: replace(t, comment=comment))

    def set_column_comments(self, key: str, columns: Sequence[Column], expected: str | None) -> None:
        comments = {c.name: c.comment for c in columns}
        self._write(key, expected, lambda t: replace(_table(t), columns=tuple(
            replace(c, comment=comments[c.name]) if c.name in comments else c for c in _table(t).columns)))

    def set_columns(self, key: str, columns: Sequence[Column], partition_columns: Sequence[Column], cascade: bool,
                    batched: bool, parameters: Mapping[str, str] = {}, expected: str | None = None) -> None:
        self._write(key, expected, lambda t: replace(_table(t), columns=tuple(columns),
                                                      partition_columns=tuple(partition_columns)), parameters)

    def set_storage(self, key: str, serde_properties: Mapping[str, str], buckets: int | None,
                    expected: str | None = None) -> None:
        def stored(t: Object) -> Table:
            table = _table(t)
            bucketing = table.bucketing if buckets is None or table.bucketing is None else \
                replace(table.bucketing, count=buckets)
            return replace(table, serde_properties=dict(serde_properties), bucketing=bucketing)
        self._write(key, expected, stored)

    def drop_table(self, key: str, expected: str | None) -> None:
        self._delete(key, expected)

    def create_view(self, view: View, replace: bool, claim: str) -> None:
        self._insert(view, claim, replacing=replace)

    def drop_view(self, key: str, expected: str | None = None, engine: bool = False) -> None:
        self._delete(key, expected)

    def check_views(self, views: Mapping[str, ViewSql | None]) -> None:
        for key, sql in views.items():
            row = self.store.row(key)
            if sql is not None and (row is None or row[0].get("sql") != sql.sql):
                raise SchemaflowError(f"{key} is not the view it was when planned: nothing was applied. Plan again")

    def commit_iceberg(self, table: Table, sources: Mapping[str, str], requires: IcebergState | None, create: bool,
                       set: Mapping[str, str], unset: Sequence[str], expected: str | None = None,
                       backup: str | None = None, keep: bool = True) -> None:
        if backup:
            raise SchemaflowError(f"{NAME} converts no table to Iceberg")
        if create:
            self._insert(replace(table, properties={}), set.get(VERSION_KEY, ""))
            self._write(table.key, None, lambda t: t, set)
        else:
            self._write(table.key, expected, lambda t: replace(table, properties=t.properties), set, unset)

    def partition_view(self, key: str, columns: Sequence[str], expected: str | None = None) -> None:
        raise SchemaflowError(f"{NAME} holds no view partitions")

    def change_view_partitions(self, key: str, columns: Sequence[str], add: Sequence[PartitionValues],
                               drop: Sequence[PartitionValues], kept: Any = None) -> None:
        raise SchemaflowError(f"{NAME} holds no view partitions")

    def keep_view_partitions(self, key: str) -> Any:
        raise SchemaflowError(f"{NAME} holds no view partitions")

    def rewrite_table(self, *args: Any, **kwargs: Any) -> None:
        raise SchemaflowError(f"{NAME} runs no engine: it cannot rewrite a table's rows")

    def restore_table(self, *args: Any, **kwargs: Any) -> None:
        raise SchemaflowError(f"{NAME} runs no engine: it cannot swap a backup in")

    def after_apply(self, changed: Sequence[str]) -> list[str]:
        return []

    def beside(self) -> AbstractContextManager[CatalogWriter | None]:
        return nullcontext(None)


def _table(obj: Object) -> Table:
    if not isinstance(obj, Table):
        raise SchemaflowError(f"{obj.key} is a view, not a table")
    return obj


def _definition(obj: Object) -> dict[str, Any]:
    """What a row keeps of an object: its plain data without what its parameters hold."""
    return to_data(replace(obj, properties={}, managed_keys=(), version=None))


# How a plan words its writes: rows of its SQLite file, each update a compare-and-swap on the row's revision.
UPDATE = "UPDATE of its row at the revision read"
WORDING = Wording(sql=False, calls={
    "add_database": "INSERT OR IGNORE of its row", "set_database_parameters": "UPDATE of its row, unguarded",
    "create_table": "INSERT of its row, unless the name is taken", "drop_table": "DELETE of its row",
    "create_view": "INSERT of its row, unless the name is taken", "create_view:replace": "REPLACE of its row",
    "drop_view": "DELETE of its row", "check_live_views": "SELECT of their rows",
    "iceberg_commit:create": "INSERT of its row, then an UPDATE", **dict.fromkeys(
        ("add_columns", "set_table_comment", "set_column_comments", "set_columns", "set_columns:cascade",
         "set_storage", "set_parameters", "set_parameters:view", "iceberg_commit"), UPDATE)})
CAPABILITIES = Capabilities(noun="SQLite catalog", view_partitions=False, renames=False, engine=False, value_limit=None,
                            wording=WORDING)
OPTIONS = {"type": "object", "properties": {"careless": {"type": "boolean"}}, "additionalProperties": False}  # the guard off: check_guards must notice


@register_backend(NAME, capabilities=CAPABILITIES, options_schema={
    "type": "object", "properties": {"type": {}, "options": OPTIONS}, "additionalProperties": False})
@dataclass
class SqliteCatalog(WithoutEngine):
    project: Project
    opening: Opening

    @functools.cached_property
    def _store(self) -> Store:
        (self.project.root / ".schemaflow").mkdir(exist_ok=True)
        return Store(str(self.project.root / FILE))

    def where(self) -> str:
        return f"the SQLite catalog {self.project.root / FILE}"

    @property
    def reader(self) -> CatalogReader:
        return SqliteReader(self._store, f"{NAME}:{FILE}")

    def read(self, databases: tuple[str, ...]) -> Catalog:
        return self.reader.read(databases)

    def writer(self) -> CatalogWriter | None:
        return SqliteWriter(self._store, f"{NAME}:{FILE}",
                            careless=bool(self.project.settings.metastore_options.get("careless")))
