"""The AWS Glue Data Catalog as a catalog backend (``metastore.type: glue``).

Nothing is connected until a command reads or writes: then a boto3 client of the region and endpoint
``metastore.options`` name (``glue.client``), with credentials from AWS's default chain. The plan records the catalog
as ``glue:<region>:<catalog id>`` (the account's, from STS, when ``catalog_id`` is not set). Hive-format and
data-source tables are read and written (``glue.reader``, ``glue.writer``); views, Iceberg tables and rewrites are
refused when applied, saying so.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from schemaflow.catalog.backend import ReadAhead, WithoutEngine
from schemaflow.catalog.backends import Opening, register_backend
from schemaflow.capabilities import Capabilities, GuardKind
from schemaflow.catalog.glue.client import OPTIONS, GlueCatalog, GlueOptions
from schemaflow.catalog.glue.reader import GlueReader
from schemaflow.catalog.glue.writer import GlueWriter
from schemaflow.errors import SchemaflowError
from schemaflow.model import Catalog
from schemaflow.project import Project
from schemaflow.sql.table_kinds import CUSTOM, names


def glue_options(project: Project) -> GlueOptions:
    """``metastore.options`` of the project's settings (its target's, where chosen), checked."""
    return GlueOptions.of(project.settings.metastore_options)


# Glue holds Hive-format and data-source tables here (Iceberg tables and views are to come); no engine, no rename.
# Each table update names the VersionId it read; a parameter value holds up to 512,000 bytes.
CAPABILITIES = Capabilities(
    noun="Glue Data Catalog", table_kinds=frozenset({*names(False), *names(True), CUSTOM}), views=False,
    view_partitions=False, renames=False, engine=False, guard=GuardKind.VERSION_ID, value_limit=512_000)
_KINDS = {"str": "string", "bool": "boolean"}
SETTINGS = {
    "type": "object", "additionalProperties": False,
    "properties": {"type": {}, "options": {
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
            self._reader = GlueReader(self.glue)
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
