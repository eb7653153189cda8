"""A Delta statement committed only on top of the log version the plan read: Delta's own commit as the guard.

A Delta table's truth is its ``_delta_log``: version N+1 is a file that Delta's log store writes only if it is
absent, so of two writers that read version N exactly one lands N+1. What a plan reviewed is the table at the
version it read; apply runs each Delta DDL statement (``ALTER TABLE ... ADD COLUMNS``, ``RENAME COLUMN``,
``DROP COLUMN``, ``ALTER COLUMN ... TYPE``, ``SET TBLPROPERTIES``) through the user's SparkSession with delta-spark,
and the statement must land at exactly that version + 1.

How, read in delta-spark 3.3's source and measured with two writers (tests/test_delta_engine.py):

- A statement's transaction reads the *latest* snapshot when it starts (``AlterDeltaTableCommand.startTransaction``
  calls ``DeltaTableV2.startTransaction()`` with no snapshot, i.e. ``DeltaLog.update()``); nothing lets a caller pin
  it to an older version, and a commit that finds its version taken is by default checked for logical conflicts and
  made again on top of the winner (``OptimisticTransaction.doCommitRetryIteratively``): an ``ALTER`` lands on top of
  a concurrent ``INSERT``, never refused. So three things together:
  1. the log's version is read first (``DeltaTable.forPath(...).history(1)``): not ``expected_version``, and nothing
     is run (a commit between plan and apply: ``ConcurrentChange``);
  2. the statement runs with ``spark.databricks.delta.maxCommitAttempts=0`` for its duration (the session's
     previous value restored after): its transaction makes one attempt, so a commit that landed while it ran makes
     it fail rather than be made again on top (it then fails and nothing of it is in the log);
  3. the version it committed (``spark.databricks.delta.lastCommitVersionInSession``, which Delta sets after writing
     the commit file) must be ``expected_version + 1``: with 1, that holds exactly when no other commit landed
     between the read and the statement's commit.
  A statement that fails while the log moved on is a ``ConcurrentChange`` (Delta refused it, or the winner made it
  pointless: two appliers of one plan adding the same column), with the versions seen; one that fails on a log
  still at ``expected_version`` fails with its own error.
- Left open: a commit by another writer between the read in 1 and the statement's own read of the latest snapshot
  (Spark parsing and resolving the statement: with two appliers of different changes started at the same instant,
  2 rounds of 20 met it here, 18 had the second refused at its commit). The statement then lands on top of it; 3
  finds that, and the ``ConcurrentChange`` raised says
  the statement's commit *is* in the table (one commit: the change whole, never half), so that the apply stops and
  the next plan reads the table as it now is. Two appliers of one plan do not both land there (the second statement
  finds its change made and Delta refuses it); two schemaflow runs are kept apart before either reaches the log where
  apply claims the table's metastore entry first (its compare-and-swap), so the window is an outside writer's.
  Closing it would mean committing from a transaction started at ``expected_version``
  (``DeltaLog.startTransaction(table, Some(snapshotAt(version)))``) with the metadata the statement would make:
  re-implementing each ALTER command outside Delta through its internal classes, which differ between delta-spark
  3.x and 4.x. This module uses only ``DeltaTable``'s public API and two SQL settings that both have.

The session configuration is the session's, not the thread's: a caller running other Delta writes in the same
SparkSession from other threads while this runs sees their commits made with one attempt too.

A plan's Delta step is run by ``commit``: its statements in turn, each on the version the last one landed (the first
on the plan's), then the step's stamp as a commit of its own, whose ``${live_state}`` is the table as the statements
left it, read back from the log. It stops at the first failure, saying which statements landed (their versions) and
which did not.

Where the claim lives. delta-spark never writes the metastore's entry of a Delta table after creating it, so the
entry is schemaflow's to guard with the metastore's compare-and-swap: apply claims a Delta table there (its
``schemaflow.version``), as it claims every table, before anything reaches the log, which keeps two schemaflow runs
apart (the window above is then an outside writer's alone); the stamp goes into the log (its configuration, in the
step's last commit) for every reader of the log, and the entry's version then swaps the claim for the stamp's. So
the live version of a Delta table in a Hive metastore, which plans guard and find claims by, is its entry's
(``catalog.hive.thrift_data``): a run stopped between its commits left its claim there, which the next plan finds
("left half-done") and takes over, while the log tells what landed. A CREATE carries the claim into the log's first
commit (delta-spark's, through ``ddl.fill_claim``) and the entry gets it right after, by a plain write. A run stopped
between the two leaves the claim in the log alone, so where the entry holds no version the log's claim is the table's
(``thrift_data``), and the next run's claim of it checks the log (the entry has no key to compare and swap:
``Metastore._claimed_in_log``): before, such a table planned nothing and kept the stopped run's claim in its log.

Measured with real kills (tests/test_delta_apply_engine.py: SIGKILL at a progress report, ``commit`` reporting each
statement committed): killed after the first statement of three, the next plan held the other two on top of the
version left, and the log then held each statement once, the stamp last. Two appliers of two plans started at once
met at the entry's claim, the loser refused there with nothing in the log.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from schemaflow.catalog.delta_log import delta_table, read_delta_log
from schemaflow.catalog.hive.jvm import java_message, jvm_view
from schemaflow.catalog.stamping import fill_live_state
from schemaflow.errors import ConcurrentChange, SchemaflowError
from schemaflow.model import split_key
from schemaflow.output_safety import one_line
from schemaflow.sql import ddl

MAX_COMMIT_ATTEMPTS = "spark.databricks.delta.maxCommitAttempts"
LAST_COMMIT_VERSION = "spark.databricks.delta.lastCommitVersionInSession"
WHAT = "Delta log version"
EXTENSIONS, EXTENSION = "spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension"
SESSION_CATALOG, CATALOG = "spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"
# delta-spark's artifact for each Spark release it is built for (Maven Central), as docs/formats/delta.md lists them.
PACKAGES = ("io.delta:delta-spark_2.12:3.3.2 on Spark 3.5, io.delta:delta-spark_4.0_2.13:4.2.0 on Spark 4.0, "
            "io.delta:delta-spark_4.1_2.13:4.4.0 or _4.2_2.13:4.4.0 on Spark 4.1 and 4.2")


class DeltaStepFailed(SchemaflowError):
    """A statement of a Delta step failed: which landed (their log versions) and which did not."""

    def __init__(self, key: str, statements: Sequence[str], landed: Sequence[int], cause: Exception) -> None:
        self.landed = tuple(landed)
        said = str(cause) if isinstance(cause, SchemaflowError) else java_message(cause)
        done = [f"  {i}. {_shown(s)} (log version {v})"
                for i, (s, v) in enumerate(zip(statements[:len(landed)], landed, strict=True), 1)]
        left = [f"  {i}. {_shown(s)}" for i, s in enumerate(statements[len(landed):], len(landed) + 1)]
        super().__init__("\n".join([f"{one_line(key)}: Delta statement {len(landed) + 1} of {len(statements)} failed, "
                                    f"nothing of it applied: {said}",
                                    f"landed ({len(done)}):", *(done or ["  none"]),
                                    f"not applied ({len(left)}):", *left]))


def _shown(statement: str) -> str:
    """A statement on one line, for a message."""
    return one_line(" ".join(statement.split()))


def unavailable(spark: Any) -> str | None:
    """Why ``spark`` cannot run Delta statements (delta-spark's classes absent, its extension or catalog not set),
    saying what to configure; None where it can."""
    missing = []
    if type(jvm_view(spark).io.delta.tables.DeltaTable).__name__ != "JavaClass":  # py4j's view of a class not loaded
        missing.append(f"delta-spark's classes (spark.jars.packages: {PACKAGES})")
    extensions = [name.strip() for name in (spark.conf.get(EXTENSIONS, None) or "").split(",")]
    if EXTENSION not in extensions:
        missing.append(f"{EXTENSIONS}: {EXTENSION}")
    if spark.conf.get(SESSION_CATALOG, None) != CATALOG:
        missing.append(f"{SESSION_CATALOG}: {CATALOG}")
    if not missing:
        return None
    return ("its Spark session has no delta-spark; set in schemaflow.yaml's spark.conf (or the Spark the session "
            "comes from) " + "; ".join(missing))


def commit(spark: Any, key: str, location: str, log_version: int, table_id: str | None, statements: Sequence[str],
           stamp: Mapping[str, str], report: Callable[[str], None] | None = None) -> int:
    """Run ``statements`` on the Delta table ``key`` at ``location`` in turn, each on the version the last landed
    (the first on ``log_version``, of the table ``table_id``; None: not checked), then ``stamp`` (schemaflow's keys)
    as a commit of its own, its ``${live_state}`` the table as the statements left it; returns the last version
    landed, telling ``report`` of each commit. Raises ``DeltaStepFailed`` at the first failure."""
    landed: list[int] = []
    total = len(statements) + bool(stamp)

    def run(statement: str) -> None:
        landed.append(run_on_version(spark, location, landed[-1] if landed else log_version, statement))
        if report is not None:
            report(f"{one_line(key)}: Delta statement {len(landed)} of {total} committed as log version {landed[-1]}")
    try:
        found = read_delta_log(location, (location,)).state.table_id
        if table_id is not None and found != table_id:
            raise ConcurrentChange(one_line(key), table_id, found, "Delta table id (metaData.id)")
        for statement in statements:
            run(statement)
        if stamp:
            snapshot = read_delta_log(location, (location,))
            database, name = split_key(key)
            filled = fill_live_state(stamp, lambda: delta_table(
                database, name, replace(snapshot, properties={**snapshot.properties, **stamp})))
            run(ddl.set_table_properties(key, filled))
    except Exception as error:  # noqa: BLE001 -- any failure stops the step, saying what landed
        shown = (*statements, *((ddl.set_table_properties(key, stamp),) if stamp else ()))
        raise DeltaStepFailed(key, shown, landed, error) from error
    return landed[-1] if landed else log_version


def check_on(spark: Any, key: str, location: str, expected_version: int, table_id: str) -> None:
    """Raise ``ConcurrentChange`` unless the log of the Delta table ``key`` at ``location`` is the table ``table_id``
    at ``expected_version``: what a rewrite checks before it copies (the copy's rounds then see later commits)."""
    found_id = read_delta_log(location, (location,)).state.table_id
    if found_id != table_id:
        raise ConcurrentChange(one_line(key), table_id, found_id, "Delta table id (metaData.id)")
    found = log_version(spark, location)
    if found != expected_version:
        raise ConcurrentChange(one_line(key), str(expected_version), _said(found), WHAT)


def log_version(spark: Any, location: str) -> int | None:
    """The version of the latest commit in the log of the Delta table at ``location``; None where there is no
    Delta table there."""
    jvm = jvm_view(spark)
    session = spark._jsparkSession
    if not jvm.io.delta.tables.DeltaTable.isDeltaTable(session, location):
        return None
    history = jvm.io.delta.tables.DeltaTable.forPath(session, location).history(1)
    latest = history.head()
    return int(latest.getLong(latest.fieldIndex("version")))


def run_on_version(spark: Any, location: str, expected_version: int, statement: str) -> int:
    """Runs the Delta ``statement`` (which names the table at ``location``) so that it commits version
    ``expected_version + 1`` and nothing else; returns that version. Raises ``ConcurrentChange`` with the versions
    seen if the log is not at ``expected_version`` (nothing run), or another commit landed under the statement."""
    table = one_line(location)  # the location is the live table's: hostile on its way out
    found = log_version(spark, location)
    if found != expected_version:
        raise ConcurrentChange(table, str(expected_version), _said(found), WHAT)
    previous_attempts = spark.conf.get(MAX_COMMIT_ATTEMPTS, None)
    spark.conf.unset(LAST_COMMIT_VERSION)
    spark.conf.set(MAX_COMMIT_ATTEMPTS, "0")
    try:
        spark.sql(statement)
    except Exception as error:  # noqa: BLE001 -- Delta's refusal and Spark's are told apart by the log below
        moved = log_version(spark, location)
        if moved != expected_version:
            raise ConcurrentChange(table, str(expected_version),
                                   f"{_said(moved)} (this statement failed: {java_message(error)})", WHAT) from error
        raise
    finally:
        if previous_attempts is None:
            spark.conf.unset(MAX_COMMIT_ATTEMPTS)
        else:
            spark.conf.set(MAX_COMMIT_ATTEMPTS, previous_attempts)
    committed = spark.conf.get(LAST_COMMIT_VERSION, None)
    if committed is None:
        raise SchemaflowError(f"{table}: the Delta statement made no commit, where one was expected on version "
                              f"{expected_version}")
    landed = int(committed)
    if landed != expected_version + 1:
        raise ConcurrentChange(table, str(expected_version),
                               f"{landed - 1} (another writer committed after version {expected_version}; this "
                               f"statement's commit, version {landed}, is in the table)", WHAT)
    return landed


def _said(version: int | None) -> str:
    return "no Delta table" if version is None else str(version)
