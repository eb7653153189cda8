"""What a catalog backend offers the rest of schemaflow: a reader of the live state and a writer of it.

A ``Backend`` serves one project's catalog: made by the factory registered under the name its settings give
(``catalog.backends``), it gives the reader and the writer, and answers the optional questions only some
backends can (a partition's stale column list, a view's SQL as the engine sees it) with None where it cannot,
rather than start something to find out.

Planning needs a ``CatalogReader``: the live catalog of some databases as the model, the partition
counts and values and the sizes a plan shows, and whether the backend refuses positional type changes. Applying
needs a ``CatalogWriter``: the actions of a plan as changes to the model (tables and views created, altered and
dropped, parameters written under the catalog's compare-and-swap, column lists, view partitions), never SQL text,
each raising ``ConcurrentChange`` when the guard refuses. The Hive metastore is one backend:
``catalog.hive.metastore.Metastore`` is both, through a SparkSession's Thrift client (rendering the changes to Spark SQL
and metastore calls), and ``catalog.hive.thrift_reader.ThriftReader`` reads a metastore server without a JVM;
``catalog.hive.backend`` serves them, and ``catalog.live.Live`` picks the backend the settings name. Another
backend (Glue, Unity) implements these protocols and registers its name: nothing in ``plan/`` or ``apply/`` changes.

``HiveClient`` is the narrow view of the Hive implementation that its helpers for column cascades
(``catalog.hive.columns``) and view partitions (``catalog.hive.view_partitions``) work through, so they need
not import the class that uses them.
"""
from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

from schemaflow.background import Background
from schemaflow.model import (VERSION_KEY, Catalog, Column, Database, IcebergState, PartitionValues, Stored, Table,
                              View, ViewSql)
from schemaflow.sql.rewrite import Filled

T = TypeVar("T")


@dataclass(frozen=True)
class LiveEntry:
    """One table or view as the catalog holds it: the model object (as ``CatalogReader.read`` gives it), and every
    parameter the catalog keeps for it, raw (``schemaflow.*`` included; an Iceberg table's: its metadata's properties)."""

    object: Table | View
    parameters: Mapping[str, str]


class LiveSource(Protocol):
    """A metastore as a reader sees it: databases and the tables in them, as Thrift data."""

    def databases(self) -> tuple[str, ...]: ...

    def database(self, name: str) -> Database: ...

    def table_data(self, database: str) -> Iterable[dict[str, Any]]: ...


class NamedTables(Protocol):
    """A metastore whose tables are read by name, as Thrift data."""

    def databases(self) -> tuple[str, ...]: ...

    def named_table_data(self, database: str, names: Sequence[str]) -> Iterable[dict[str, Any]]:
        """The tables and views of ``database`` among ``names`` (those it holds), as Thrift data."""


class CatalogReader(Protocol):
    """What reads the live state a plan is made against.

    Drift and history read ``entries``: the model objects with the parameters the catalog keeps raw beside them, so a
    backend hands back the model, never its wire shapes (the Hive metastore's Thrift data stays inside its readers).
    """

    endpoint: str  # what the plan records as the metastore it was made against

    def databases(self) -> tuple[str, ...]: ...

    def database(self, name: str) -> Database: ...

    def entries(self, database: str) -> Iterable[LiveEntry]:
        """Every table and view of ``database``, as ``read`` gives it, with its raw parameters."""

    def read(self, databases: tuple[str, ...]) -> Catalog:
        """Every table and view in ``databases``; databases that do not exist have none."""

    def views(self, keys: Collection[str]) -> dict[str, View | None]:
        """The views ``keys`` (``db.name``) name, outside the databases a plan reads, as the catalog holds them: None
        for a key that names no view (a table, or nothing); a key left out could not be read."""

    def count_partitions(self, key: str) -> int: ...

    def partition_values(self, key: str) -> tuple[PartitionValues, ...]: ...

    def stored(self, key: str) -> Stored:
        """What the table ``key`` holds in files (``model.Stored``)."""

    def data_folders(self, key: str) -> tuple[str, ...]:
        """The folders of the table ``key``'s files: its own, or each of its partitions'."""

    def enforces_type_rule(self) -> bool:
        """Whether the metastore refuses a column type change that its positional rule forbids."""


