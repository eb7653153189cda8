"""An Iceberg REST catalog as a catalog backend (``metastore: {type: iceberg_rest, uri, warehouse, options}``).

The project's ``metastore:`` block names the catalog (checked by ``connection.rest_settings``); credentials come from
the environment. Nothing is connected until a reader or writer is used; the endpoint a plan records is
``rest:<uri>#<warehouse>``. No engine runs here: views' SQL is not analysed, and the questions only Spark could answer
get None.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from schemaflow.catalog.backend import ReadAhead, WithoutEngine
from schemaflow.catalog.backends import Opening, register_backend
from schemaflow.capabilities import Capabilities, GuardKind, Wording
from schemaflow.catalog.rest.connection import OPTIONS, Connection, rest_settings
from schemaflow.catalog.rest.reader import RestReader
from schemaflow.catalog.rest.writer import RestWriter
from schemaflow.model import Catalog
from schemaflow.errors import SchemaflowError
from schemaflow.project import Project

NAME = "iceberg_rest"
# An Iceberg REST catalog holds Iceberg tables and views, with no engine: nothing renames a table under a guard, and
# views are not analysed as apply runs. A commit is guarded by the requirements it asserts; properties hold any length.
# How a plan words what ``RestWriter`` sends, call by call (the kinds it refuses are named by none).
_TABLE = "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}"
_VIEW = "POST /v1/{prefix}/namespaces/{namespace}/views/{view}"
_TABLE_COMMIT = (f"{_TABLE}: one commit, its requirements the table's uuid, current schema, default spec and sort "
                 "order and last column and partition ids as loaded; another writer's change in between is a 409")
_VIEW_VERSION = "dialect spark, a column of no declared type stored as string"
WORDING = Wording(sql=False, database="namespace", calls={
    "add_database": "POST /v1/{prefix}/namespaces",
    "set_database_parameters": "POST /v1/{prefix}/namespaces/{namespace}/properties, unguarded",
    "iceberg_commit:create": "POST /v1/{prefix}/namespaces/{namespace}/tables: one create-table request, the "
                             "catalog's location where none is declared",
    "iceberg_commit": _TABLE_COMMIT,
    "set_parameters": _TABLE_COMMIT,
    "set_parameters:view": f"{_VIEW}: one view commit, its requirement the view's uuid as loaded",
    "drop_table": "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}: the entry, its files kept",
    "create_view": f"POST /v1/{{prefix}}/namespaces/{{namespace}}/views: REST view API, {_VIEW_VERSION}",
    "create_view:replace": f"{_VIEW}: one view commit adding a version ({_VIEW_VERSION}), its requirement the "
                           "view's uuid as loaded",
    "drop_view": "DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "register_table": "POST /v1/{prefix}/namespaces/{namespace}/register: one request, refused with a 409 where the "
                      "name is taken",
})
CAPABILITIES = Capabilities(noun="Iceberg REST catalog", table_kinds=frozenset({"iceberg"}), view_partitions=False,
                            renames=False, engine=False, drop_purges=False, guard=GuardKind.REQUIREMENTS,
                            value_limit=None, wording=WORDING, registers=True, claim_threads=8)
SETTINGS = {
    "type": "object", "additionalProperties": False, "required": ["uri"],
    "properties": {
        "type": {},
        "uri": {"type": "string", "pattern": "^https?://\\S+(?![\\s\\S])",
                "description": "use the catalog's base URL, such as https://catalog.example.com/api/catalog"},
        "warehouse": {"type": "string", "minLength": 1},
        "options": {"type": "object", "additionalProperties": False,
                    "properties": {name: {"type": "string"} for name in sorted(OPTIONS)},
                    "patternProperties": {"^header\\.[A-Za-z0-9-]+$": {"type": "string"}}},
    },
}


@register_backend(NAME, capabilities=CAPABILITIES, options_schema=SETTINGS)
@dataclass
class RestBackend(WithoutEngine):
    """A project's Iceberg REST catalog, connected on first use."""

    project: Project
    opening: Opening
    _connection: Connection | None = field(default=None, init=False, repr=False)
    _ahead: ReadAhead = field(default_factory=ReadAhead, init=False, repr=False)

    @property
    def connection(self) -> Connection:
        if self._connection is None:
            settings = self.project.settings  # the target's where one is chosen, the environment's uri first
            block = {"uri": settings.metastore_uri, "warehouse": settings.metastore_warehouse,
                     "options": settings.metastore_options}
            self._connection = Connection(rest_settings({k: v for k, v in block.items() if v}), os.environ)
        return self._connection

    def where(self) -> str:
        return f"the Iceberg REST catalog at {self.connection.settings.uri}"

    @property
    def reader(self) -> RestReader:
        return RestReader(self.connection)

    def read_ahead(self, databases: tuple[str, ...]) -> None:
        """Start reading ``databases`` in the background (``ReadAhead``): the catalog answers each table's load while
        this process parses the project's files. Settings it cannot use are left for ``read`` to report."""
        try:
            reader = self.reader  # made here, connected in the background: this thread uses the connection after
        except SchemaflowError:
            return
        self._ahead.start(databases, reader.read)

    def read(self, databases: tuple[str, ...]) -> Catalog:
        self.opening.progress.write(f"Reading {self.where()} ...\n")
        self.opening.progress.flush()
        return self._ahead.take(databases, self.reader.read)

    def writer(self) -> RestWriter:
        return RestWriter(self.connection)
