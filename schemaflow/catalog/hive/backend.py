"""The Hive metastore as a catalog backend (``hive``, the default): embedded, or a metastore server.

Written through a SparkSession's Thrift client (``catalog.hive.metastore.Metastore``), in a JVM started on first
use; read without a JVM where the settings allow (a plain ``thrift://`` metastore whose client the user does
not tune: ``catalog.hive.thrift_reader``), else through the same client. The questions only Spark's client can
answer (a partition's column list, a view's SQL as Spark analyses it) start it.
"""
from __future__ import annotations

import time
from collections.abc import Iterable
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from schemaflow.background import Background
from schemaflow.capabilities import HIVE_METASTORE
from schemaflow.catalog.hive import local_server
from schemaflow.catalog.backend import CatalogReader, PlanHints, StoredFunction
from schemaflow.catalog.backends import Opening, register_backend
from schemaflow.catalog.hive.spark_compat import CLIENT_CHOICE, HIVE_JARS_KEY
from schemaflow.catalog.hive.spark_defaults import spark_defaults
from schemaflow.errors import SchemaflowError
from schemaflow.model import Catalog
from schemaflow.project import Project, Settings, no_target_chosen
from schemaflow.spark_version import INSTALL, installed
from schemaflow.wording import plural

if TYPE_CHECKING:  # pyspark loads only when a command needs the live metastore
    from schemaflow.catalog.hive.metastore import Metastore
    from schemaflow.catalog.hive.thrift_reader import ThriftReader


@dataclass(frozen=True)
class _ReadAhead:
    """A JVM-free read of ``databases`` under way: the connection, then the catalog read over it."""

    databases: tuple[str, ...]
    connection: Background[ThriftReader]
    catalog: Background[Catalog]


# The settings of a Hive metastore (``metastore:``): a server's Thrift URI (none: the embedded metastore), the guard,
# the local server's minutes; no ``warehouse`` (``warehouse_dir`` is Spark's) and no ``options``.
OPTIONS: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "type": {},
        "uri": {"type": "string", "pattern": "^thrift://\\S+(?![\\s\\S])",
                "description": "use a Thrift URI such as thrift://127.0.0.1:9083 (several: comma-separated)"},
        "guard": {"enum": ["compare-and-swap", "lock"]},
        "local_server": {"type": "number", "minimum": 0},
    },
}


