"""The live state read from a ``thrift://`` metastore without a JVM: what ``plan`` needs, in seconds.

Starting Spark costs seconds before the first byte is read, and a plan with nothing to do needs
no Spark at all: only the metastore's tables. This reader asks the metastore server the Thrift calls
every server from Hive 2.3 to 4.x answers (``get_all_databases``, ``get_database``, ``get_all_tables``,
``get_table_objects_by_name_req`` in batches, ``get_config_value``, ``get_num_partitions_by_filter``,
``get_partition_names``, ``get_partitions``; Hive 4 removed the ``get_table`` and ``get_table_objects_by_name``
that Spark's built-in Hive 2.3 client makes, and kept their ``_req`` forms, which came with 2.3), over Thrift's
binary protocol (``catalog.hive.thrift_wire``), and hands the structs, named as Thrift's simple JSON names them, to
``catalog.hive.thrift_data``: the same data the JVM reader gets, turned into the model by the same code.

It only reads. A metastore that wants SASL (Kerberos), framing or TLS does not answer a plain call:
``connect`` raises ``NotPlainThrift`` and the caller reads through Spark's client instead. A
connection that breaks is made again and the read repeated, as the JVM reader does. So ``plan`` reads a
Hive 4 server; ``apply`` through Spark's built-in client would fail at the first table, after creating the
databases before it: ``check_server`` refuses it in one line (``UnsupportedMetastore``) before Spark starts,
unless the project or the site's ``spark-defaults.conf`` gives Spark Hive client jars of its own
(``spark.sql.hive.metastore.jars``).
"""
from __future__ import annotations

import time
from typing import Any, TypeVar
from collections.abc import Callable, Collection, Iterator, Sequence
from urllib.parse import urlparse

from schemaflow.catalog.backend import LiveEntry, PlanHints
from schemaflow.catalog.hive.thrift_data import (READ_ATTEMPTS, READ_BACKOFF_SECONDS, database_of, folders, parse_name,
                                            read_catalog, read_views, statistics, table_entries)
from schemaflow.catalog.hive.thrift_wire import I16, LIST, STRING, STRUCT, Argument, Connection, NotPlainThrift, Shape, ThriftError
from schemaflow.errors import SchemaflowError, Unreachable
from schemaflow.model import TYPE_RULE, Catalog, Database, PartitionValues, Stored, View, split_key

BATCH_SIZE = 100
T = TypeVar("T")
DEFAULT_PORT = 9083
# The names of the Thrift fields that the model is made from (hive_metastore.thrift); others are skipped.
FIELD_SCHEMA: Shape = {1: "name", 2: "type", 3: "comment"}
STORAGE: Shape = {
    1: ("cols", FIELD_SCHEMA), 2: "location", 3: "inputFormat", 4: "outputFormat", 5: "compressed", 6: "numBuckets",
    7: ("serdeInfo", {1: "name", 2: "serializationLib", 3: "parameters"}), 8: "bucketCols",
    9: ("sortCols", {1: "col", 2: "order"}), 10: "parameters", 12: "storedAsSubDirectories",
}
TABLE: Shape = {
    1: "tableName", 2: "dbName", 3: "owner", 4: "createTime", 5: "lastAccessTime", 6: "retention",
    7: ("sd", STORAGE), 8: ("partitionKeys", FIELD_SCHEMA), 9: "parameters", 10: "viewOriginalText",
    11: "viewExpandedText", 12: "tableType", 14: "temporary", 15: "rewriteEnabled",
}
# The answers of the calls that take a request struct (Hive 2.3 and later; Hive 4 keeps only these).
TABLES: Shape = {1: ("tables", TABLE)}
ONE_TABLE: Shape = {1: ("table", TABLE)}
PARTITION: Shape = {1: "values", 6: ("sd", {2: "location"}), 7: "parameters"}
DATABASE: Shape = {1: "name", 2: "description", 3: "locationUri", 4: "parameters", 6: "ownerName", 7: "ownerType"}


class UnsupportedMetastore(SchemaflowError):
    """The server answers in Thrift, but not the calls schemaflow and Spark's client make."""


# How long one answer may take, whole: a batch of 100 tables, or the partition names of a large table,
# come in seconds; a server that sends a byte now and then is not waited on past this.
ANSWER_SECONDS = 120.0
# How long the check before Spark starts waits on the server (``check_server``).
PROBE_SECONDS = 5.0


