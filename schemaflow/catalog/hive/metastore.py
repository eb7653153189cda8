"""The live state: tables and views read from the Hive metastore, in bulk, into the model.

Everything goes through the session's Thrift metastore client, the same one Spark uses, which
works alike for an embedded and a remote metastore. Reading is built for thousands of objects:
every py4j call is a socket round trip, so tables are fetched 100 at a time with
``getTableObjectsByName``, each batch is serialised to JSON inside the JVM, and only those bytes
cross to Python, where they become ``Table`` and ``View`` objects (``catalog.hive.thrift_data``).
Writes go through the same client; ``beside`` opens a second connection to a metastore server, for
a write to run on while the first runs the next statement. A JVM failure becomes a
``SchemaflowError`` carrying the Java message.
"""
from __future__ import annotations

import json
import re
import time
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import cached_property, partial
from typing import Any, TypeVar
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence

from pyspark.sql import SparkSession

from schemaflow.catalog.hive import delta_commit, iceberg_commit, iceberg_convert, rewrite, table_files
from schemaflow.catalog.backend import LiveEntry, StoredFunction
from schemaflow.catalog.hive.columns import set_columns, stale_partitions
from schemaflow.catalog.delta_log import is_delta, read_delta_log
from schemaflow.catalog.iceberg_metadata import is_iceberg
from schemaflow.catalog.hive.local_server import derby_endpoint
from schemaflow.catalog.hive.jvm import (JAVA_ERRORS, hive_class_loader, hive_conf, hive_package, java_errors, java_message,
                                   jvm_view, loaded_by, unreachable)
from schemaflow.catalog.hive.session import VARIABLE_SUBSTITUTION
from schemaflow.catalog.hive.spark_compat import (EXPECTED_PARAMETER_KEY, EXPECTED_PARAMETER_VALUE, derby_embedded,
                                             enforces_guards)
from schemaflow.catalog.hive.spark_schema import NUM_BUCKETS
from schemaflow.catalog.stamping import fill_live_state
from schemaflow.catalog.hive.table_lock import table_lock
from schemaflow.catalog.hive.thrift_data import (READ_ATTEMPTS, READ_BACKOFF_SECONDS, VIRTUAL_VIEW, database_of, delta_location, read_catalog,
                                            read_views, table_entries, to_model)
from schemaflow.catalog.hive.view_partitions import (KeptPartitions, change_view_partitions, partition_values,
                                                read_view_partitions)
from schemaflow.errors import ConcurrentChange, SchemaflowError
from schemaflow.model import (
    TYPE_RULE,
    VERSION_KEY,
    Catalog,
    Column,
    Database,
    IcebergState,
    Object,
    PartitionValues,
    Stored,
    Table,
    View,
    ViewSql,
    split_key,
    view_sql,
)
from schemaflow.sql import ddl
from schemaflow.sql.rewrite import Filled
from schemaflow.sql.session import refresh_table
from schemaflow.sql.storage import FIELD_DELIMITER, PATH_OPTION, SERIALIZATION_FORMAT

BATCH_SIZE = 100

# Environment-context key that spares an unpartitioned table a listing of its files on alter.
DO_NOT_UPDATE_STATS = "DO_NOT_UPDATE_STATS"
T = TypeVar("T")
# How the metastore's compare-and-swap refuses a write (HiveAlterHandler).
CAS_REFUSED = "The table has been modified"
# How it fails one it cannot run: its UPDATE compares the parameter's value, which Hive 4's Derby schema makes a CLOB.
GUARD_FAILS = 'update "TABLE_PARAMS" set "PARAM_VALUE"=? where'
ALREADY_EXISTS = "TABLE_OR_VIEW_ALREADY_EXISTS"  # Spark's error condition for a CREATE whose name is taken
FAILURE_RETRIES = "hive.metastore.failure.retries"  # how often Hive's client repeats a call whose connection broke