# The metastore adopts an Iceberg table by its metadata file, as Iceberg's Hive catalog registers one (a project moving
# here): otherwise what a backend registered without capabilities can do.
@register_backend("hive", options_schema=OPTIONS, capabilities=replace(HIVE_METASTORE, registers=True))
@dataclass
class HiveBackend:
    """A project's Hive metastore, connected on first use (or given, as tests do: ``opening.connected``).

    ``metastore`` is Spark's client, in a JVM started on first use. With ``opening.direct`` (the commands
    that only read: plan, drift, snapshot), ``reader`` reads a ``thrift://`` metastore without a JVM
    (``catalog.hive.thrift_reader``), and Spark starts only if the command needs it after all (to check
    a view's SQL); a metastore that does not answer plain Thrift (SASL, TLS) is read through Spark.
    ``read_ahead`` starts such a read early, in the background.
    """

    project: Project
    opening: Opening
    connected: Metastore | None = field(default=None, init=False, repr=False)
    _reader: CatalogReader | None = field(default=None, init=False, repr=False)
    _ahead: _ReadAhead | None = field(default=None, init=False, repr=False)
    _served: local_server.Served | None = field(default=None, init=False, repr=False)  # the local server read

    def __post_init__(self) -> None:
        self.connected = self.opening.connected

    @property
    def metastore(self) -> Metastore:
        if self.connected is None:
            # Imported here: pyspark loads only when a command needs the live metastore.
            if installed() is None:
                raise SchemaflowError(f"this command runs Spark, and pyspark is not installed: {INSTALL}; pyspark "
                                      "is an extra: a plan --base needs none")
            from schemaflow.catalog.hive.metastore import Metastore
            from schemaflow.catalog.hive.session import spark_session

            settings, endpoint = self._spark_settings()
            uri = direct_uri(settings)
            if uri is not None and {**spark_defaults(), **settings.spark_conf}.get(HIVE_JARS_KEY, "builtin") == "builtin":
                from schemaflow.catalog.hive.thrift_reader import check_server

                check_server(uri)
            self._say(f"Starting Spark ({settings.spark_master}) and connecting to {self.where()} ...")
            started = time.monotonic()
            self.connected = Metastore.connect(spark_session(settings), lock_guards=settings.lock_guards,
                                               endpoint=endpoint)
            self._say(f"Spark is up ({time.monotonic() - started:.1f} s)")
        return self.connected

    def _spark_settings(self) -> tuple[Settings, str | None]:
        """The settings Spark starts with, and the name of the metastore it reaches where the settings do not say it.

        The embedded metastore that a local server serves is reached through the server, as a notebook reaches it
        (its name the embedded metastore's, as a plan names it however it was read), by a command that reads and by
        one that writes where the server guards writes (``local_server.guards``); there its compare-and-swap guards
        them, as the embedded metastore's would (``metastore.guard`` is a metastore server's). Else a command that
        writes stops the server and opens the database itself."""
        settings = self.project.settings
        if self._served is None and local_server.serves(settings):
            if self.opening.direct or local_server.guards():
                try:
                    self._serve()
                except local_server.NotServed as error:
                    self._say(f"{error}; opening it in this command instead")
            if self._served is None:
                local_server.stop(local_server.state_directory(settings), self.opening.progress,
                                  " to open the embedded metastore in this command")
        if self._served is None:
            return settings, None
        database = local_server.state_directory(settings) / "metastore_db"
        return (replace(settings, metastore_uri=self._served.uri, lock_guards=False),
                local_server.derby_endpoint(str(database)))

    @property
    def reader(self) -> CatalogReader:
        """What reads the live state: the JVM-free reader where it can, else ``metastore``."""
        if self._reader is None:
            direct = self._direct()
            if direct is not None:
                from schemaflow.catalog.hive.thrift_reader import NotPlainThrift

                self._say(f"Reading {self.where()} ...")
                try:
                    self._reader = self._ahead.connection.result() if self._ahead else self._connect(direct)
                except (NotPlainThrift, local_server.NotServed) as error:
                    if isinstance(error, local_server.NotServed):
                        self._say(f"{error}; opening it in this command instead")
                    self._ahead = None
            if self._reader is None:
                self._reader = self.metastore
        return self._reader

    def read_ahead(self, databases: tuple[str, ...]) -> None:
        """Start reading ``databases`` without a JVM in the background, where ``reader`` would: the
        metastore server answers while this process parses the project's files (on one core, a plan
        of 5,500 objects on a PostgreSQL-backed server spends seconds in each). ``read`` of the same
        databases then takes what it read; its errors surface there, as they would have."""
        direct = self._direct()
        if direct is None or not databases or self._reader is not None or no_target_chosen(self.project.settings):
            return
        connection = Background(lambda: self._connect(direct), "metastore-connect")
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

    def hints(self) -> PlanHints | None:
        """A ``thrift://`` metastore's answers, each None where it gives none (down, SASL, no such table)."""
        uri = self.project.settings.metastore_uri
        if not uri or not uri.startswith("thrift://"):
            return None
        from schemaflow.catalog.hive.thrift_reader import hints

        return hints(uri)

    def stale_partitions(self, key: str, exact: bool = False) -> int:
        """How many partitions of ``key`` have a stale column list (read through Spark's client; see
        ``catalog.hive.columns.stale_partitions``)."""
        return self.metastore.stale_partitions(key, exact)

    def view_problems(self, desired: Catalog, views: Iterable[str]) -> dict[str, str]:
        """Why Spark refuses the SQL of each of ``views`` as ``desired`` declares it (see ``catalog.hive.view_check``)."""
        from schemaflow.catalog.hive.view_check import ViewChecker

        return ViewChecker(self.metastore.spark, desired).problems(views)

    def functions(self, names: Iterable[str]) -> dict[str, StoredFunction | None]:
        """The permanent functions ``names`` as the metastore holds them, read through Spark's client (the Spark that
        would check the views calling them): over Thrift, so no class is loaded nor jar fetched."""
        return {name: self.metastore.function(name) for name in names}

    def _direct(self) -> Callable[[], str] | None:
        """Where a command that only reads reads without a JVM, once asked (the local server starts then), or
        None where it reads through Spark."""
        if not self.opening.direct or self.connected is not None:
            return None
        settings = self.project.settings
        uri = direct_uri(settings)
        if uri is not None:
            return lambda: uri
        if local_server.serves(settings) and installed() is not None:
            return lambda: self._serve().uri
        return None

    def _serve(self) -> local_server.Served:
        self._served = local_server.serve(self.project.settings, self.opening.progress)
        return self._served

    def _connect(self, direct: Callable[[], str]) -> ThriftReader:
        """The JVM-free reader of ``direct``'s address; the served embedded metastore named as a plan names it
        however it is read."""
        from schemaflow.catalog.hive.thrift_reader import ThriftReader

        uri = direct()
        if self._served is None:
            return ThriftReader.connect(uri)
        database = local_server.state_directory(self.project.settings) / "metastore_db"
        return ThriftReader.connect(uri, name=local_server.derby_endpoint(str(database)))

    def where(self) -> str:
        settings = self.project.settings
        unchosen = no_target_chosen(settings)
        if unchosen:
            raise SchemaflowError(unchosen)
        where = settings.metastore_uri or f"the embedded metastore in {settings.derby_dir}"
        return where + (f" (target {settings.target})" if settings.target else "")

    def _say(self, message: str) -> None:
        self.opening.progress.write(message + "\n")
        self.opening.progress.flush()


def direct_uri(settings: Settings) -> str | None:
    """The metastore to read without a JVM: a ``thrift://`` one whose client the user does not tune
    (a Spark setting of Hive's metastore client, such as SASL, is only honoured by Spark's client)."""
    uri = settings.metastore_uri
    tuned = any(key.startswith(("spark.hadoop.hive.metastore.", "spark.sql.hive.metastore.", "spark.hive.metastore."))
                and key not in CLIENT_CHOICE for key in settings.spark_conf)
    return uri if uri and uri.startswith("thrift://") and not tuned else None

