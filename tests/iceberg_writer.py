"""Another Iceberg writer on the metastore schemaflow applies to, for tests: pyiceberg's tables (appends,
schema changes) committed as Iceberg's own catalogs commit without a lock, the metastore's
``metadata_location`` swapped with its compare-and-swap, through the metastore's client in the test JVM."""
from __future__ import annotations

import uuid
from typing import Any

from pyiceberg.catalog.noop import NoopCatalog
from pyiceberg.io import load_file_io
from pyiceberg.serializers import FromInputFile, ToOutputFile
from pyiceberg.table import CommitTableResponse, Table
from pyiceberg.table.update import TableRequirement, TableUpdate, update_table_metadata

from schemaflow.catalog.hive.metastore import Metastore


class OtherWriter(NoopCatalog):
    """A pyiceberg catalog whose tables are the metastore's Iceberg tables."""

    def __init__(self, metastore: Metastore) -> None:
        super().__init__("other-writer")
        self.metastore = metastore

    def load_table(self, identifier: Any) -> Table:
        database, name = identifier.split(".") if isinstance(identifier, str) else identifier
        location = self.metastore.msc.getTable(database, name).getParameters().get("metadata_location")
        io = load_file_io({}, location)
        return Table((database, name), FromInputFile.table_metadata(io.new_input(location)), location, io, self)

    def commit_table(self, table: Table, requirements: tuple[TableRequirement, ...],
                     updates: tuple[TableUpdate, ...]) -> CommitTableResponse:
        database, name = table.name()
        now = self.load_table((database, name))
        for requirement in requirements:
            requirement.validate(now.metadata)
        metadata = update_table_metadata(now.metadata, updates, metadata_location=now.metadata_location)
        version = int(now.metadata_location.rsplit("/", 1)[-1].split("-", 1)[0]) + 1
        location = f"{metadata.location}/metadata/{version:05d}-{uuid.uuid4()}.metadata.json"
        ToOutputFile.table_metadata(metadata, now.io.new_output(location))
        hms = self.metastore.msc.getTable(database, name)
        hms.getParameters().put("previous_metadata_location", now.metadata_location)
        hms.getParameters().put("metadata_location", location)
        for key, value in metadata.properties.items():
            hms.getParameters().put(key, value)
        self.metastore.alter(hms, now.metadata_location, guarded_by="metadata_location")
        return CommitTableResponse(metadata=metadata, metadata_location=location)