class CatalogWriter(Protocol):
    """Where a plan's actions run, each a change to the model, which the writer makes in its catalog's own terms.

    ``expected`` guards a write: it lands only if the object's ``schemaflow.version`` still holds that value (a run's
    claim token), else ``ConcurrentChange`` (``schemaflow.errors``) is raised with nothing changed; None writes
    unguarded (adopting an object). ``claim`` is the token an object a run creates is born with, in
    ``schemaflow.version``, so that its later writes can be guarded from its first moment.

    One call is one atomic change, or ``ConcurrentChange`` with nothing changed; a write whose outcome is unknown (the
    catalog stopped answering) is never repeated blindly: what the catalog holds now tells whether it landed.
    """

    endpoint: str  # the catalog it writes, as a plan records what it was made against
    progress: Callable[[str], None] | None  # told what a long action is doing (None: nobody listens)

    def add_database(self, database: Database) -> None:
        """Create ``database`` as declared (by default where the metastore puts databases), unless it exists."""

    def set_database_properties(self, name: str, properties: Mapping[str, str]) -> None: ...

    def update_database_properties(self, name: str, keys: Collection[str],
                                   update: Callable[[Mapping[str, str]], Mapping[str, str]]) -> None:
        """Set the properties ``update`` makes of the current values of ``keys``, read just before."""

    def set_parameters(self, key: str, set: Mapping[str, str], unset: Sequence[str],
                       expected: str | None = None) -> None:
        """Set and unset parameters of the table or view ``key`` in one write. A ``schemaflow.`` parameter whose
        value is ``model.LIVE_STATE`` (``${live_state}``) is written as ``model.state_digest`` of the object exactly as
        this write leaves it, as the catalog's reader will read it back (else drift reports every object after a clean
        apply; ``catalog.stamping.fill_live_state`` does it); a user's parameter holding that text is stored as written."""

    def create_table(self, table: Table, claim: str) -> None:
        """Create ``table`` (not Iceberg: those come through ``commit_iceberg``) stamped ``schemaflow.version`` =
        ``claim``; ``ConcurrentChange`` if its name is taken."""

    def add_columns(self, key: str, columns: Sequence[Column], expected: str | None) -> None:
        """Append ``columns`` to the data columns of the table ``key``."""

    def set_table_comment(self, key: str, comment: str | None, expected: str | None) -> None:
        """Make ``comment`` the comment of the table ``key`` (None: remove it)."""

    def set_column_comments(self, key: str, columns: Sequence[Column], expected: str | None) -> None:
        """Set the comment of each of ``columns`` (by name) as given."""

    def drop_table(self, key: str, expected: str | None) -> None:
        """Drop the table ``key`` (its files as its kind keeps them: an external table's stay)."""

    def create_view(self, view: View, replace: bool, claim: str) -> None:
        """Create (or with ``replace``, replace the view stamped ``claim``) ``view``, stamped ``claim``."""

    def check_guards(self, key: str) -> None:
        """Raise unless guarded writes of ``key`` are refused when the version differs."""

    def partition_view(self, key: str, columns: Sequence[str], expected: str | None = None) -> None: ...

    def set_columns(self, key: str, columns: Sequence[Column], partition_columns: Sequence[Column],
                    cascade: bool, batched: bool, parameters: Mapping[str, str] = {},
                    expected: str | None = None) -> None: ...

    def change_view_partitions(self, key: str, columns: Sequence[str], add: Sequence[PartitionValues],
                               drop: Sequence[PartitionValues], kept: Any = None) -> None:
        """Drop, then add, partitions of a view; those added that ``kept`` (what ``keep_view_partitions``
        read) holds keep their parameters and creation time."""

    def keep_view_partitions(self, key: str) -> Any:
        """The partitions of the view ``key`` as they are (opaque to the executor), for ``change_view_partitions``
        to re-add them as they were."""

    def set_storage(self, key: str, serde_properties: Mapping[str, str], buckets: int | None,
                    expected: str | None = None) -> None: ...

    def drop_view(self, key: str, expected: str | None = None, engine: bool = False) -> None:
        """Drop the view ``key``; ``engine``: through the engine (Hive: Spark's DROP VIEW), else as a catalog entry,
        without the engine analysing its SQL. A table of the name is never dropped so."""

    def check_views(self, views: Mapping[str, ViewSql | None]) -> None:
        """Raise unless each of ``views`` holds that SQL now (None: it could not be read when planned)."""

    def commit_iceberg(self, table: Table, sources: Mapping[str, str], requires: IcebergState | None, create: bool,
                       set: Mapping[str, str], unset: Sequence[str], expected: str | None = None,
                       backup: str | None = None, keep: bool = True) -> None:
        """Create the Iceberg table ``table`` (``create``), or commit it as ``table`` says, each column named in
        ``sources`` keeping that live column's field id, with the properties ``set`` and ``unset`` in the same
        commit: only while the table is as ``requires`` says and its stamp is ``expected``, else
        ``ConcurrentChange``. See ``catalog.hive.iceberg_commit``. A create with a ``backup`` converts the Parquet
        table of the same name (stamped ``expected``) and keeps it as ``backup`` (``catalog.hive.iceberg_convert``), or,
        not to ``keep``, moves its entry there, then drops it (its files are the Iceberg table's)."""

    def rewrite_table(self, key: str, table: Table, create: str, columns: Sequence[Filled], staging: str, backup: str,
                      expected: str | None, version: str | None, claim: str, registrable: bool = False,
                      records: Mapping[str, str] = {}) -> None:
        """Make ``key`` (stamped ``expected``) anew as ``table``: ``create`` the table ``staging`` (stamped ``claim``),
        fill each of its ``columns`` from the live column it names, verify it against the rows moved, rename ``key``
        to ``backup`` (with ``version``, the stamp it had when planned) and ``staging`` to ``key``, setting ``records``
        (the migrations' records) in that rename; with ``key`` renamed already (a stopped run's), only the last rename.
        ``registrable``: write files Iceberg can register (timestamps in microseconds). See ``catalog.hive.rewrite``."""

    def restore_table(self, key: str, backup: str, temporary: str, backup_version: str | None, expected: str | None,
                      version: str | None, claim: str) -> None:
        """Swap the table ``backup`` (stamped ``backup_version``) in as ``key`` (stamped ``expected``; it had
        ``version`` when planned, and keeps it as the new ``backup``), through ``temporary``; it takes ``claim``.
        Resumes the swap a stopped run left. See ``catalog.hive.rewrite``."""

    def after_apply(self, changed: Sequence[str]) -> list[str]:
        """What to do once a plan is applied (Hive: refresh Spark's cache of ``changed``); a warning per failure."""

    def beside(self) -> AbstractContextManager[CatalogWriter | None]:
        """A second writer on the same metastore, on which a write may run while this one runs the next
        statement; None: everything runs here, in turn."""


