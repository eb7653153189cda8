"""The AWS Glue Data Catalog as a catalog backend (``metastore.type: glue``).

Nothing is connected until a command reads or writes: then a boto3 client of the region and endpoint
``metastore.options`` name (``glue.client``), with credentials from AWS's default chain. The plan records the catalog
as ``glue:<region>:<catalog id>`` (the account's, from STS, when ``catalog_id`` is not set). Hive-format and
data-source tables are read and written (``glue.reader``, ``glue.writer``), and Iceberg tables, by commits of their
metadata (``glue.iceberg``), whose new files go to ``metastore.warehouse`` where a database has no location; views are
refused at validate and rewrites at plan (its capabilities say so), each saying why.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from schemaflow.catalog.backend import ReadAhead, WithoutEngine
from schemaflow.catalog.backends import Opening, register_backend
from schemaflow.capabilities import Capabilities, GuardKind, Wording
from schemaflow.catalog.glue.client import OPTIONS, GlueCatalog, GlueOptions
from schemaflow.catalog.glue.reader import GlueReader
from schemaflow.catalog.glue.writer import GlueWriter
from schemaflow.errors import SchemaflowError
from schemaflow.model import Catalog
from schemaflow.project import Project
from schemaflow.sql.table_kinds import CUSTOM, DELTA, ICEBERG, names


def glue_options(project: Project) -> GlueOptions:
    """``metastore.options`` of the project's settings (its target's, where chosen), checked."""
    return GlueOptions.of(project.settings.metastore_options)


# Glue holds Hive-format, data-source, Iceberg and Delta tables here (no views: docs/backends/glue.md says why); no engine,
# no rename, so no Delta commit (a Delta table is read from its log and its changes blocked: ``plan.catalog_fit``).
# Each table update names the VersionId it read; a parameter value holds up to 512,000 bytes.
# How a plan words what ``GlueWriter`` calls (the kinds it refuses are named by none): every change to a table is the
# guarded update.
_UPDATE = "glue:GetTable, then glue:UpdateTable at the VersionId read"
WORDING = Wording(sql=False, calls={
    "add_database": "glue:CreateDatabase",
    "set_database_parameters": "glue:GetDatabase, then glue:UpdateDatabase, unguarded",
    "create_table": "glue:CreateTable, the entry Spark's Hive catalog writes, a managed table in its database's "
                    "location where it has one",
    "add_columns": _UPDATE, "set_table_comment": _UPDATE, "set_column_comments": _UPDATE, "set_columns": _UPDATE,
    "set_columns:cascade": f"{_UPDATE}, then glue:BatchUpdatePartition, 100 partitions a call",
    "set_storage": _UPDATE, "set_parameters": _UPDATE,
    "drop_table": "glue:DeleteTable: the entry, its files kept",
    "iceberg_commit:create": "its first metadata file written, then glue:CreateTable, the entry pyiceberg's Glue "
                             "catalog writes",
    "iceberg_commit": "glue:GetTable, its next metadata file written, then glue:UpdateTable at the VersionId read",
    "register_table": "glue:CreateTable naming the metadata file, the entry pyiceberg's Glue catalog writes, refused "
                      "where the name is taken",
})
CAPABILITIES = Capabilities(
    noun="Glue Data Catalog", table_kinds=frozenset({*names(False), *names(True), CUSTOM, ICEBERG, DELTA}), views=False,
    view_partitions=False, renames=False, engine=False, drop_purges=False, guard=GuardKind.VERSION_ID,
    value_limit=512_000, wording=WORDING, claim_threads=8, registers=True, commits_delta=False)
_KINDS = {"str": "string", "bool": "boolean"}
SETTINGS = {
    "type": "object", "additionalProperties": False,
    "properties": {"type": {}, "warehouse": {"type": "string", "minLength": 1}, "options": {
        "type": "object", "additionalProperties": False,
        "properties": {name: {"type": _KINDS[kind.__name__]} for name, kind in OPTIONS.items()}}},
}


@register_backend("glue", capabilities=CAPABILITIES, options_schema=SETTINGS)
@dataclass
class GlueBackend(WithoutEngine):
    """A project's Glue Data Catalog, connected on first use (or given, as tests do: ``opening.connected``, a
    ``GlueCatalog``)."""

    project: Project
    opening: Opening
    glue: GlueCatalog = field(init=False)
    _reader: GlueReader | None = field(default=None, init=False, repr=False)
    _ahead: ReadAhead = field(default_factory=ReadAhead, init=False, repr=False)

    def __post_init__(self) -> None:
        given = self.opening.connected
        self.glue = given if isinstance(given, GlueCatalog) else GlueCatalog(glue_options(self.project))

    def where(self) -> str:
        options = self.glue.options
        where = f"the Glue Data Catalog in {options.region or 'the default AWS region'}"
        if options.catalog_id:
            where += f" of account {options.catalog_id}"
        return where + (f" at {options.endpoint}" if options.endpoint else "")

    @property
    def reader(self) -> GlueReader:
        if self._reader is None:
            self._reader = GlueReader(self.glue, self.project.settings.metastore_warehouse)
        return self._reader

    def read_ahead(self, databases: tuple[str, ...]) -> None:
        """Start reading ``databases`` in the background (``ReadAhead``) while this process parses the project's
        files; the reader is made first, here, so that both threads share it. A reader that cannot be made (no
        credentials) is left for ``read`` to report."""
        try:
            reader = self.reader
        except SchemaflowError:
            return
        self._ahead.start(databases, reader.read)

    def read(self, databases: tuple[str, ...]) -> Catalog:
        self.opening.progress.write(f"Reading {self.where()} ...\n")
        self.opening.progress.flush()
        return self._ahead.take(databases, self.reader.read)

    def writer(self) -> GlueWriter:
        def say(message: str) -> None:
            self.opening.progress.write(message + "\n")
        return GlueWriter(self.glue, self.reader, say)