class Metastore:
    """A Hive metastore reached through a SparkSession's JVM: Spark's own client (embedded), or a Thrift connection of
    schemaflow's own beside Spark's (a metastore server)."""

    def __init__(self, spark: SparkSession, msc: Any, endpoint: str, conf: Any = None, lock_guards: bool = False,
                 loader: Any | None = None) -> None:
        self.spark = spark
        self.msc = msc
        self.endpoint = endpoint
        self.conf = conf  # the HiveConf of Spark's client, which ``beside`` connects with
        self.loader = loader  # the class loader of Spark's Hive client jars; None: Spark's built-in client
        # Guard each write by the metastore's table lock and a read-compare-write under it (metastore.guard: lock).
        self.lock_guards = lock_guards
        self.held_locks: set[str] = set()
        self.progress: Callable[[str], None] | None = None
        self.sleep: Callable[[float], None] = time.sleep
        self._guards_checked = False
        self.takes_locks: bool | None = None
        self.api = hive_package(spark, loader, "org.apache.hadoop.hive.metastore.api")
        with loaded_by(spark, loader) as jvm:  # the Thrift that Hive's classes are built on
            self._serializer = jvm.org.apache.thrift.TSerializer(jvm.org.apache.thrift.protocol.TSimpleJSONProtocol.Factory())
            # TJSONProtocol (with field ids and types) is the JSON that Thrift can also read.
            self._deserializer = jvm.org.apache.thrift.TDeserializer(
                jvm.org.apache.thrift.protocol.TJSONProtocol.Factory())

    @classmethod
    def connect(cls, spark: SparkSession, lock_guards: bool = False, endpoint: str | None = None) -> Metastore:
        """Open the metastore that ``spark`` is configured with; fails if it cannot be reached. ``lock_guards``:
        guard writes with the table lock (``alter``); ``endpoint``: its name (default: from Spark's configuration)."""
        # A session built elsewhere (a notebook's, a test's) may substitute variables in SQL text.
        spark.conf.set(VARIABLE_SUBSTITUTION, "false")
        shared_state = spark._jsparkSession.sharedState()  # loads hive-site.xml into the Hadoop conf
        endpoint = endpoint or describe_endpoint(spark.sparkContext._jsc.hadoopConfiguration())
        with java_errors(f"cannot reach the Hive metastore ({endpoint})", endpoint):
            client = shared_state.externalCatalog().unwrapped().client()
            loader, conf = hive_class_loader(spark, client), hive_conf(spark, client)
            with loaded_by(spark, loader) as jvm:
                if not conf.get("hive.metastore.uris"):  # its Derby database is this process's alone: no lock to guard
                    msc = jvm.org.apache.hadoop.hive.ql.metadata.Hive.get(conf).getMSC()
                    return cls(spark, msc, endpoint, conf, loader=loader)
                # A connection of schemaflow's own, apart from Spark's: Hive's client would repeat any call whose
                # connection broke, writes included, so on this one that is off (schemaflow retries reads itself and
                # reads a write's outcome back). Spark's keeps Hive's retries, which also reconnect it when Hive
                # closes its connection under it (the first INSERT into a partitioned data-source table of a session).
                own = jvm.org.apache.hadoop.hive.conf.HiveConf(conf)
                own.set(FAILURE_RETRIES, "0")
                msc = jvm.org.apache.hadoop.hive.metastore.RetryingMetaStoreClient.getProxy(own, True)
        return cls(spark, msc, endpoint, conf, lock_guards, loader)

    @contextmanager
    def beside(self) -> Iterator[Metastore | None]:
        """A second connection to the same metastore server, closed on exit; None for an embedded
        metastore (its Derby database would lock one writer against the other, not run them side by side).

        Opened here, in the caller's thread, where Spark's class loader finds Hive's classes (Hive's
        per-thread client cannot be made in another thread); its calls may then come from any one
        thread. It retries a broken connection as Hive's own client does, which ``alter`` relies on.
        """
        if self.conf is None or not self.conf.get("hive.metastore.uris"):
            yield None
            return
        with self._errors(f"opening a second connection to the Hive metastore ({self.endpoint})"):
            with loaded_by(self.spark, self.loader) as jvm:
                msc = jvm.org.apache.hadoop.hive.metastore.RetryingMetaStoreClient.getProxy(self.conf, True)
        second = Metastore(self.spark, msc, self.endpoint, lock_guards=self.lock_guards, loader=self.loader)
        second.sleep = self.sleep
        try:
            yield second
        finally:
            msc.close()

    def databases(self) -> tuple[str, ...]:
        """The names of the existing databases, sorted."""
        with self._errors("listing databases"):
            return tuple(sorted(self.retrying(self.msc.getAllDatabases)))

    def read(self, databases: tuple[str, ...]) -> Catalog:
        """Every table and view in ``databases``; databases that do not exist have none."""
        return read_catalog(self, databases)

    def database(self, name: str) -> Database:
        """A database's comment, location and properties, as the metastore holds them."""
        with self._errors(f"reading database {name}"):
            return database_of(name, self.to_data(self.retrying(lambda: self.msc.getDatabase(name))))

    def enforces_type_rule(self) -> bool:
        """Whether the metastore refuses incompatible column type changes: its own setting of
        ``hive.metastore.disallow.incompatible.col.type.changes``, asked of the server (a client's
        setting says nothing of what a remote server does)."""
        with self._errors("reading the metastore's type rule"):
            value = self.retrying(lambda: self.msc.getConfigValue(TYPE_RULE, "true"))
        return str(value).strip().lower() != "false"

    def count_partitions(self, key: str) -> int:
        """How many partitions the table ``key`` has, counted by the metastore (no listing)."""
        database, name = split_key(key)
        with self._errors(f"counting the partitions of {key}"):
            return int(self.retrying(lambda: self.msc.getNumPartitionsByFilter(database, name, "")))

    def stored(self, key: str) -> Stored:
        """What the table ``key`` holds in files (``catalog.hive.table_files``)."""
        with self._errors(f"measuring the files of {key}"):
            return table_files.stored(self, key)

    def data_folders(self, key: str) -> tuple[str, ...]:
        """The folders of the table ``key``'s files: its own, or each of its partitions'."""
        with self._errors(f"listing the folders of {key}"):
            return table_files.data_folders(self, key)

    def set_parameters(self, key: str, set: Mapping[str, str], unset: Sequence[str],
                       expected: str | None = None) -> None:
        """Set and remove table parameters of ``key`` with one ``alter_table``.

        Through the client rather than Spark SQL, because Spark refuses reserved keys such as
        ``owner``; parameters written this way survive later ALTERs made through Spark. A value
        ``LIVE_STATE`` becomes the state digest of the object exactly as this write leaves it (``catalog.stamping``).
        """
        database, name = split_key(key)
        with self._errors(f"setting the parameters of {key}"):
            table = self.retrying(lambda: self.msc.getTable(database, name))
            parameters = table.getParameters()
            if is_iceberg(parameters):  # its properties are its metadata's: a commit of them
                iceberg_commit.commit(self, key, None, {}, None, set, unset, expected, table)
                return
            if is_delta(parameters) and (set.keys() - {VERSION_KEY} or unset):  # a stamp: its log's, but the version
                self._stamp_delta(key, set, unset, expected)
                return
            if is_delta(parameters) and expected is not None and parameters.get(VERSION_KEY) is None:
                self._claimed_in_log(key, table, expected)
                expected = None  # the entry's first version: a plain write, as a created table's claim is

            def after() -> Object:  # the table as this write leaves it
                data = self.to_data(table)
                kept = {k: v for k, v in data.get("parameters", {}).items() if k not in unset}
                return to_model({**data, "parameters": {**kept, **set}})
            filled = fill_live_state(set, after)
            for parameter in unset:
                parameters.remove(parameter)
            for parameter, value in sorted(filled.items()):
                parameters.put(parameter, value)
            self.alter(table, expected, keeps_guard=VERSION_KEY not in filled and VERSION_KEY not in unset)

    def commit_iceberg(self, table: Table, sources: Mapping[str, str], requires: IcebergState | None, create: bool,
                       set: Mapping[str, str], unset: Sequence[str], expected: str | None = None,
                       backup: str | None = None, keep: bool = True) -> None:
        with self._errors(f"committing the Iceberg table {table.key}"):
            if backup:
                iceberg_convert.convert(self, table, backup, set, expected, keep)
            elif create:
                iceberg_commit.create(self, table, set)
            else:
                iceberg_commit.commit(self, table.key, table, sources, requires, set, unset, expected)

    def register_table(self, key: str, metadata_location: str) -> None:
        """Register ``key`` as the Iceberg table whose current metadata file is ``metadata_location`` (a project
        moving here from another catalog): one ``create_table`` of the entry Iceberg's Hive catalog makes, no file
        written (``iceberg_commit.adopt``)."""
        with self._errors(f"registering the Iceberg table {key}"):
            iceberg_commit.adopt(self, key, metadata_location)

    def delta_unavailable(self) -> str | None:
        return delta_commit.unavailable(self.spark)

    @cached_property
    def _delta_session(self) -> SparkSession:
        """The session Delta's commits run on: one of this writer's own (the same Spark, its own SQL settings), since
        a commit sets two of them for its duration (``catalog.hive.delta_commit``) and a second writer's (``beside``)
        may commit a stamp while this one runs the next step."""
        return self.spark.newSession()

    def create_delta(self, key: str, create: str, stamp: Mapping[str, str], claim: str) -> None:
        """The CREATE through delta-spark, born claimed in the log; the entry claimed right after (delta-spark writes
        none of the table's properties there); the stamp on top (``catalog.hive.delta_commit`` says where claims and
        stamps live)."""
        self._sql(ddl.fill_claim(create, claim), creates=key)
        self.report(f"{key}: created as Delta log version 0")
        self.set_parameters(key, {VERSION_KEY: claim}, ())
        if stamp:
            with self._errors(f"committing to the Delta table {key}"):
                delta_commit.commit(self._delta_session, key, self._delta_location(key), 0, None, (), stamp,
                                    self.report)
        if VERSION_KEY in stamp:
            self.set_parameters(key, {VERSION_KEY: stamp[VERSION_KEY]}, (), claim)

    def alter_delta(self, key: str, log_version: int, table_id: str, statements: Sequence[str],
                    stamp: Mapping[str, str], expected: str | None) -> int:
        """The statements while the entry still holds the run's claim ``expected`` (read just before), each a commit
        on top of the last; the entry's version then the stamp's."""
        with self._holding(key, expected), self._errors(f"committing to the Delta table {key}"):
            landed = delta_commit.commit(self._delta_session, key, self._delta_location(key), log_version, table_id,
                                         statements, stamp, self.report)
        if VERSION_KEY in stamp:
            self.set_parameters(key, {VERSION_KEY: stamp[VERSION_KEY]}, (), expected)
        return landed

    def _stamp_delta(self, key: str, set: Mapping[str, str], unset: Sequence[str], expected: str | None) -> None:
        """A stamp of the Delta table ``key`` with no change before it in its step (a claim taken over, a property no
        longer declared): its keys a commit to the log on top of its latest version, the entry's version then the
        stamp's; while the entry holds ``expected``."""
        with self._holding(key, expected), self._errors(f"committing to the Delta table {key}"):
            location = self._delta_location(key)
            latest = delta_commit.log_version(self._delta_session, location)
            if latest is None:
                raise SchemaflowError(f"{key}: no Delta table at {location}")
            delta_commit.commit(self._delta_session, key, location, latest, None,
                                (ddl.unset_table_properties(key, unset),) if unset else (), set, self.report)
        if VERSION_KEY in set:
            self.set_parameters(key, {VERSION_KEY: set[VERSION_KEY]}, (), expected)

    def _claimed_in_log(self, key: str, table: Any, expected: str) -> None:
        """Check that the Delta table ``key``, whose entry ``table`` holds no version, holds ``expected`` in its log:
        the claim its CREATE carried there, where a run stopped before writing the entry (its reader takes that claim
        for the version, ``thrift_data``); else ``ConcurrentChange``. Another run taking the same claim over between
        this read and the plain write after it is refused at its next write, guarded by its own claim."""
        location = delta_location(self.to_data(table))
        found = read_delta_log(location, (location,)).properties.get(VERSION_KEY) if location else None
        if found != expected:
            raise ConcurrentChange(key, expected, found, f"{VERSION_KEY} (in its Delta log)")

    def _delta_location(self, key: str) -> str:
        """Where the Delta table ``key`` is, as its entry says (``thrift_data.delta_location``)."""
        database, name = split_key(key)
        location = delta_location(self.to_data(self.retrying(lambda: self.msc.getTable(database, name))))
        if not location:
            raise SchemaflowError(f"{key}: its metastore entry names no location; see that Spark registered the Delta "
                                  "table")
        return location

    def rewrite_table(self, key: str, table: Table, create: str, columns: Sequence[Filled], staging: str, backup: str,
                      expected: str | None, version: str | None, claim: str, registrable: bool = False,
                      records: Mapping[str, str] = {}) -> None:
        with self._errors(f"rewriting the table {key}"):
            rewrite.rewrite(self, key, table, create, columns, staging, backup, expected, version, claim, registrable,
                            records)

    def rewrite_delta(self, key: str, table: Table, create: str, columns: Sequence[Filled], staging: str,
                      backup: str, expected: str | None, version: str | None, claim: str, log_version: int | None,
                      table_id: str | None, records: Mapping[str, str]) -> None:
        with self._errors(f"rewriting the Delta table {key}"):
            if log_version is not None and table_id is not None:
                with self._holding(key, expected):
                    delta_commit.check_on(self._delta_session, key, self._delta_location(key), log_version, table_id)
            rewrite.rewrite(self, key, table, create, columns, staging, backup, expected, version, claim,
                            records=records)

    def restore_table(self, key: str, backup: str, temporary: str, backup_version: str | None, expected: str | None,
                      version: str | None, claim: str) -> None:
        with self._errors(f"restoring the table {key} from {backup}"):
            rewrite.restore(self, key, backup, temporary, backup_version, expected, version, claim)

    def context(self, **properties: str) -> Any:
        """An environment context for alter calls; it spares the table a listing of its files."""
        return self.api.EnvironmentContext({DO_NOT_UPDATE_STATS: "true", **properties})

    def alter(self, table: Any, expected: str | None = None, guarded_by: str = VERSION_KEY, renames: str | None = None,
              keeps_guard: bool = False, **context: str) -> None:
        """``alter_table`` with an environment context (CASCADE, ...), guarded when ``expected`` is given.

        Guarded, the metastore applies it only if the stored parameter ``guarded_by`` (``schemaflow.version``;
        an Iceberg table's ``metadata_location``) is ``expected`` (its compare-and-swap), else
        ``ConcurrentChange``. Hive's client retries a call whose connection broke, so a guarded write that
        landed may come back refused: the value read back then is the one this write set, and that is success.
        ``keeps_guard``: ``table`` carries ``guarded_by`` as it was read, not a value of this write's, so finding
        it back proves nothing landed (a write read stale carries the stale value: refused, never success).
        ``renames``: the entry's name now, when ``table`` gives it another. With ``lock_guards``, a guarded write
        holds the table's lock and reads the parameter under it first (the compare-and-swap is sent as well).
        """
        database, name = table.getDbName(), renames or table.getTableName()
        if expected is not None and self.lock_guards:
            with table_lock(self, f"{database}.{name}"):
                self._alter(table, database, name, expected, guarded_by, renames, True, keeps_guard, context)
        else:
            self._alter(table, database, name, expected, guarded_by, renames, self.guards_in_process, keeps_guard,
                        context)

    def _alter(self, table: Any, database: str, name: str, expected: str | None, guarded_by: str, renames: str | None,
               compare_first: bool, keeps_guard: bool, context: dict[str, str]) -> None:
        key, wrote = f"{database}.{name}", table.getParameters().get(guarded_by)
        if expected is not None:
            context = {**self._guard(expected, guarded_by), **context}
            if compare_first:  # no other writer can write between this read and the write (one process, or a lock)
                found = self.retrying(lambda: self.msc.getTable(database, name)).getParameters().get(guarded_by)
                if found != expected:
                    raise ConcurrentChange(key, expected, found, guarded_by)
        try:
            self.msc.alter_table_with_environmentContext(database, name, table, self.context(**context))
        except Exception as error:
            if expected is not None and GUARD_FAILS in java_message(error):
                raise SchemaflowError(
                    f"the metastore ({self.endpoint}) cannot run the compare-and-swap that guards the write of {key}: "
                    "its database cannot compare table parameters (a Hive 4 metastore on Derby keeps them in a CLOB "
                    "column, which Derby cannot compare), so it fails every guarded write. Run the metastore on "
                    "PostgreSQL, MySQL or another database Hive supports") from None
            lost = unreachable(error)
            if not (lost or expected is not None and CAS_REFUSED in java_message(error)):
                raise
            # Never repeated blindly: what the metastore holds now tells whether the write landed.
            now = (table.getTableName() if renames and self.retrying(lambda: self.msc.tableExists(
                database, table.getTableName())) else name)
            found = self.retrying(lambda: self.msc.getTable(database, now)).getParameters().get(guarded_by)
            if found == wrote and wrote != expected and not keeps_guard:
                return  # it landed (and a repetition of it was refused)
            if found != expected:
                raise ConcurrentChange(key, expected, found, guarded_by) from None
            if lost:
                raise SchemaflowError(
                    f"the metastore ({self.endpoint}) stopped answering while {key} was altered, and schemaflow "
                    f"does not repeat a write blindly: {key} still holds this run's claim, so whether the change "
                    "landed is in the metastore, not known here. Run apply again: it plans from what is there "
                    "and finishes the rest.") from None
            raise

    def check_guards(self, key: str) -> None:
        """Refuse a metastore that ignores compare-and-swap guards (servers without HIVE-26882).

        A write of ``key`` unchanged, guarded by a version it cannot hold, must be refused; if it
        lands, nothing changed, but no guard would hold on this server either. An embedded metastore
        without them is guarded in this process instead (``guards_in_process``).
        """
        if self._guards_checked or self.guards_in_process:
            return
        if self.lock_guards:  # the lock guards each write: the metastore must keep locks
            with table_lock(self, key):
                self._guards_checked = True
            return
        database, name = split_key(key)
        with self._errors(f"checking that the metastore enforces guards on {key}"):
            table = self.retrying(lambda: self.msc.getTable(database, name))
            # The guard names a key the entry holds (the metastore refuses one it lacks): a Delta table's entry may
            # hold none of schemaflow's yet, its claim in its log alone (``_claimed_in_log``).
            held = (VERSION_KEY if table.getParameters().get(VERSION_KEY) is not None
                    else min(self.to_data(table).get("parameters", {}), default=VERSION_KEY))
            guard = self._guard("schemaflow: a version no object holds", held)
            try:
                self.msc.alter_table_with_environmentContext(database, name, table, self.context(**guard))
            except Exception as error:
                if CAS_REFUSED not in java_message(error):
                    raise
                self._guards_checked = True
                return
        raise SchemaflowError(
            f"the metastore ({self.endpoint}) ignores compare-and-swap guards on alter_table: it lacks HIVE-26882 "
            "(in Hive 2.3.10 and later 2.3 releases, the metastore bundled with pyspark 4 among them; no Hive 3.1 "
            "release has it), so schemaflow cannot make sure it overwrites nothing it did not see; nothing was "
            "applied. Run a metastore server of Hive 2.3.10 or later 2.3, or set metastore.guard: lock in "
            "schemaflow.yaml to guard each write with the metastore's table lock (safe against writers that take "
            "it: schemaflow, Iceberg, Hive's transactions; not against a plain Spark ALTER TABLE).")

    def _guard(self, expected: str, guarded_by: str = VERSION_KEY) -> dict[str, str]:
        """The environment-context entries of the metastore's compare-and-swap on the parameter ``guarded_by``."""
        return {EXPECTED_PARAMETER_KEY: guarded_by, EXPECTED_PARAMETER_VALUE: expected}

    @cached_property
    def guards_in_process(self) -> bool:
        """Whether this process checks each guard itself, reading the version before it writes: for the
        metastore embedded in Spark 3.5 (Hive 2.3.9, which ignores guards) on an embedded Derby database,
        which no other process can open while this one holds it (``catalog.hive.spark_compat``)."""
        embedded = self.conf is not None and not self.conf.get("hive.metastore.uris")
        return (embedded and derby_embedded(self.conf.get("javax.jdo.option.ConnectionURL"))
                and not enforces_guards(self.hive_version()))

    def hive_version(self) -> str:
        """The version of the Hive metastore classes in this JVM (the embedded metastore's own)."""
        with loaded_by(self.spark, self.loader) as jvm:
            version: str = jvm.org.apache.hive.common.util.HiveVersionInfo.getVersion()
        return version

    def retrying(self, read: Callable[[], T]) -> T:
        """Call ``read`` (a read, never a write), again after a broken connection: up to
        ``READ_ATTEMPTS`` times, waiting twice as long each time and reconnecting first."""
        attempt = 0
        while True:
            try:
                return read()
            except Exception as error:
                attempt += 1
                if attempt == READ_ATTEMPTS or not unreachable(error):
                    raise
            self.sleep(READ_BACKOFF_SECONDS * 2 ** (attempt - 1))
            try:
                self.msc.reconnect()
            except JAVA_ERRORS:  # still down: the next attempt says so
                pass

    def to_data(self, struct: Any) -> dict[str, Any]:
        """A Thrift struct as JSON data, serialised in the JVM: one py4j round trip for a whole batch."""
        # Bytes, decoded here as UTF-8: TSerializer.toString would use the JVM's default charset.
        data: dict[str, Any] = json.loads(self._serializer.serialize(struct))
        return data

    def report(self, message: str) -> None:
        """Progress of long work (batched cascades), for whoever set ``progress``."""
        if self.progress is not None:
            self.progress(message)

    def stale_partitions(self, key: str, exact: bool = False) -> int:
        """How many partitions of ``key`` have a stale column list (see ``catalog.hive.columns.stale_partitions``)."""
        with self._errors(f"listing the partitions of {key}"):
            return stale_partitions(self, key, exact)

    def set_columns(self, key: str, columns: Sequence[Column], partition_columns: Sequence[Column],
                    cascade: bool, batched: bool = False, parameters: Mapping[str, str] = {},
                    expected: str | None = None) -> None:
        """Replace the columns of ``key`` and set ``parameters`` in the same write (see ``catalog.hive.columns``)."""
        with self._errors(f"altering the columns of {key}"):
            set_columns(self, key, columns, partition_columns, cascade, batched, parameters, expected)

    def set_storage(self, key: str, serde_properties: Mapping[str, str], buckets: int | None,
                    expected: str | None = None) -> None:
        """Make ``serde_properties`` the table's SERDEPROPERTIES (a data source's OPTIONS) and, unless
        None, ``buckets`` its bucket count, in one guarded ``alter_table``; partitions keep theirs.

        What the metastore keeps there for itself stays: a data-source table's ``path``, and, unless
        declared, ``serialization.format``: Hive's '1', or, as Spark writes it for ``ROW FORMAT
        DELIMITED``, the field delimiter, which then follows the declared one (left behind, it would
        read as a setting of its own, and no later plan would find the table as declared). A bucket
        count Spark also records in its table parameters is changed there too, so the two copies agree.
        """
        database, name = split_key(key)
        with self._errors(f"changing the storage of {key}"):
            table = self.retrying(lambda: self.msc.getTable(database, name))
            parameters = table.getSd().getSerdeInfo().getParameters()
            derived = parameters.get(SERIALIZATION_FORMAT)
            for parameter in [k for k in parameters.keySet() if k not in (SERIALIZATION_FORMAT, PATH_OPTION)]:
                parameters.remove(parameter)
            if derived not in (None, "1") and SERIALIZATION_FORMAT not in serde_properties:
                parameters.put(SERIALIZATION_FORMAT, serde_properties.get(FIELD_DELIMITER, "1"))
            for parameter, value in sorted(serde_properties.items()):
                parameters.put(parameter, value)
            if buckets is not None:
                if table.getParameters().containsKey(NUM_BUCKETS):
                    table.getParameters().put(NUM_BUCKETS, str(buckets))
                if table.getSd().getNumBuckets() > 0:
                    table.getSd().setNumBuckets(buckets)
            self.alter(table, expected, keeps_guard=True)

    def add_database(self, database: Database) -> None:
        """Create ``database`` unless it exists. Without a declared location the metastore puts it in its
        own warehouse directory, never where the machine running schemaflow would (as Spark's SQL does)."""
        with self._errors(f"creating database {database.name}"):
            if database.name in self.databases():
                return
            self.msc.createDatabase(self.api.Database(database.name, database.comment or "", database.location,
                                                      dict(database.properties)))

    def set_database_properties(self, name: str, properties: Mapping[str, str]) -> None:
        """Set properties of a database (``alter_database``; the only attribute Hive 2.3's metastore
        changes besides its owner). The metastore has no guard for databases: this write is unguarded."""
        self.update_database_properties(name, (), lambda _: properties)

    def update_database_properties(self, name: str, keys: Collection[str],
                                   update: Callable[[Mapping[str, str]], Mapping[str, str]]) -> None:
        """Set the properties ``update`` makes of the current values of ``keys`` (those the database has), read
        just before, in one write (unguarded, as ``set_database_properties``). Only ``keys`` are read: each
        is a call to the JVM, and a database holds a parameter per object schemaflow applied."""
        with self._errors(f"setting the properties of database {name}"):
            database = self.retrying(lambda: self.msc.getDatabase(name))
            parameters = database.getParameters()
            if parameters is None:
                parameters = jvm_view(self.spark).java.util.HashMap()
                database.setParameters(parameters)
            current = {key: str(value) for key in keys if (value := parameters.get(key)) is not None}
            for key, value in sorted(update(current).items()):
                parameters.put(key, value)
            self.msc.alterDatabase(name, database)

    def _sql(self, statement: str, creates: str | None = None) -> None:
        """Run one statement through the session's ``spark.sql``, its text as written (no variable substitution).

        Spark SQL carries no guard: a statement that changes an object runs inside ``_holding`` it, and a created object
        is born with the run's claim (``ddl.fill_claim``); ``creates``: the key the statement creates, which Spark
        refusing as taken (``TABLE_OR_VIEW_ALREADY_EXISTS``) makes ``ConcurrentChange``, another writer's object."""
        try:
            with self._errors("running Spark SQL"):
                self.spark.sql(statement)
        except SchemaflowError as error:
            if creates is not None and ALREADY_EXISTS in str(error):
                raise ConcurrentChange(creates, None, "an object created by another writer", "catalog entry") from None
            raise

    @contextmanager
    def _holding(self, key: str, expected: str | None) -> Iterator[None]:
        """Run a Spark SQL write of ``key`` (which carries no guard) only while ``key`` still holds ``expected``, this
        run's claim, read just before (one read); else ``ConcurrentChange`` with nothing written. Under
        ``lock_guards`` the table's lock is held from the read to the end of the write; otherwise another writer may
        still land in the moment between them, and the step's stamp, guarded, refuses it then."""
        if expected is None:  # an unguarded write (adopting an object): nothing to hold
            yield
            return
        database, name = split_key(key)
        with table_lock(self, key) if self.lock_guards else nullcontext():
            with self._errors(f"reading the version of {key}"):
                found = self.retrying(lambda: self.msc.getTable(database, name)).getParameters().get(VERSION_KEY)
            if found != expected:
                raise ConcurrentChange(key, expected, found)
            yield

    def create_table(self, table: Table, claim: str) -> None:
        """``CREATE TABLE`` through Spark, which refuses a name taken: another writer's (``ConcurrentChange``)."""
        self._sql(ddl.fill_claim(ddl.create_table(table), claim), creates=table.key)

    def add_columns(self, key: str, columns: Sequence[Column], expected: str | None) -> None:
        with self._holding(key, expected):
            self._sql(ddl.add_columns(key, columns))

    def set_table_comment(self, key: str, comment: str | None, expected: str | None) -> None:
        with self._holding(key, expected):
            self._sql(ddl.set_table_comment(key, comment))

    def set_column_comments(self, key: str, columns: Sequence[Column], expected: str | None) -> None:
        """A statement a column (Spark's ALTER COLUMN takes one), each landing alone: a run stopped between them
        leaves ``key`` claimed, and the next plan sets the comments still to set. The claim is read once, before the
        first."""
        with self._holding(key, expected):
            for column in columns:
                self._sql(ddl.set_column_comment(key, column))

    def drop_table(self, key: str, expected: str | None) -> None:
        with self._holding(key, expected):
            self._sql(ddl.drop("table", key))

    def create_view(self, view: View, replace: bool, claim: str) -> None:
        """``CREATE [OR REPLACE] VIEW`` through Spark, in the view's own database, where unqualified names in its SQL
        resolve as validate resolved them."""
        self._sql(ddl.use_database(view.database))
        self._sql(ddl.fill_claim(ddl.create_view(view, replace), claim), creates=None if replace else view.key)

    def after_apply(self, changed: Sequence[str]) -> list[str]:
        """Refresh this session's cached metadata of each of ``changed`` (``refresh``)."""
        return refresh(changed, self._sql)

    def partition_view(self, key: str, columns: Sequence[str], expected: str | None = None) -> None:
        """Make the view's trailing output ``columns`` its partition keys (Hive ``PARTITIONED ON``).

        Spark cannot parse ``PARTITIONED ON``, but the metastore holds it: the columns move from
        the view's storage descriptor into its partition keys, and Spark still reads the view with
        its full schema. ``spec`` has checked that they are the rightmost columns, in order.
        """
        database, name = split_key(key)
        with self._errors(f"partitioning view {key}"):
            view = self.retrying(lambda: self.msc.getTable(database, name))
            cols = list(view.getSd().getCols())
            keep, move = cols[:len(cols) - len(columns)], cols[len(cols) - len(columns):]
            if [c.getName() for c in move] != list(columns):
                raise SchemaflowError(f"view {key} does not end with the columns {', '.join(columns)}")
            view.getSd().setCols(keep)
            view.setPartitionKeys(move)
            self.alter(view, expected, keeps_guard=True)

    def drop_view(self, key: str, expected: str | None = None, engine: bool = False) -> None:
        """Drop the view ``key``: with ``engine``, Spark's DROP VIEW (``_holding`` it); else through the
        metastore client: Spark's DROP VIEW would analyse its SQL first (to uncache it), resolving every function it
        calls and every view it reads, with theirs (measured on Spark 3.5 and 4.3).

        Guarded as a write is where the metastore has no compare-and-swap for a drop: under the table lock where writes
        hold it, else by reading the entry first, which must be a view holding ``expected`` (this run's claim). The
        session forgets what it knew of the name, so that the CREATE VIEW after it meets no stale entry."""
        if engine:
            with self._holding(key, expected):
                self._sql(ddl.drop("view", key))
            return
        database, name = split_key(key)
        with self._errors(f"dropping view {key}"):
            with table_lock(self, key) if expected is not None and self.lock_guards else nullcontext():
                view = self.retrying(lambda: self.msc.getTable(database, name))
                if str(view.getTableType()) != VIRTUAL_VIEW:
                    raise SchemaflowError(f"{key} is no view now, as it was when planned: nothing was dropped. Plan again")
                found = view.getParameters().get(VERSION_KEY)
                if expected is not None and found != expected:
                    raise ConcurrentChange(key, expected, found)
                self.msc.dropTable(database, name, False, False)
            self.spark._jsparkSession.sessionState().catalog().invalidateAllCachedTables()

    def check_views(self, views: Mapping[str, ViewSql | None]) -> None:
        """Refuse, before Spark analyses them, live views that hold other SQL now than when planned (read over Thrift,
        by name: nothing is resolved)."""
        now = self.views(views.keys())
        changed = sorted(key for key, planned in views.items()
                         if planned is None or not isinstance(view := now.get(key), View) or view_sql(view) != planned)
        if changed:
            raise SchemaflowError(f"{', '.join(changed)} {'holds' if len(changed) == 1 else 'hold'} other SQL than when "
                                  "this plan was made (or could not be read then), which Spark would analyse in this "
                                  "step: nothing of the step ran. Plan again, and read what the plan says of it now")

    def function(self, key: str) -> StoredFunction | None:
        """The permanent function ``key`` (``db.name``) as the metastore holds it, or None: read over Thrift, so its
        class is not loaded nor its resources fetched (Spark does that when a query resolves it)."""
        database, name = split_key(key)
        with self._errors(f"reading function {key}"):
            if name not in {str(found).lower() for found in self.retrying(lambda: self.msc.getFunctions(database, name))}:
                return None
            function = self.retrying(lambda: self.msc.getFunction(database, name))
            return StoredFunction(str(function.getClassName()), tuple(
                (str(resource.getResourceType().name()).lower(), str(resource.getUri()))
                for resource in function.getResourceUris() or ()))

    def partition_values(self, key: str) -> tuple[PartitionValues, ...]:
        """The partitions of the table or view ``key`` as values (see ``catalog.hive.view_partitions``)."""
        with self._errors(f"listing the partitions of {key}"):
            return partition_values(self, key)

    def change_view_partitions(self, key: str, columns: Sequence[str], add: Sequence[PartitionValues],
                               drop: Sequence[PartitionValues], kept: KeptPartitions | None = None) -> None:
        """Drop and add partitions of the view ``key``, in batches (see ``catalog.hive.view_partitions``)."""
        with self._errors(f"changing the partitions of view {key}"):
            change_view_partitions(self, key, columns, add, drop, kept)

    def keep_view_partitions(self, key: str) -> KeptPartitions:
        """The partitions of the view ``key``, read before it is re-created (see ``catalog.hive.view_partitions``)."""
        with self._errors(f"reading the partitions of view {key}"):
            return read_view_partitions(self, key)

    def from_json(self, struct: Any, data: Mapping[str, Any]) -> None:
        """Fill a Thrift struct from data in Thrift's JSON protocol, decoded in the JVM: one round trip."""
        self._deserializer.deserialize(struct, bytearray(json.dumps(data, separators=(",", ":")).encode()))

    def entries(self, database: str) -> Iterator[LiveEntry]:
        """Every table and view of ``database``, with its parameters (``thrift_data.table_entries``)."""
        return table_entries(self, database)

    def table_data(self, database: str) -> Iterator[dict[str, Any]]:
        """The Thrift Table objects of ``database`` as JSON-decoded dicts, fetched in batches."""
        with self._errors(f"reading the tables of database {database}"):
            names = self.retrying(lambda: self.msc.getAllTables(database))
            total = names.size()
            for start in range(0, total, BATCH_SIZE):
                batch = names.subList(start, min(start + BATCH_SIZE, total))
                tables = self.retrying(partial(self.msc.getTableObjectsByName, database, batch))
                yield from self.to_data(self.api.GetTablesResult(tables)).get("tables", [])

    def named_table_data(self, database: str, names: Sequence[str]) -> Iterator[dict[str, Any]]:
        """The Thrift Table objects of ``database`` among ``names`` (those it holds) as JSON-decoded dicts, in batches."""
        with self._errors(f"reading tables of database {database}"):
            for start in range(0, len(names), BATCH_SIZE):
                tables = self.retrying(partial(self.msc.getTableObjectsByName, database, list(names[start:start + BATCH_SIZE])))
                yield from self.to_data(self.api.GetTablesResult(tables)).get("tables", [])

    def views(self, keys: Collection[str]) -> dict[str, View | None]:
        """The views ``keys`` name (see ``thrift_data.read_views``)."""
        return read_views(self, keys)

    def _errors(self, doing: str) -> AbstractContextManager[None]:
        return java_errors(doing, self.endpoint)


def refresh(objects: Sequence[str], run: Callable[[str], None]) -> list[str]:
    """Refresh a session's cached metadata of each object (``REFRESH TABLE`` takes views too), each statement through
    ``run``; a line for each it could not refresh, which changes nothing in the metastore."""
    failed = []
    for key in objects:
        try:
            run(refresh_table(key))
        except Exception as error:  # noqa: BLE001 -- the cache of this session only: never the apply's outcome
            failed.append(f"could not refresh Spark's cache of {key}: {error}")
    return failed


def describe_endpoint(hadoop_conf: Any) -> str:
    """A name for the metastore that a Hadoop configuration points at, for messages."""
    uris: str | None = hadoop_conf.get("hive.metastore.uris")
    if uris:
        return uris
    url = hadoop_conf.get("javax.jdo.option.ConnectionURL") or "jdbc:derby:;databaseName=metastore_db"
    derby = re.match(r"jdbc:derby:.*databaseName=([^;]+)", url)
    if derby:
        return derby_endpoint(derby.group(1))
    return f"embedded metastore on {re.split(r'[?;]', url)[0]}"