@runtime_checkable
class Registering(Protocol):
    """A ``CatalogWriter`` that adopts an Iceberg table another catalog holds, by its metadata file: what a project
    moving from one catalog to another plans (``plan.moving``). A duty only some writers take on, which their backend
    declares (``Capabilities.registers``); the planner blocks a register step into a catalog that does not, and the
    executor refuses a writer that is not one, so a backend written before it needs no change."""

    def register_table(self, key: str, metadata_location: str) -> None:
        """Make ``key`` an Iceberg table whose current metadata is the file ``metadata_location``, writing and copying
        no file: ``ConcurrentChange`` if the name is taken (by a table or a view), with nothing changed. A request
        whose outcome is not known (the catalog stopped answering) is read back, never repeated blindly: it landed if
        ``key`` names that metadata file now."""


@runtime_checkable
class DeltaWriting(Protocol):
    """A ``CatalogWriter`` that commits Delta tables' changes through an engine with delta-spark: each statement of a
    plan's Delta step one commit to the table's log, landing only on top of the log version the plan read. A duty only
    some writers take on (the Hive metastore's, through the user's Spark): the executor refuses a plan with a Delta
    step, before its first step, on a writer that is not one or whose engine cannot (``delta_unavailable``).

    The table's claim is kept where the catalog's compare-and-swap guards it (its entry), before anything reaches the
    log; its stamp goes into the log, in the last commit, and the entry's version then swaps the claim for it."""

    def delta_unavailable(self) -> str | None:
        """Why this writer's engine cannot run Delta statements, saying what to configure; None where it can."""

    def create_delta(self, key: str, create: str, stamp: Mapping[str, str], claim: str) -> None:
        """Run ``create`` (a ``CREATE TABLE ... USING delta`` holding ``sql.ddl.CLAIM``, filled with ``claim``): the
        table is born claimed; then ``stamp`` (schemaflow's keys, ``${live_state}`` among them filled) as one commit on
        top of the first, and the entry's version swaps the claim for the stamp's. ``ConcurrentChange`` if ``key`` is
        taken."""

    def alter_delta(self, key: str, log_version: int, table_id: str, statements: Sequence[str],
                    stamp: Mapping[str, str], expected: str | None) -> int:
        """Run ``statements`` on the Delta table ``key`` (the table ``table_id``, its log at ``log_version``), statement
        ``i`` landing as commit ``log_version + i + 1`` and no other; then ``stamp`` (where there is one) as the last
        commit, and the entry's version, held by ``expected`` (the run's claim), swapped for the stamp's. Returns the
        version of its last commit. A commit by another writer since is ``ConcurrentChange`` with nothing of that
        statement applied; any failure says which statements landed (their versions) and which did not."""

    def rewrite_delta(self, key: str, table: Table, create: str, columns: Sequence[Filled], staging: str,
                      backup: str, expected: str | None, version: str | None, claim: str, log_version: int | None,
                      table_id: str | None, records: Mapping[str, str]) -> None:
        """``rewrite_table`` of the Delta table ``key``: ``create`` (``CREATE TABLE ... USING delta``) through
        delta-spark, the copy starting only while the log is the table ``table_id`` at ``log_version`` (None: only
        the cut-over is left), else ``ConcurrentChange`` with nothing done; after the renames, what the engine keeps
        of the logs by their folders is dropped (both folders now hold other tables' logs)."""


