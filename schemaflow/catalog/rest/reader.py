"""The live state of an Iceberg REST catalog, as the model: namespaces as databases, Iceberg tables, views.

A namespace is a database: its ``comment`` and ``location`` properties are the database's comment and location, the
others its properties. Nested namespaces are not schemaflow's (a project names ``db.name``): they are not listed. A
table is read from the metadata its load returns, by the same reading a Hive metastore's Iceberg tables get
(``catalog.iceberg_metadata.iceberg_table``); one the reading refuses is kept with the reason (``unreadable``), as
there. A view is its current version: the SQL of its ``spark`` representation (else its first SQL one), its schema's
column names and comments, its ``comment`` property, and its default namespace where that is not its own. Every
entry comes with its raw properties (``LiveEntry``), ``schemaflow.*`` included, for drift and history.

The catalog holds no partitions schemaflow lists, no file statistics and no positional type rule: those answers are
empty. A namespace's tables are loaded ``LOAD_THREADS`` at a time: each load is a round trip in which the catalog
reads a metadata file, and a plan waits for them all.
"""
from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from schemaflow.catalog.backend import LiveEntry
from schemaflow.catalog.iceberg_metadata import Unreadable, iceberg_table
from schemaflow.catalog.rest.connection import TABLE, VIEW, Connection
from schemaflow.errors import SchemaflowError
from schemaflow.model import (COMMENT_KEY, SCHEMAFLOW_PREFIX, Catalog, Column, Database, PartitionValues, Stored,
                              Table, View, recorded)
from schemaflow.sql.iceberg_types import spark_type
from schemaflow.sql.table_kinds import ICEBERG

LOCATION_KEY = "location"  # the namespace property Iceberg's catalogs keep a namespace's location in
SPARK_DIALECT = "spark"
LOAD_THREADS = 8  # as many as apply's claims (``Capabilities.claim_threads``)


class RestReader:
    """Reads an Iceberg REST catalog through ``connection`` (connected on the first read)."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.endpoint = connection.settings.endpoint

    def databases(self) -> tuple[str, ...]:
        """The catalog's top-level namespaces, sorted."""
        return tuple(sorted(ns[0] for ns in self.connection.catalog.list_namespaces() if len(ns) == 1))

    def database(self, name: str) -> Database:
        """A namespace as a database: its comment and location properties, and the others."""
        properties = dict(self.connection.catalog.load_namespace_properties((name,)))
        return Database(name, properties.pop(COMMENT_KEY, None) or None, properties.pop(LOCATION_KEY, None) or None,
                        dict(sorted(properties.items())))

    def table_data(self, database: str) -> Iterable[dict[str, Any]]:
        raise SchemaflowError("an Iceberg REST catalog holds no Hive metastore entries: read its entries instead")

    def entries(self, database: str) -> Iterator[LiveEntry]:
        """Every table and view of ``database``, each with its raw properties."""
        catalog = self.connection.catalog
        names = [identifier[-1] for identifier in sorted(catalog.list_tables((database,)))]
        with ThreadPoolExecutor(max_workers=LOAD_THREADS) as pool:
            tables = list(pool.map(lambda name: self.table_entry(database, name), names))
        yield from tables
        for identifier in sorted(catalog.list_views((database,))):
            yield self.view_entry(database, identifier[-1])

    def table_entry(self, database: str, name: str) -> LiveEntry:
        """The table ``database.name`` as its current metadata says, and that metadata's properties."""
        from pyiceberg.exceptions import NoSuchTableError

        loaded = self.connection.call("GET", TABLE, {404: NoSuchTableError}, namespace=database,
                                      table=name)
        return LiveEntry(*table_from(database, name, loaded.get("metadata") or {}, str(loaded.get("metadata-location"))))

    def view_entry(self, database: str, name: str) -> LiveEntry:
        """The view ``database.name``'s current version, and its properties."""
        from pyiceberg.exceptions import NoSuchViewError

        loaded = self.connection.call("GET", VIEW, {404: NoSuchViewError}, namespace=database,
                                      view=name)
        metadata = loaded.get("metadata") or {}
        return LiveEntry(view_of(database, name, metadata), texts(metadata.get("properties") or {}))

    def read(self, databases: tuple[str, ...]) -> Catalog:
        """Every table and view in ``databases``; databases that do not exist have none."""
        existing = set(self.databases())
        present = tuple(sorted(d for d in set(databases) if d in existing))
        details = {database: self.database(database) for database in present}
        objects = {entry.object.key: entry.object for database in present for entry in self.entries(database)}
        return Catalog(databases=present, objects=dict(sorted(objects.items())), database_details=details)

    def views(self, keys: Collection[str]) -> dict[str, View | None]:
        """The views ``keys`` name, as the catalog holds them (None: no view of the name)."""
        catalog, found = self.connection.catalog, {}
        existing = set(self.databases())
        for key in sorted(set(keys)):
            database, _, name = key.partition(".")
            exists = database in existing and catalog.view_exists((database, name))
            found[key] = self.view_entry(database, name).object if exists else None
        return found  # type: ignore[return-value]

    def count_partitions(self, key: str) -> int:
        return 0

    def partition_values(self, key: str) -> tuple[PartitionValues, ...]:
        return ()

    def stored(self, key: str) -> Stored:
        return Stored(0, None, None, unknown=1)

    def data_folders(self, key: str) -> tuple[str, ...]:
        return ()

    def enforces_type_rule(self) -> bool:
        return False


def table_from(database: str, name: str, metadata: Mapping[str, Any], location: str) -> tuple[Table, dict[str, str]]:
    """The table a REST catalog's table metadata describes (``unreadable`` saying why where it is not Iceberg's), and
    its properties, raw."""
    properties = texts(metadata.get("properties") or {}) if isinstance(metadata, Mapping) else {}
    try:
        return iceberg_table(database, name, metadata, location), properties
    except Unreadable as unread:
        return Table(database, name, (), format=ICEBERG, data_source=True, unreadable=unread.line()), properties


def view_of(database: str, name: str, metadata: Mapping[str, Any]) -> View:
    """The view a REST catalog's view metadata describes: its current version."""
    version = next(v for v in metadata["versions"] if v["version-id"] == metadata["current-version-id"])
    schema = next(s for s in metadata["schemas"] if s.get("schema-id") == version["schema-id"])
    sql = [r for r in version["representations"] if r.get("type") == "sql"]
    chosen = next((r for r in sql if str(r.get("dialect", "")).lower() == SPARK_DIALECT), sql[0])
    properties = texts(metadata.get("properties") or {})
    namespace = ".".join(version.get("default-namespace") or [database])
    stamps = recorded(properties)
    return View(database, name, str(chosen["sql"]),
                columns=tuple(Column(str(f["name"]), spark_type(f["type"]), f.get("doc") or None)
                              for f in schema["fields"]),
                comment=properties.get(COMMENT_KEY) or None,
                properties={k: v for k, v in sorted(properties.items())
                            if k != COMMENT_KEY and not k.startswith(SCHEMAFLOW_PREFIX)},
                resolves_in=namespace if namespace != database else None, managed_keys=stamps["managed_keys"],
                version=stamps["version"])


def texts(properties: Mapping[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in properties.items()}
