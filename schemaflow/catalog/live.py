"""The live catalog of a project: which backend reads it and which writes it, picked from the settings.

A command asks ``Live`` and never names a backend: ``reader`` for what a plan is made against (a
``CatalogReader``), ``writer()`` for where apply runs (a ``CatalogWriter``), and the few reads
that only a session with Spark can answer (the columns of each partition, a view's SQL analysed by
Spark, what was applied). Today the backend is the Hive metastore: written through a SparkSession's
client, in a JVM started on first use; read without a JVM where the settings allow (a plain
``thrift://`` metastore whose client the user does not tune), else through the same client.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from schemaflow.background import Background
from schemaflow.catalog.backend import CatalogReader
from schemaflow.catalog.spark_compat import CLIENT_CHOICE, HIVE_JARS_KEY
from schemaflow.catalog.spark_defaults import spark_defaults
from schemaflow.errors import SchemaflowError
from schemaflow.model import Catalog
from schemaflow.project import Project, Settings, no_target_chosen
from schemaflow.spark_version import INSTALL, installed
from schemaflow.wording import plural

if TYPE_CHECKING:  # pyspark loads only when a command needs the live metastore
    from schemaflow.catalog.history import Applied
    from schemaflow.catalog.metastore import Metastore
    from schemaflow.catalog.thrift_reader import ThriftReader


@dataclass(frozen=True)
class _ReadAhead:
    """A JVM-free read of ``databases`` under way: the connection, then the catalog read over it."""

    databases: tuple[str, ...]
    connection: Background[ThriftReader]
    catalog: Background[Catalog]


@dataclass
class Live:
    """The live metastore of a project, connected on first use (or given, as tests do).

    ``metastore`` is Spark's client, in a JVM started on first use. With ``direct`` (the commands
    that only read: plan, drift, snapshot), ``reader`` reads a ``thrift://`` metastore without a JVM
    (``catalog.thrift_reader``), and Spark starts only if the command needs it after all (to check
    a view's SQL); a metastore that does not answer plain Thrift (SASL, TLS) is read through Spark.
    ``read_ahead`` starts such a read early, in the background.
    """

    project: Project
    connected: Metastore | None = None
    progress: TextIO = sys.stderr
    direct: bool = False
    _reader: CatalogReader | None = field(default=None, init=False, repr=False)
    _ahead: _ReadAhead | None = field(default=None, init=False, repr=False)

    @property
    def metastore(self) -> Metastore:
        if self.connected is None:
            # Imported here: pyspark loads only when a command needs the live metastore.
            if installed() is None:
                raise SchemaflowError(f"this command runs Spark, and pyspark is not installed: {INSTALL} (pyspark "
                                      "is an extra: a plan --base needs none)")
            from schemaflow.catalog.metastore import Metastore
            from schemaflow.catalog.session import spark_session

            settings = self.project.settings
            uri = direct_uri(settings)
            if uri is not None and {**spark_defaults(), **settings.spark_conf}.get(HIVE_JARS_KEY, "builtin") == "builtin":
                from schemaflow.catalog.thrift_reader import check_server

                check_server(uri)
            self._say(f"Starting Spark ({settings.spark_master}) and connecting to {self._where()} ...")
            started = time.monotonic()
            self.connected = Metastore.connect(spark_session(settings), lock_guards=settings.lock_guards)
            self._say(f"Spark is up ({time.monotonic() - started:.1f} s)")
        return self.connected

    @property
    def reader(self) -> CatalogReader:
        """What reads the live state: the JVM-free reader where it can, else ``metastore``."""
        if self._reader is None:
            uri = self._direct_uri()
            if uri is not None:
                from schemaflow.catalog.thrift_reader import NotPlainThrift, ThriftReader

                self._say(f"Reading {self._where()} ...")
                try:
                    self._reader = self._ahead.connection.result() if self._ahead else ThriftReader.connect(uri)
                except NotPlainThrift:
                    self._ahead = None
            if self._reader is None:
                self._reader = self.metastore
        return self._reader

    def read_ahead(self, databases: tuple[str, ...]) -> None:
        """Start reading ``databases`` without a JVM in the background, where ``reader`` would: the
        metastore server answers while this process parses the project's files (on one core, a plan
        of 5,500 objects on a PostgreSQL-backed server spends seconds in each). ``read`` of the same
        databases then takes what it read; its errors surface there, as they would have."""
        uri = self._direct_uri()
        if uri is None or not databases or self._reader is not None or no_target_chosen(self.project.settings):
            return
        from schemaflow.catalog.thrift_reader import ThriftReader

        connection = Background(lambda: ThriftReader.connect(uri), "metastore-connect")
        self._ahead = _ReadAhead(databases, connection,
                                 Background(lambda: connection.result().read(databases), "metastore-read"))

    def read(self, databases: tuple[str, ...]) -> Catalog:
        reader, ahead = self.reader, self._ahead
        self._ahead = None
        if ahead is not None and ahead.databases == databases:
            return ahead.catalog.result()
        if ahead is not None:  # a read of other databases: it is on the reader's connection, one read at a time
            ahead.catalog.wait()
        if reader is not self.connected:  # the JVM-free reader said where it reads
            return reader.read(databases)
        self._say(f"Reading {', '.join(databases) or 'no database'} through Spark ...")
        started = time.monotonic()
        catalog = reader.read(databases)
        self._say(f"Read {plural(len(catalog.objects), 'object')} in {time.monotonic() - started:.1f} s")
        return catalog

    def writer(self) -> Metastore:
        """What the executor runs actions against: the metastore client and its Spark session."""
        return self.metastore

    def stale_partitions(self, key: str, exact: bool = False) -> int:
        """How many partitions of ``key`` have a stale column list (read through Spark's client; see
        ``catalog.columns.stale_partitions``)."""
        return self.metastore.stale_partitions(key, exact)

    def view_problems(self, desired: Catalog, views: Iterable[str]) -> dict[str, str]:
        """Why Spark refuses the SQL of each of ``views`` as ``desired`` declares it (see ``catalog.view_check``)."""
        from schemaflow.catalog.view_check import ViewChecker

        return ViewChecker(self.metastore.spark, desired).problems(views)

    def history(self, databases: tuple[str, ...], objects: Sequence[str] = ()) -> list[Applied]:
        """What schemaflow applied in ``databases`` (see ``catalog.history``), read by ``reader``."""
        from schemaflow.catalog.history import read_history

        return read_history(self.reader, databases, objects)

    def _direct_uri(self) -> str | None:
        return direct_uri(self.project.settings) if self.direct and self.connected is None else None

    def _where(self) -> str:
        settings = self.project.settings
        unchosen = no_target_chosen(settings)
        if unchosen:
            raise SchemaflowError(unchosen)
        where = settings.metastore_uri or f"the embedded metastore in {settings.derby_dir}"
        return where + (f" (target {settings.target})" if settings.target else "")

    def _say(self, message: str) -> None:
        self.progress.write(message + "\n")
        self.progress.flush()


def direct_uri(settings: Settings) -> str | None:
    """The metastore to read without a JVM: a ``thrift://`` one whose client the user does not tune
    (a Spark setting of Hive's metastore client, such as SASL, is only honoured by Spark's client)."""
    uri = settings.metastore_uri
    tuned = any(key.startswith(("spark.hadoop.hive.metastore.", "spark.sql.hive.metastore.", "spark.hive.metastore."))
                and key not in CLIENT_CHOICE for key in settings.spark_conf)
    return uri if uri and uri.startswith("thrift://") and not tuned else None