@dataclass(frozen=True)
class StoredFunction:
    """A permanent function as the metastore holds it: the class Spark loads for it, and the resources it fetches
    first (``("jar", uri)``, ``("file", uri)``, ``("archive", uri)``), as registered."""

    class_name: str
    resources: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class PlanHints:
    """Reads that help a plan made without the live catalog (between git refs), each answering None where the
    catalog does not: a table's partition count, what it holds in files, and its folders; ``source`` says where
    they come from."""

    source: str
    count_partitions: Callable[[str], int | None]
    stored: Callable[[str], Stored | None]
    data_folders: Callable[[str], tuple[str, ...] | None]


class Backend(Protocol):
    """One project's live catalog, as a backend serves it."""

    def where(self) -> str:
        """The catalog in words ("the embedded metastore in ...", a URI), for progress lines and errors."""

    @property
    def reader(self) -> CatalogReader:
        """What reads the live state a plan is made against (connected on first use)."""

    def read_ahead(self, databases: tuple[str, ...]) -> None:
        """Start reading ``databases`` in the background, where the backend can; ``read`` of them takes it."""

    def read(self, databases: tuple[str, ...]) -> Catalog:
        """``reader``'s read of ``databases``, saying what it does where that takes a while."""

    def writer(self) -> CatalogWriter | None:
        """Where apply runs (connected on first use); None: the backend only reads."""

    def stale_partitions(self, key: str, exact: bool = False) -> int | None:
        """How many partitions of the table ``key`` have a stale column list (with ``exact``, any that lacks a
        column, appended ones too); None: the backend cannot tell."""

    def view_problems(self, desired: Catalog, views: Iterable[str]) -> dict[str, str] | None:
        """Why the engine refuses the SQL of each of ``views`` as ``desired`` declares it; None: not checked.
        The engine reads nothing live for them: a view that reads what ``desired`` lacks is not checked."""

    def functions(self, names: Iterable[str]) -> dict[str, StoredFunction | None] | None:
        """The permanent functions ``names`` (``db.name``) as the catalog holds them, read without loading them (None
        for one it does not hold); None: the backend cannot tell."""

    def hints(self) -> PlanHints | None:
        """Reads for a plan made between git refs, which start nothing heavy; None: the backend has none."""