def addresses(uri: str) -> list[tuple[str, int]]:
    """The host and port of each ``thrift://host:port`` in a metastore setting (comma-separated)."""
    found = []
    for part in uri.split(","):
        parsed = urlparse(part.strip())
        if parsed.scheme != "thrift" or not parsed.hostname:
            raise ThriftError(f"{uri!r} is not a thrift://host:port metastore address")
        found.append((parsed.hostname, parsed.port or DEFAULT_PORT))
    return found


class ThriftReader:
    """A ``thrift://`` metastore, read over plain binary Thrift."""

    def __init__(self, uri: str, *, name: str | None = None, timeout: float = ANSWER_SECONDS,
                 connect_timeout: float = 20.0, attempts: int = READ_ATTEMPTS,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.endpoint = name or uri  # how plans and messages name it (a served embedded metastore: as embedded)
        self.addresses = addresses(uri)
        self.timeout, self.connect_timeout = timeout, connect_timeout
        self.attempts, self.sleep = attempts, sleep
        self._connection: Connection | None = None
        self._answered = False  # whether the server ever answered in Thrift

    @classmethod
    def connect(cls, uri: str, name: str | None = None) -> ThriftReader:
        """A reader of ``uri`` (``name``: how to name it) that has had an answer from it; ``NotPlainThrift`` if it
        speaks something else."""
        reader = cls(uri, name=name)
        reader.databases()
        return reader

    def check_client_calls(self) -> None:
        """Refuse a server that does not know ``get_table``, asked for a table that cannot exist: Hive 2.3 and
        3.1 answer that there is no such table; Hive 4.0 removed the call (it keeps ``get_table_req``), so
        Spark's built-in Hive 2.3 client, which reads every table with it, fails at the first table."""
        try:
            self._call("asking for a table no metastore holds", "get_table", [(1, STRING, ""), (2, STRING, "")], TABLE)
        except NotPlainThrift as error:
            raise UnsupportedMetastore(
                f"the metastore {self.endpoint} does not know get_table ({error}), the call Spark's built-in Hive "
                "client reads every table with: it is a Hive 4 server, which removed it; nothing was applied. Give "
                "Spark (4.0 or later) Hive 4's client in schemaflow.yaml: spark.conf spark.sql.hive.metastore.version: "
                "4.0.1, spark.sql.hive.metastore.jars: path and spark.sql.hive.metastore.jars.path: its jars (or the "
                "same in your Spark's spark-defaults.conf)") from None
        except SchemaflowError:
            return  # it knows the call: there is no such table

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def read(self, databases: tuple[str, ...]) -> Catalog:
        """Every table and view in ``databases``; databases that do not exist have none."""
        return read_catalog(self, databases)

    def databases(self) -> tuple[str, ...]:
        """The names of the existing databases, sorted."""
        return tuple(sorted(self._call("listing databases", "get_all_databases", ())))

    def database(self, name: str) -> Database:
        """A database's comment, location and properties, as the metastore holds them."""
        return database_of(name, self._call(f"reading database {name}", "get_database", [(1, STRING, name)], DATABASE))

    def entries(self, database: str) -> Iterator[LiveEntry]:
        """Every table and view of ``database``, with its parameters (``thrift_data.table_entries``)."""
        return table_entries(self, database)

    def table_data(self, database: str) -> Iterator[dict[str, Any]]:
        """The Thrift Table structs of ``database`` as data, fetched in batches."""
        yield from self.named_table_data(database, self._call(f"reading the tables of database {database}",
                                                              "get_all_tables", [(1, STRING, database)]))

    def named_table_data(self, database: str, names: Sequence[str]) -> Iterator[dict[str, Any]]:
        """The Thrift Table structs of ``database`` among ``names`` (those it holds), as data, fetched in batches."""
        for start in range(0, len(names), BATCH_SIZE):
            batch = list(names[start:start + BATCH_SIZE])
            yield from self._call(f"reading the tables of database {database}", "get_table_objects_by_name_req",
                                  [(1, STRUCT, [(1, STRING, database), (2, LIST, batch)])], TABLES)["tables"]

    def views(self, keys: Collection[str]) -> dict[str, View | None]:
        """The views ``keys`` name (see ``thrift_data.read_views``)."""
        return read_views(self, keys)

    def enforces_type_rule(self) -> bool:
        """Whether the metastore server refuses incompatible column type changes (its own setting)."""
        value = self._call("reading the metastore's type rule", "get_config_value",
                           [(1, STRING, TYPE_RULE), (2, STRING, "true")])
        return str(value).strip().lower() != "false"

    def count_partitions(self, key: str) -> int:
        """How many partitions the table ``key`` has, counted by the metastore (no listing)."""
        database, name = split_key(key)
        return int(self._call(f"counting the partitions of {key}", "get_num_partitions_by_filter",
                              [(1, STRING, database), (2, STRING, name), (3, STRING, "")]))

    def stored(self, key: str) -> Stored:
        """What the table ``key`` holds in files, as the metastore's statistics say (no listing without a JVM: the
        units that keep none are ``unknown``)."""
        return statistics(*self._with_partitions(key, f"reading the statistics of {key}"))[0]

    def data_folders(self, key: str) -> tuple[str, ...]:
        """The folders of the table ``key``'s files: its own, or each of its partitions'."""
        return folders(*self._with_partitions(key, f"listing the folders of {key}"))

    def _with_partitions(self, key: str, doing: str) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
        """The table ``key`` and its partitions (None: not partitioned), as Thrift data."""
        database, name = split_key(key)
        table = self._call(doing, "get_table_req", [(1, STRUCT, [(1, STRING, database), (2, STRING, name)])],
                           ONE_TABLE)["table"]
        partitions = self._call(doing, "get_partitions", [(1, STRING, database), (2, STRING, name), (3, I16, -1)],
                                PARTITION) if table.get("partitionKeys") else None
        return table, partitions

    def partition_values(self, key: str) -> tuple[PartitionValues, ...]:
        """The partitions of table or view ``key``, each as its values in partition-column order, sorted."""
        database, name = split_key(key)
        names = self._call(f"listing the partitions of {key}", "get_partition_names",
                           [(1, STRING, database), (2, STRING, name), (3, I16, -1)])
        return tuple(sorted(parse_name(n) for n in names))

    def _call(self, doing: str, method: str, arguments: Sequence[Argument], answer: Shape | None = None) -> Any:
        """One read, repeated on a new connection after a broken one (up to ``attempts`` times, waiting
        twice as long each time). A server that never answered in Thrift is ``NotPlainThrift``."""
        attempt = 0
        while True:
            try:
                answered = self._open().call(method, arguments, answer)
                self._answered = True
                return answered
            except NotPlainThrift:
                self.close()
                raise
            except ThriftError as error:
                raise SchemaflowError(f"{doing}: {error}") from None
            except OSError as error:
                connected = self._connection is not None
                self.close()
                if connected and not self._answered:
                    # It accepted the connection, then hung up on a plain call: SASL, framing or TLS.
                    raise NotPlainThrift(f"{self.endpoint} hung up on a plain Thrift call ({error})") from None
                attempt += 1
                if attempt >= self.attempts:
                    raise Unreachable(f"cannot reach the Hive metastore ({self.endpoint}): {error}") from None
            self.sleep(READ_BACKOFF_SECONDS * 2 ** (attempt - 1))

    def _open(self) -> Connection:
        """The connection, made to the first address that accepts one when there is none."""
        if self._connection is None:
            failure: OSError | None = None
            for address in self.addresses:
                try:
                    self._connection = Connection(address, self.connect_timeout, self.timeout)
                    break
                except OSError as error:
                    failure = error
            else:
                assert failure is not None
                raise failure
        return self._connection


def check_server(uri: str) -> None:
    """Before Spark starts: refuse a server Spark's built-in client cannot use (``check_client_calls``). One that
    does not speak plain Thrift (SASL, TLS) is left to Spark's client, which may; one that does not answer, or
    fails otherwise, to ``session.check_driver_settings`` and Spark's client, which say why."""
    reader = ThriftReader(uri, timeout=PROBE_SECONDS, connect_timeout=PROBE_SECONDS, attempts=1)
    try:
        reader.databases()
        reader.check_client_calls()
    except UnsupportedMetastore:
        raise
    except (NotPlainThrift, SchemaflowError):
        pass
    finally:
        reader.close()


def hints(uri: str, timeout: float = 5.0) -> PlanHints:
    """Reads of a ``thrift://`` metastore that help a plan made between git refs and that it does without: each
    answers None when the metastore does not (down, SASL, no such table), after one try of at most ``timeout``."""
    reader = ThriftReader(uri, timeout=timeout, connect_timeout=timeout, attempts=1)
    return PlanHints(uri, lenient(reader.count_partitions), lenient(reader.stored), lenient(reader.data_folders))


def lenient(read: Callable[[str], T]) -> Callable[[str], T | None]:
    """``read``, answering None where the metastore does not answer or refuses: for what a plan shows and does
    without."""
    def answer(key: str) -> T | None:
        try:
            return read(key)
        except (SchemaflowError, ThriftError):
            return None
    return answer
