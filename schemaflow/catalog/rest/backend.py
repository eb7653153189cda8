"""An Iceberg REST catalog as a catalog backend (``metastore: {type: iceberg_rest, uri, warehouse, options}``).

The project's ``metastore:`` block names the catalog (checked by ``connection.rest_settings``); credentials come from
the environment. Nothing is connected until a reader or writer is used; the endpoint a plan records is
``rest:<uri>#<warehouse>``. No engine runs here: views' SQL is not analysed, and the questions only Spark could answer
get None.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from schemaflow.catalog.backend import WithoutEngine
from schemaflow.catalog.backends import Opening, register_backend
from schemaflow.capabilities import Capabilities, GuardKind
from schemaflow.catalog.rest.connection import OPTIONS, Connection, rest_settings
from schemaflow.catalog.rest.reader import RestReader
from schemaflow.catalog.rest.writer import RestWriter
from schemaflow.model import Catalog
from schemaflow.project import Project

NAME = "iceberg_rest"
# An Iceberg REST catalog holds Iceberg tables and views, with no engine: nothing renames a table under a guard, and
# views are not analysed as apply runs. A commit is guarded by the requirements it asserts; properties hold any length.
CAPABILITIES = Capabilities(noun="Iceberg REST catalog", table_kinds=frozenset({"iceberg"}), view_partitions=False,
                            renames=False, engine=False, guard=GuardKind.REQUIREMENTS, value_limit=None,
                            registers=True)
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

    def read(self, databases: tuple[str, ...]) -> Catalog:
        self.opening.progress.write(f"Reading {self.where()} ...\n")
        self.opening.progress.flush()
        return self.reader.read(databases)

    def writer(self) -> RestWriter:
        return RestWriter(self.connection)