class ReadAhead:
    """A backend's read of some databases started early, in a thread (``background.Background``), so that a catalog
    reached over the network answers while the command parses the project's files: a plan reads both, and neither
    needs the other. ``take`` hands it to the read of the same databases, its errors surfacing there as they would
    have; a read of others waits for it first, so that a connection serves one read at a time."""

    def __init__(self) -> None:
        self._started: tuple[tuple[str, ...], Background[Catalog]] | None = None

    def start(self, databases: tuple[str, ...], read: Callable[[tuple[str, ...]], Catalog]) -> None:
        if databases and self._started is None:
            self._started = (databases, Background(lambda: read(databases), "catalog-read"))

    def take(self, databases: tuple[str, ...], read: Callable[[tuple[str, ...]], Catalog]) -> Catalog:
        started, self._started = self._started, None
        if started is not None and started[0] == databases:
            return started[1].result()
        if started is not None:
            started[1].wait()
        return read(databases)


class WithoutEngine:
    """What a backend with no engine behind it answers to ``Backend``'s optional questions: it reads nothing ahead, and
    cannot tell a partition's stale column list, a view's problems, a function or a hint (None each, starting
    nothing). A backend inherits it and overrides what it can answer."""

    def read_ahead(self, databases: tuple[str, ...]) -> None:
        return None

    def stale_partitions(self, key: str, exact: bool = False) -> int | None:
        return None

    def view_problems(self, desired: Catalog, views: Iterable[str]) -> dict[str, str] | None:
        return None

    def functions(self, names: Iterable[str]) -> dict[str, StoredFunction | None] | None:
        return None

    def hints(self) -> PlanHints | None:
        return None


class HiveClient(Protocol):
    """A Hive metastore reached through a JVM: the Thrift client and its API classes, and the guarded
    ``alter`` every write of a table goes through."""

    spark: Any  # the SparkSession whose JVM holds the client
    msc: Any    # Hive's IMetaStoreClient
    api: Any    # the package org.apache.hadoop.hive.metastore.api
    takes_locks: bool | None  # whether the metastore keeps table locks (None: not asked yet; see catalog.hive.table_lock)
    held_locks: set[str]      # the tables whose lock this client holds now
    lock_guards: bool         # whether guarded writes hold the table lock (metastore.guard: lock)

    def retrying(self, read: Callable[[], T]) -> T: ...

    def alter(self, table: Any, expected: str | None = None, guarded_by: str = VERSION_KEY, renames: str | None = None,
              keeps_guard: bool = False, **context: str) -> None: ...

    def context(self, **properties: str) -> Any: ...

    def report(self, message: str) -> None: ...

    def to_data(self, struct: Any) -> dict[str, Any]: ...

    def from_json(self, struct: Any, data: Mapping[str, Any]) -> None: ...
